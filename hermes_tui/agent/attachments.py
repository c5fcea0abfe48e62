"""Images the user attaches to a message: checked, fitted to the provider, kept, and sent.

Every surface attaches through ``attach`` here: ``hermes-tui -p --image`` directly (before a session
is opened, so a refused file leaves nothing behind), the TUI's ``/image`` and pasted paths and the
web's upload through ``AgentLoop.attach_image``:

* the file is taken by its content, never its name: Pillow must read it as PNG, JPEG, GIF or
  WebP, it may be at most ``MAX_FILE_BYTES`` and ``MAX_PIXELS``; anything else is refused with one
  line before anything is sent;
* it is fitted to the provider's limits (``Provider.image_side`` pixels on the longer side,
  ``Provider.image_bytes``): scaled down with Pillow when it is larger, else kept byte for byte;
* the bytes go to ``memory.attachments`` (content-addressed, private) and the message keeps an
  ``ImageRef`` (path as given, sha256, MIME type, size).

Right before each request ``inline`` turns the references into OpenAI ``image_url`` content
parts with a data URL (LiteLLM converts them to Anthropic's base64 image blocks), fitting them
again if the model changed to a provider with smaller limits since (``/model``).
"""

from __future__ import annotations

import base64
import io
import warnings
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlparse

from hermes_tui.conversation import ImageRef
from hermes_tui.memory import attachments as kept
from hermes_tui.providers import Provider

MAX_FILE_BYTES = 5 * 1024 * 1024
"""The largest file (or upload) that may be attached."""
MAX_PIXELS = 50_000_000
"""The largest image (width × height) decoded: a small file can hold a huge, mostly empty image."""
FORMATS: Mapping[str, str] = {"PNG": "image/png", "JPEG": "image/jpeg", "GIF": "image/gif", "WEBP": "image/webp"}
"""Pillow's name of each format taken, and its MIME type."""
IMAGE_TOKENS = 1_600
"""What an image is counted as in the context window: a fixed estimate (Anthropic bills about
(width × height) / 750, ~1,600 for a 1.15-megapixel image; OpenAI's high detail is of that order),
since the tokenizers count text only."""
QUALITY = 85  # JPEG and WebP quality of a scaled-down image
SHRINK = 0.75  # each further step when a scaled image is still over the byte limit


class AttachmentError(ValueError):
    """Why a file cannot be attached, in one line."""


@dataclass(frozen=True)
class Fitted:
    """An image as it is kept and sent."""

    data: bytes
    mime: str
    width: int
    height: int


def attach(home: Path, given: str, provider: Provider, *, data: bytes | None = None,
           base: Path | None = None) -> ImageRef:
    """Check, fit and keep the image at ``given`` (a path, relative to ``base`` or the current
    folder), or ``data`` (an upload, named ``given``); ``AttachmentError`` says why not."""
    if data is None:
        data = _read(given, base)
    elif len(data) > MAX_FILE_BYTES:
        raise AttachmentError(f"{given} is {_mb(len(data))}: an image may be at most {_mb(MAX_FILE_BYTES)}.")
    fitted = fit(data, given, provider)
    try:  # a full disk, a read-only or damaged HERMES_HOME: one line, as for a file that is no image
        sha256 = kept.keep(home, fitted.data)
    except OSError as exc:
        raise AttachmentError(f"{given} could not be kept in {kept.folder(home)} "
                              f"({exc.strerror or exc}).") from None
    return ImageRef(given, sha256, fitted.mime, fitted.width, fitted.height)


def _read(given: str, base: Path | None) -> bytes:
    path = resolve(given, base)
    try:
        size = path.stat().st_size
        if not path.is_file():
            raise AttachmentError(f"{given} is not a file.")
        if size > MAX_FILE_BYTES:
            raise AttachmentError(f"{given} is {_mb(size)}: an image may be at most {_mb(MAX_FILE_BYTES)}.")
        with path.open("rb") as handle:
            return handle.read(MAX_FILE_BYTES + 1)
    except FileNotFoundError:
        raise AttachmentError(f"{given}: no such file.") from None
    except OSError as exc:
        raise AttachmentError(f"{given} cannot be read ({exc.strerror or exc}).") from None


def resolve(given: str, base: Path | None = None) -> Path:
    """The file a typed path names: ``~`` expanded, a ``file://`` URL decoded, relative to ``base``."""
    text = given.strip()
    if text.startswith("file://"):
        text = unquote(urlparse(text).path)
    path = Path(text).expanduser()
    return path if path.is_absolute() else (base or Path.cwd()) / path


