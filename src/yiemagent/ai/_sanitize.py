"""Request bodies a provider takes (DESIGN §8: bad input loses nothing).

Python strings may hold lone UTF-16 surrogates (`"\\udcff"`): file names and process output
decoded with `surrogateescape`, text cut in the middle of a pair. UTF-8 cannot encode them, so
one such character anywhere in the history would make every later request fail before it is
sent. `sanitize_surrogates` replaces each lone surrogate with U+FFFD and joins a valid pair
into its character; everything else is returned as the same object (no copy).

An image labelled with a type its bytes are not (a JPEG screenshot said to be a PNG) is
refused by the Anthropic API ("The image was specified using the image/png media type, but
the image appears to be a image/jpeg image"), and, once in the history, every later request
of the session with it: `image_base64` gives an image the type its first bytes show.
"""

from __future__ import annotations

import base64
import binascii
from typing import Any

__all__ = ["image_base64", "sanitize_surrogates", "sniff_mime_type"]


def _clean(text: str) -> str:
    if text.isascii():
        return text
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")
    return text


def sanitize_surrogates(value: Any) -> Any:
    """`value` (JSON-like: dicts, lists, strings, scalars) with lone surrogates replaced.

    Returns the input object itself when nothing had to change; only containers on the path
    to a changed string are rebuilt.
    """
    if isinstance(value, str):
        return _clean(value)
    if isinstance(value, dict):
        out: dict[Any, Any] | None = None
        for key, item in value.items():
            new = sanitize_surrogates(item)
            new_key = _clean(key) if isinstance(key, str) else key
            if new is not item or new_key is not key:
                if out is None:
                    out = dict(value)
                if new_key is not key:
                    del out[key]
                out[new_key] = new
        return value if out is None else out
    if isinstance(value, list | tuple):
        items: list[Any] | None = None
        for index, item in enumerate(value):
            new = sanitize_surrogates(item)
            if new is not item:
                if items is None:
                    items = list(value)
                items[index] = new
        return value if items is None else items
    return value


def sniff_mime_type(head: bytes) -> str | None:
    """The MIME type the first bytes of a file show: "image/png", "image/jpeg",
    "image/gif", "image/webp", "application/pdf", or None for anything else."""
    if head.startswith(b"\x89PNG\r\n\x1a\n"):
        return "image/png"
    if head.startswith(b"\xff\xd8\xff"):
        return "image/jpeg"
    if head.startswith((b"GIF87a", b"GIF89a")):
        return "image/gif"
    if head[:4] == b"RIFF" and head[8:12] == b"WEBP":
        return "image/webp"
    if head.startswith(b"%PDF-"):
        return "application/pdf"
    return None


def image_base64(data: str, mime_type: str) -> tuple[str, str]:
    """`(base64 data, mime type)` of an image given as base64 or as a whole data URL
    (`data:image/png;base64,...`, as web UIs hand them over), whose own type wins over
    `mime_type`; an image type its first bytes show wins over both (a label is often wrong,
    the bytes are what the API checks). Data that is not base64 keeps its label."""
    if data.startswith("data:"):
        head, sep, rest = data.partition(",")
        if sep and head.endswith(";base64"):
            data, mime_type = rest, head[5 : -len(";base64")] or mime_type
    if mime_type.startswith("image/"):
        try:
            sniffed = sniff_mime_type(base64.b64decode(data[:24], validate=True))
        except (binascii.Error, ValueError):
            sniffed = None
        if sniffed is not None and sniffed.startswith("image/"):
            mime_type = sniffed
    return data, mime_type
