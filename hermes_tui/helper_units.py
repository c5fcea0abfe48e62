"""Service definitions that start the warm helper at login (``hermes-tui helper unit KIND``), so
even the first ``-p`` run of the day finds it warm. Each runs ``hermes-tui helper start``, which
starts the helper (detached) once it is not running; the helper ends after HERMES_HELPER_IDLE
seconds without a request, so the units set a day."""

from __future__ import annotations

import shutil
import sys
from collections.abc import Callable
from pathlib import Path
from xml.sax.saxutils import escape

IDLE = "86400"  # a helper started at login stays for a day without requests
LABEL = "dev.hermes.helper"


def program() -> str:
    """This installation's ``hermes-tui``: the entry point next to the interpreter, else on PATH."""
    beside = Path(sys.executable).with_name("hermes-tui")
    if beside.exists():
        return str(beside)
    return shutil.which("hermes-tui") or str(beside)


def systemd(exe: str) -> str:
    """A systemd user unit: ~/.config/systemd/user/hermes-helper.service."""
    return f"""# ~/.config/systemd/user/hermes-helper.service
# systemctl --user daemon-reload && systemctl --user enable --now hermes-helper
[Unit]
Description=Hermes warm helper (keeps the model layer loaded for hermes-tui -p)

[Service]
Type=forking
ExecStart="{exe}" helper start
ExecStop="{exe}" helper stop
Environment=HERMES_HELPER_IDLE={IDLE}

[Install]
WantedBy=default.target
"""


def launchd(exe: str) -> str:
    """A launchd agent: ~/Library/LaunchAgents/dev.hermes.helper.plist."""
    return f"""<?xml version="1.0" encoding="UTF-8"?>
<!-- ~/Library/LaunchAgents/{LABEL}.plist; launchctl load ~/Library/LaunchAgents/{LABEL}.plist -->
<!DOCTYPE plist PUBLIC "-//Apple//DTD PLIST 1.0//EN" "http://www.apple.com/DTDs/PropertyList-1.0.dtd">
<plist version="1.0">
<dict>
  <key>Label</key><string>{LABEL}</string>
  <key>ProgramArguments</key>
  <array><string>{escape(exe)}</string><string>helper</string><string>start</string></array>
  <key>RunAtLoad</key><true/>
  <key>AbandonProcessGroup</key><true/>
  <key>EnvironmentVariables</key>
  <dict><key>HERMES_HELPER_IDLE</key><string>{IDLE}</string></dict>
</dict>
</plist>
"""


UNITS: dict[str, Callable[[str], str]] = {"systemd": systemd, "launchd": launchd}