def fit(data: bytes, given: str, provider: Provider) -> Fitted:
    """``data`` as sent to ``provider``: as it is when within its limits, else scaled down."""
    from PIL import Image, UnidentifiedImageError

    # Pillow warns (on stderr) about images over 89 million pixels and refuses them over 179 million;
    # Hermes refuses them over MAX_PIXELS itself, in one line, so the warning says nothing more.
    warnings.filterwarnings("ignore", category=Image.DecompressionBombWarning)
    try:
        with Image.open(io.BytesIO(data)) as image:
            kind, (width, height) = image.format, image.size
            image.verify()  # a truncated or damaged file is refused here, not by the provider
    except (UnidentifiedImageError, Image.DecompressionBombError, OSError, SyntaxError, ValueError) as exc:
        if isinstance(exc, Image.DecompressionBombError):
            raise AttachmentError(f"{given} has too many pixels to open: an image may have at most "
                                  f"{MAX_PIXELS // 1_000_000} million.") from None
        raise AttachmentError(f"{given} is not an image Hermes can send (PNG, JPEG, GIF or WebP).") from None
    if kind is None or kind not in FORMATS:
        raise AttachmentError(f"{given} is a {kind} image: only PNG, JPEG, GIF and WebP can be sent.")
    if width * height > MAX_PIXELS:
        raise AttachmentError(f"{given} is {width}×{height} pixels: an image may have at most "
                              f"{MAX_PIXELS // 1_000_000} million.")
    if max(width, height) <= provider.image_side and len(data) <= provider.image_bytes:
        return Fitted(data, FORMATS[kind], width, height)
    return _scaled(data, kind, provider)


def _scaled(data: bytes, kind: str, provider: Provider) -> Fitted:
    """Scaled down until it fits both limits (a GIF's first frame, as PNG)."""
    from PIL import Image

    with Image.open(io.BytesIO(data)) as source:
        source.seek(0)
        frame = source.convert("RGBA" if source.mode in ("RGBA", "LA", "P", "PA") else "RGB")
    out_kind = "PNG" if kind == "GIF" else kind
    if out_kind == "JPEG":
        frame = frame.convert("RGB")
    scale = min(1.0, provider.image_side / max(frame.size))
    while True:
        size = (max(1, round(frame.width * scale)), max(1, round(frame.height * scale)))
        image = frame.resize(size, Image.Resampling.LANCZOS) if size != frame.size else frame
        buffer = io.BytesIO()
        options: dict[str, Any] = {"quality": QUALITY} if out_kind in ("JPEG", "WEBP") else {"optimize": True}
        image.save(buffer, out_kind, **options)
        if buffer.tell() <= provider.image_bytes or max(size) <= 64:
            return Fitted(buffer.getvalue(), FORMATS[out_kind], *size)
        scale *= SHRINK


def pasted_path(text: str, base: Path | None = None) -> str | None:
    """The path in a pasted text that is exactly one existing image file (a dropped file: maybe
    quoted, maybe a ``file://`` URL, maybe with escaped spaces), as the user would type it; else None."""
    candidate = text.strip()
    if not candidate or "\n" in candidate or len(candidate) > 4096:
        return None
    if len(candidate) > 1 and candidate[0] == candidate[-1] and candidate[0] in "'\"":
        candidate = candidate[1:-1]
    elif "\\ " in candidate:  # a terminal's drop escapes spaces
        candidate = candidate.replace("\\ ", " ")
    try:
        path = resolve(candidate, base)
        if not path.is_file() or path.stat().st_size > MAX_FILE_BYTES:
            return None
        with path.open("rb") as handle:
            head = handle.read(16)
    except (OSError, ValueError):
        return None
    return candidate if _looks_like_image(head) else None


def _looks_like_image(head: bytes) -> bool:
    """The magic numbers of the four formats (a cheap first look; ``fit`` decides)."""
    return (head.startswith(b"\x89PNG\r\n\x1a\n") or head.startswith(b"\xff\xd8\xff")
            or head[:6] in (b"GIF87a", b"GIF89a") or (head[:4] == b"RIFF" and head[8:12] == b"WEBP"))


def inline(messages: list[dict[str, Any]], home: Path, provider: Provider) -> list[dict[str, Any]]:
    """``messages`` with their image references (``_images``) as content parts: the text first,
    then each image as a data URL; an image whose bytes are gone is named in a text part instead."""
    out: list[dict[str, Any]] = []
    for message in messages:
        refs = message.get("_images")
        if not refs:
            out.append(message)
            continue
        text = message.get("content")
        parts: list[dict[str, Any]] = [{"type": "text", "text": text}] if isinstance(text, str) and text else []
        for ref in refs:
            parts.append(_part(ref, home, provider))
        sent = {k: v for k, v in message.items() if k != "_images"}
        sent["content"] = parts
        out.append(sent)
    return out


def _part(ref: ImageRef, home: Path, provider: Provider) -> dict[str, Any]:
    data = kept.read(home, ref.sha256)
    if data is None:
        return {"type": "text", "text": f"[the image {ref.path} was attached here; its file is no longer kept]"}
    mime = ref.mime
    if max(ref.width, ref.height) > provider.image_side or len(data) > provider.image_bytes:
        fitted = _scaled(data, _kind_of(mime), provider)
        data, mime = fitted.data, fitted.mime
    return {"type": "image_url", "image_url": {"url": f"data:{mime};base64,{base64.b64encode(data).decode()}"}}


def _kind_of(mime: str) -> str:
    return next((kind for kind, known in FORMATS.items() if known == mime), "PNG")


def _mb(size: int) -> str:
    return f"{size / (1024 * 1024):.1f} MB"
