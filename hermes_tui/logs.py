"""File logging for every surface: never to the terminal, never with secrets in it."""

from __future__ import annotations

import logging
from pathlib import Path

from platformdirs import user_log_dir

from hermes_tui.config import Config
from hermes_tui.private import private_file


class _Redact(logging.Filter):
    """Replaces any configured secret value that would otherwise reach the log file."""

    def __init__(self, secrets: list[str]) -> None:
        super().__init__()
        self.secrets = [s for s in secrets if len(s) >= 6]

    def filter(self, record: logging.LogRecord) -> bool:
        if self.secrets:
            message = record.getMessage()
            for secret in self.secrets:
                message = message.replace(secret, "[redacted]")
            record.msg, record.args = message, None
        return True


def log_folder() -> Path:
    """Where the log file lives (the file tools refuse it: logs may quote tool output)."""
    return Path(user_log_dir("hermes", appauthor=False))


def setup_logging(config: Config, *, level: int = logging.INFO) -> Path:
    """Log hermes_tui and litellm warnings to ``<user log dir>/hermes.log``; return its path."""
    path = private_file(log_folder() / "hermes.log")  # logs may quote tool output: owner only
    handler = logging.FileHandler(path, encoding="utf-8")
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    secrets = [*config.api_keys.values(), config.flask_secret_key or "", config.web_password or ""]
    handler.addFilter(_Redact(secrets))
    root = logging.getLogger()
    for old in [h for h in root.handlers if getattr(h, "_hermes", False)]:
        root.removeHandler(old)
        old.close()
    handler._hermes = True  # type: ignore[attr-defined]
    root.addHandler(handler)
    logging.getLogger("hermes_tui").setLevel(level)
    return path
