"""File logging for every surface: never to the terminal, never with secrets in it."""

from __future__ import annotations

import logging
from pathlib import Path

from platformdirs import user_log_dir

from hermes_tui.config import Config
from hermes_tui.private import private_file
from hermes_tui.redaction import Secrets


class _Scrubbing(logging.Formatter):
    """Formats a record, traceback included, with every configured secret replaced (``Secrets.scrub``)."""

    def __init__(self, fmt: str, secrets: Secrets) -> None:
        super().__init__(fmt)
        self.secrets = secrets

    def format(self, record: logging.LogRecord) -> str:
        return self.secrets.scrub(super().format(record))


def log_folder() -> Path:
    """Where the log file lives (the file tools refuse it: logs may quote tool output)."""
    return Path(user_log_dir("hermes", appauthor=False))


def setup_logging(config: Config, *, level: int = logging.INFO) -> Path:
    """Log hermes_tui and litellm warnings to ``<user log dir>/hermes.log``; return its path."""
    path = private_file(log_folder() / "hermes.log")  # logs may quote tool output: owner only
    handler = logging.FileHandler(path, encoding="utf-8")
    handler.setFormatter(_Scrubbing("%(asctime)s %(levelname)s %(name)s: %(message)s", Secrets.from_config(config)))
    root = logging.getLogger()
    for old in [h for h in root.handlers if getattr(h, "_hermes", False)]:
        root.removeHandler(old)
        old.close()
    handler._hermes = True  # type: ignore[attr-defined]  # a marker to find Hermes' own handler again
    root.addHandler(handler)
    logging.getLogger("hermes_tui").setLevel(level)
    return path
