"""The helpers' wire: typed records as JSON, each message signed with the connection's key.

Both model helpers (``llm_host``'s per-process one, ``warm``'s per-user one) used pickle, which
runs code while it reads: anyone who could connect and knew the key (a sandboxed command that read
the 0600 key file) could make the helper execute anything. Here a message is data only:

* a record is ``{"type": <tag>, "record": {<field>: <value>}}``; the tag is looked up in the
  reader's table (``Records``: tag -> dataclass), so only declared record types are ever built;
  fields are checked against the dataclass's type hints (``str``, ``int``, ``Path``, lists, maps,
  nested dataclasses such as ``Config``...), and anything else is a ``WireError``;
* each message is ``HMAC-SHA256(key, payload) + payload`` and a reader checks the tag with
  ``hmac.compare_digest`` before it parses a byte, so a message from anyone without the key is
  refused. (Connections also pass ``multiprocessing.connection``'s challenge with the same key,
  which reads no pickle.)
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import hmac
import json
import types
import typing
from collections.abc import Mapping
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

from hermes_tui.llm_errors import LLMError

MAX_MESSAGE = 1 << 28  # bytes: a request with images is large, but not this large
DIGEST = hashlib.sha256().digest_size

Records = Mapping[str, type]
"""A reader's table: the tag of each record type it accepts."""


class WireError(ValueError):
    """A message that is not a record of the table, or not signed with the key."""


@dataclasses.dataclass(frozen=True)
class Failure:
    """An ``LLMError`` on the wire (an exception is no dataclass)."""

    message: str
    retryable: bool = False
    status: int | None = None
    too_long: bool = False
    max_tokens: int | None = None
    empty: bool = False

    @classmethod
    def of(cls, error: LLMError) -> Failure:
        return cls(error.message, error.retryable, error.status, error.too_long, error.max_tokens, error.empty)

    def error(self) -> LLMError:
        return LLMError(self.message, retryable=self.retryable, status=self.status, too_long=self.too_long,
                        max_tokens=self.max_tokens, empty=self.empty)


@dataclasses.dataclass(frozen=True)
class Cancel:
    """The caller stops the request it sent on this connection."""


def tag_of(records: Records, record: object) -> str:
    for tag, kind in records.items():
        if type(record) is kind:
            return tag
    raise WireError(f"{type(record).__name__} is not a record of this wire")


def dumps(records: Records, record: object) -> bytes:
    """The JSON payload of ``record`` (an ``LLMError`` goes as a ``Failure``)."""
    if isinstance(record, LLMError):
        record = Failure.of(record)
    return json.dumps({"type": tag_of(records, record), "record": _plain(record)},
                      separators=(",", ":")).encode()


def loads(records: Records, payload: bytes) -> Any:
    """The record of a payload, built only from ``records``' types; ``WireError`` for anything else."""
    try:
        data = json.loads(payload)
    except (ValueError, UnicodeDecodeError) as exc:
        raise WireError(f"not JSON: {exc}") from None
    if not isinstance(data, dict) or set(data) != {"type", "record"} or not isinstance(data["type"], str):
        raise WireError("not a record")
    kind = records.get(data["type"])
    if kind is None:
        raise WireError(f"{data['type']!r} is not a record of this wire")
    record = _typed(kind, data["record"])
    return record.error() if isinstance(record, Failure) else record


def sign(key: bytes, payload: bytes) -> bytes:
    return hmac.new(key, payload, hashlib.sha256).digest() + payload


def verified(key: bytes, message: bytes) -> bytes:
    """The payload of a signed message; ``WireError`` when the signature is not the key's."""
    mac, payload = message[:DIGEST], message[DIGEST:]
    if len(mac) != DIGEST or not hmac.compare_digest(mac, hmac.new(key, payload, hashlib.sha256).digest()):
        raise WireError("a message not signed with the key")
    return payload


class Channel:
    """A connection that carries signed records of one table (``send``/``recv`` never pickle)."""

    def __init__(self, connection: Connection, key: bytes, records: Records) -> None:
        self.connection = connection
        self.key = key
        self.records = records

    def send(self, record: object) -> None:
        self.connection.send_bytes(sign(self.key, dumps(self.records, record)))

    def recv(self) -> Any:
        """The next record; ``WireError`` for a bad one, ``EOFError``/``OSError`` when the line is gone."""
        return loads(self.records, verified(self.key, self.connection.recv_bytes(MAX_MESSAGE)))

    def poll(self, timeout: float) -> bool:
        return self.connection.poll(timeout)

    def fileno(self) -> int:
        return self.connection.fileno()

    def close(self) -> None:
        self.connection.close()


# -- records <-> JSON values, by the dataclasses' type hints ------------------------------------


def _plain(value: Any) -> Any:
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {field.name: _plain(getattr(value, field.name)) for field in dataclasses.fields(value) if field.init}
    if isinstance(value, Path):
        return str(value)
    if isinstance(value, Mapping):
        return {str(key): _plain(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(item) for item in value]
    return value


@functools.cache
def _hints(kind: type) -> dict[str, Any]:
    return typing.get_type_hints(kind)


def _typed(hint: Any, value: Any) -> Any:
    """``value`` (parsed JSON) as ``hint`` says, or ``WireError``."""
    if hint is Any:
        return value
    origin = typing.get_origin(hint)
    if origin in (typing.Union, types.UnionType):
        options = typing.get_args(hint)
        if value is None and type(None) in options:
            return None
        for option in options:
            if option is not type(None):
                try:
                    return _typed(option, value)
                except WireError:
                    continue
        raise WireError(f"{value!r:.60} is none of {hint}")
    if dataclasses.is_dataclass(hint) and isinstance(hint, type):
        return _record(hint, value)
    if hint is Path:
        return Path(_typed(str, value))
    if hint in (str, bool) or (hint is int and not isinstance(value, bool)):
        if type(value) is not hint:
            raise WireError(f"{value!r:.60} is not {hint.__name__}")
        return value
    if hint is float:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise WireError(f"{value!r:.60} is not a number")
        return float(value)
    args = typing.get_args(hint)
    if origin in (dict, Mapping, typing.get_origin(Mapping[str, str])):
        if not isinstance(value, dict):
            raise WireError(f"{value!r:.60} is not an object")
        return {_typed(args[0], key): _typed(args[1], item) for key, item in value.items()}
    if origin is list:
        if not isinstance(value, list):
            raise WireError(f"{value!r:.60} is not a list")
        return [_typed(args[0], item) for item in value]
    if origin is tuple:
        if not isinstance(value, list):
            raise WireError(f"{value!r:.60} is not a list")
        if len(args) == 2 and args[1] is Ellipsis:
            return tuple(_typed(args[0], item) for item in value)
        if len(args) != len(value):
            raise WireError(f"{value!r:.60} has not {len(args)} items")
        return tuple(_typed(arg, item) for arg, item in zip(args, value, strict=True))
    raise WireError(f"the wire cannot carry {hint}")


def _record(kind: type, value: Any) -> Any:
    if not isinstance(value, dict):
        raise WireError(f"a {kind.__name__} is not an object")
    hints = _hints(kind)
    names = {field.name for field in dataclasses.fields(kind) if field.init}
    if not set(value) <= names:
        raise WireError(f"a {kind.__name__} has no field {sorted(set(value) - names)[0]!r}")
    try:
        return kind(**{name: _typed(hints[name], item) for name, item in value.items()})
    except TypeError as exc:  # a field missing
        raise WireError(f"not a {kind.__name__}: {exc}") from None
