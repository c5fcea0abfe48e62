"""Secret values: which variables hold them, and how tool output and the shell are kept free of them.

``Secrets.scrub`` is the backstop behind the file tools' refusals: whatever a tool prints (``cat .env``,
``printenv``, ``base64 .env``) has every configured secret replaced by ``[redacted: NAME]`` before it
reaches the model, memory, logs or a screen. It catches the literal value, its hex form and its base64
form at any byte alignment, also when wrapped over several lines (``base64``, ``xxd -p``); it cannot
catch every transformation (reversed, split, encrypted), so the shell's environment is stripped too.
"""

from __future__ import annotations

import base64
import binascii
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from hermes_tui.config import Config

SECRET_VARIABLE = re.compile(r".*_API_KEY|.*_SECRET_KEY|.*_SECRET_ACCESS_KEY|HERMES_WEB_PASSWORD")
"""Variables whose value is a secret wherever they come from (environment or a .env file)."""

MIN_LENGTH = 6  # shorter values would redact ordinary words
_MIN_ENCODED = 12  # an encoded fragment shorter than this would match ordinary text
_ENCODED_RUN = re.compile(r"[A-Za-z0-9+/=_\-]+(?:\r?\n[A-Za-z0-9+/=_\-]+)*")


def is_secret_variable(name: str) -> bool:
    return SECRET_VARIABLE.fullmatch(name) is not None


def _encoded_forms(value: str) -> list[str]:
    """Fragments present in any hex or base64 text that encodes ``value`` (at any byte alignment)."""
    raw = value.encode("utf-8")
    forms = [binascii.hexlify(raw).decode(), binascii.hexlify(raw).decode().upper()]
    for skip in range(3):  # the value may start at any offset of a 3-byte base64 group
        body = raw[skip:]
        body = body[: len(body) // 3 * 3]
        forms += [base64.b64encode(body).decode(), base64.urlsafe_b64encode(body).decode()]
    return [f for f in dict.fromkeys(forms) if len(f) >= _MIN_ENCODED]


@dataclass(frozen=True)
class Secrets:
    """The configured secret values by variable name."""

    values: Mapping[str, str] = field(default_factory=dict, repr=False)

    def __post_init__(self) -> None:
        kept = {k: v for k, v in self.values.items() if len(v) >= MIN_LENGTH}
        by_length = dict(sorted(kept.items(), key=lambda item: -len(item[1])))
        object.__setattr__(self, "values", by_length)
        object.__setattr__(self, "_encoded", [(n, f) for n, v in by_length.items() for f in _encoded_forms(v)])

    @classmethod
    def from_config(cls, config: Config, environ: Mapping[str, str] | None = None) -> Secrets:
        """Every secret the configuration knows plus every secret-named variable of the environment."""
        environ = os.environ if environ is None else environ
        found = {k: v for k, v in environ.items() if is_secret_variable(k) and v.strip()}
        found.update(config.secrets)
        return cls(found)

    def scrub(self, text: str) -> str:
        """``text`` with every secret (literal, hex or base64) replaced by ``[redacted: NAME]``."""
        if not self.values:
            return text
        for name, value in self.values.items():
            if value in text:
                text = text.replace(value, f"[redacted: {name}]")
        encoded: list[tuple[str, str]] = self._encoded  # type: ignore[attr-defined]
        if not encoded:
            return text

        def redact_run(match: re.Match[str]) -> str:
            run = match.group(0)
            if len(run) < _MIN_ENCODED:
                return run
            joined = run.replace("\r", "").replace("\n", "")
            for name, form in encoded:
                if form in joined:
                    return f"[redacted: {name}]"
            return run

        return _ENCODED_RUN.sub(redact_run, text)

    def clean_environment(self, environ: Mapping[str, str]) -> dict[str, str]:
        """A copy of ``environ`` without secret variables or any variable whose value is a secret."""
        values = set(self.values.values())
        return {k: v for k, v in environ.items() if not is_secret_variable(k) and v not in values}
