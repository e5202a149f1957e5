"""Images and PDFs attached to a prompt (DESIGN §21): `Agent.prompt(..., attachments=[...])`
and `yiem run --attach FILE`.

`load_attachment` turns a path or the bytes of a file into a content block: an
`ImageContent` (PNG, JPEG, GIF, WebP) or a `DocumentContent` (PDF). The type comes from the
file's first bytes, never from its name: a PDF named `photo.png` is a PDF, a text file named
`scan.pdf` is refused. The five signatures are the formats every supported API reads, so
they are checked here rather than through a MIME library.

Limits, checked before the file is read whole and before anything is sent: an image at most
`MAX_IMAGE_BYTES` (20 MB, OpenAI's limit per image), a PDF at most `MAX_PDF_BYTES` (32 MB,
Anthropic's limit per request). A bad attachment raises `AttachmentError`, whose text is one
line naming the file and what is wrong.

`image_from_base64` and `document_from_base64` check an image or a PDF handed over as text
(an HTTP body of `yiem serve`, an OpenAI `image_url` data URL) before it is stored: base64
that does not decode is refused, and an image whose bytes show another of the four image
types than it was labelled with takes the type its bytes show. `image_or_note` is the same
check for an image a tool returned: one that does not decode becomes a text naming it (the
loop applies it to every tool result, whatever the tool's source).

An API may also refuse an image by its size in pixels (Anthropic's: more than 8000 px a
side, or 2000 px in a request holding more than 20 images; `IMAGE_SIDE_LIMITS`): the width
and height come from the image's header (`image_size`, through `imagesize`, which the
`anthropic` extra installs), and a provider sends an image over its limit as a text naming
it (`oversized_sides_stand_in`), as it does one over its limit in bytes. So does a PDF of
more pages than an API takes in a request (Anthropic's 100, `PDF_PAGE_LIMITS`; counted by
`pdf_pages` through `pypdf`, which the `anthropic` extra installs): `oversized_pdf_stand_in`.

`attachment_warning(model, blocks)` is the one-line warning for a model that cannot read
what is attached (the embedded model reads neither): providers give such a model a short
text stand-in for each block instead.
"""

from __future__ import annotations

import base64
import binascii
import io
import os
import warnings
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TypeAlias

from yiemagent.ai._sanitize import image_base64, sniff_mime_type
from yiemagent.errors import YiemAgentError
from yiemagent.types.messages import DocumentContent, ImageContent, TextContent
from yiemagent.types.model import Model

__all__ = [
    "API_IMAGE_TYPES",
    "IMAGE_BASE64_LIMITS",
    "IMAGE_SIDE_LIMITS",
    "MAX_IMAGE_BYTES",
    "MAX_PDF_BYTES",
    "PDF_PAGE_LIMITS",
    "AttachmentError",
    "AttachmentSource",
    "AttachmentWarning",
    "SideLimit",
    "attachment_stand_in",
    "attachment_warning",
    "document_from_base64",
    "image_from_base64",
    "image_or_note",
    "image_size",
    "image_type_stand_in",
    "load_attachment",
    "load_attachments",
    "oversized_image_stand_in",
    "oversized_pdf_stand_in",
    "oversized_sides_stand_in",
    "pdf_pages",
    "sniff_mime_type",
    "warn_unreadable",
]

MAX_IMAGE_BYTES = 20 * 1024 * 1024
"""Largest image accepted (bytes)."""
MAX_PDF_BYTES = 32 * 1024 * 1024
"""Largest PDF accepted (bytes)."""
API_IMAGE_TYPES = frozenset({"image/png", "image/jpeg", "image/gif", "image/webp"})
"""The image types Anthropic's Messages API and OpenAI's APIs read; they refuse a request
holding any other (an SVG, a BMP), and a stored one would fail every later request."""
IMAGE_BASE64_LIMITS: dict[str, int] = {"anthropic-messages": 5 * 1024 * 1024}
"""The most base64 characters an API (`Model.api`) takes in one image, where that is less
than `MAX_IMAGE_BYTES` ("image exceeds 5 MB maximum"): its provider sends a larger image
as a text naming it."""


@dataclass(frozen=True, slots=True)
class SideLimit:
    """The longest side (pixels) an API takes in an image: `side`, and `many_side` in a
    request holding more than `many` images."""

    side: int
    many: int
    many_side: int

    def for_request(self, images: int) -> int:
        """The longest side allowed in a request holding `images` images."""
        return self.many_side if images > self.many else self.side


IMAGE_SIDE_LIMITS: dict[str, SideLimit] = {"anthropic-messages": SideLimit(8000, 20, 2000)}
"""Pixel limits per API (`Model.api`), where it refuses larger images ("At least one of
the image dimensions exceed max allowed size: 8000 pixels", "... for many-image requests:
2000 pixels"): its provider sends a larger image as a text naming it."""

PDF_PAGE_LIMITS: dict[str, int] = {"anthropic-messages": 100}
"""The most PDF pages an API (`Model.api`) takes in a request ("A maximum of 100 PDF pages
may be provided"): its provider sends a PDF past them as a text naming it."""

_SIZE_HEADS = (4096, 1024 * 1024)
"""Characters of base64 decoded to find an image's size, the second only when the first
did not tell: a PNG, GIF or WebP header is in its first bytes, a JPEG's frame header may
follow kilobytes of metadata (EXIF, a colour profile)."""

AttachmentSource: TypeAlias = str | os.PathLike[str] | bytes | bytearray | memoryview
"""A file path, or the file's bytes."""

_HEAD = 16
"""Bytes read to tell the type."""


class AttachmentError(YiemAgentError, ValueError):
    """An attachment cannot be used: missing or unreadable file, too large, or neither an
    image nor a PDF. Raised before anything is sent; the text is one line."""


class AttachmentWarning(UserWarning):
    """The model cannot read an attachment it was given (it gets a text stand-in)."""


def _limit(mime_type: str) -> int:
    return MAX_PDF_BYTES if mime_type == "application/pdf" else MAX_IMAGE_BYTES


def _mb(size: int) -> str:
    return f"{size / 1024 / 1024:.1f} MB"


def load_attachment(
    source: AttachmentSource, *, name: str | None = None
) -> ImageContent | DocumentContent:
    """Read one attachment.

    Args:
        source: A path (str or `os.PathLike`) or the file's bytes.
        name: What to call it in messages (default: the path; "attachment" for bytes).

    Returns:
        `ImageContent` for an image, `DocumentContent` (with the file name) for a PDF.

    Raises:
        AttachmentError: the file is missing, unreadable or a folder; it is larger than its
            limit (`MAX_IMAGE_BYTES`, `MAX_PDF_BYTES`; checked before reading it whole); or
            its content is neither a PNG, JPEG, GIF or WebP image nor a PDF.
    """
    if isinstance(source, bytes | bytearray | memoryview):
        data = bytes(source)
        label = name or "attachment"
        mime_type = _checked_type(label, data[:_HEAD], len(data))
    else:
        path = Path(source)
        label = name or str(path)
        try:
            with path.open("rb") as file:
                size = os.fstat(file.fileno()).st_size  # 0 for a pipe: read, bounded
                head = file.read(_HEAD)
                mime_type = _checked_type(label, head, size)
                data = head + file.read(_limit(mime_type) + 1 - len(head))  # no seek: pipes
        except FileNotFoundError:
            raise AttachmentError(f"{label}: no such file") from None
        except IsADirectoryError:
            raise AttachmentError(f"{label}: is a folder, not a file") from None
        except OSError as exc:
            raise AttachmentError(f"{label}: cannot be read ({exc.strerror or exc})") from None
        if len(data) > _limit(mime_type):  # it grew while being read
            raise AttachmentError(f"{label}: larger than {_mb(_limit(mime_type))}")
    encoded = base64.b64encode(data).decode("ascii")
    if mime_type == "application/pdf":
        return DocumentContent(encoded, mime_type, name=Path(label).name)
    return ImageContent(encoded, mime_type)


def _checked_type(label: str, head: bytes, size: int) -> str:
    mime_type = sniff_mime_type(head)
    if mime_type is None:
        what = (
            "the file is empty"
            if not head  # a size of 0 is also a pipe's or a device's
            else "neither an image (PNG, JPEG, GIF, WebP) nor a PDF"
        )
        raise AttachmentError(f"{label}: {what}; only images and PDFs can be attached")
    limit = _limit(mime_type)
    if size > limit:
        article = "a PDF" if mime_type == "application/pdf" else "an image"
        raise AttachmentError(
            f"{label}: {_mb(size)}, larger than the {_mb(limit)} {article} may be"
        )
    return mime_type


def image_from_base64(data: str, mime_type: str = "image/png") -> ImageContent:
    """An image handed over as text, checked before anything stores or sends it.

    Args:
        data: The image as base64, or as a whole data URL (`data:image/png;base64,...`, as
            web UIs hand them over), whose own type then wins over `mime_type`.
        mime_type: The image's type when `data` does not say it.

    Returns:
        The `ImageContent`, its `data` the base64 alone.

    Raises:
        AttachmentError: `data` is empty or not valid base64 (a stored image that does not
            decode would fail every later request of its session).
    """
    encoded, mime_type = _base64_payload(data, mime_type, "image")
    return ImageContent(data=encoded, mime_type=mime_type)


def image_or_note(data: str, mime_type: str) -> ImageContent | TextContent:
    """An image a tool returned, or a one-line text naming it when its data is not base64.

    Args:
        data: The image as base64 (or a data URL, as `image_from_base64` takes it).
        mime_type: The image's type.

    Returns:
        The checked `ImageContent` (its `data` the base64 alone), or a `TextContent` saying
        the image was left out and why: a stored image that does not decode would make every
        later request of the session fail.
    """
    try:
        return image_from_base64(data, mime_type)
    except AttachmentError as exc:
        return TextContent(f"[image {mime_type} left out: {exc}]")


def document_from_base64(data: str, name: str | None = None) -> DocumentContent:
    """A PDF handed over as text (base64, or a `data:application/pdf;base64,...` URL),
    checked as `image_from_base64` checks an image.

    Raises:
        AttachmentError: `data` is empty or not valid base64.
    """
    encoded, mime_type = _base64_payload(data, "application/pdf", "PDF")
    return DocumentContent(encoded, mime_type, name)


def _base64_payload(data: str, mime_type: str, what: str) -> tuple[str, str]:
    # The base64 of `data` (a data URL's own type winning) once it decodes.
    encoded, mime_type = image_base64(data, mime_type)
    if not encoded:
        article = "an" if what[0] in "aeiou" else "a"
        raise AttachmentError(f"{article} {what} needs its data (base64), not an empty text")
    try:
        head = base64.b64decode(encoded[:24], validate=True)  # 18 bytes: enough to sniff
        base64.b64decode(encoded, validate=True)
    except (binascii.Error, ValueError) as exc:
        raise AttachmentError(f"{what} data is invalid base64: {exc}") from None
    sniffed = sniff_mime_type(head)
    if what == "image" and sniffed is not None and sniffed.startswith("image/"):
        # The bytes win over a wrong label: a provider refuses an image/jpeg that is a PNG,
        # and a stored one would fail every later call of the session.
        mime_type = sniffed
    return encoded, mime_type


def load_attachments(
    sources: Iterable[AttachmentSource | ImageContent | DocumentContent],
) -> list[ImageContent | DocumentContent]:
    """Each of `sources` read with `load_attachment` (blocks are kept as they are).

    Raises:
        AttachmentError: as `load_attachment`, for the first bad one (none is half-read).
    """
    out: list[ImageContent | DocumentContent] = []
    for source in sources:
        if isinstance(source, ImageContent | DocumentContent):
            out.append(source)
        elif isinstance(source, str | os.PathLike | bytes | bytearray | memoryview):
            out.append(load_attachment(source))
        else:
            raise AttachmentError(
                f"an attachment is a file path or the file's bytes, not {type(source).__name__}"
            )
    return out


def _kind(block: ImageContent | DocumentContent) -> str:
    return "image" if isinstance(block, ImageContent) else "pdf"


def oversized_image_stand_in(data: str, limit: int, api: str) -> str | None:
    """The text a model gets in place of an image too large for its API to take, or None
    when the image fits: sent, such an image would fail that request and, kept in the
    session, every later one (a tool's screenshot wedging the conversation).

    Args:
        data: The image as base64.
        limit: The most characters of base64 the API takes in one image.
        api: Names the API in the text.
    """
    if len(data) <= limit:
        return None
    return f"[image omitted: {_mb(len(data))} of base64, more than the {_mb(limit)} {api} takes]"


def image_size(data: str) -> tuple[int, int] | None:
    """The (width, height) in pixels of the image `data` (base64) holds, from its header;
    None when the header does not tell (a damaged image) or `imagesize` is not installed
    (then no pixel limit can be checked, and the image goes as it is)."""
    try:
        import imagesize
    except ImportError:
        return None
    for length in _SIZE_HEADS:  # multiples of 4: whole base64 quanta
        try:
            width, height = imagesize.get(io.BytesIO(base64.b64decode(data[:length])))
        except (binascii.Error, ValueError, OSError):
            return None
        if width > 0 and height > 0:
            return width, height
        if len(data) <= length:
            break
    return None


def oversized_sides_stand_in(size: tuple[int, int] | None, longest: int, api: str) -> str | None:
    """The text a model gets in place of an image of `size` (`image_size`) wider or taller
    than `longest` pixels, what its API takes; None when it fits or its size is not known.
    Sent, it would fail that request and, kept in the session, every later one (a
    full-page screenshot a tool took)."""
    if size is None or max(size) <= longest:
        return None
    width, height = size
    return f"[image omitted: {width}x{height} px, larger than the {longest} px a side {api} takes]"


def pdf_pages(data: str) -> int | None:
    """How many pages the PDF `data` (base64) has, read from its page tree with `pypdf`
    (which the `anthropic` extra installs); None when it cannot tell (a damaged PDF, or no
    `pypdf`: the PDF then goes as it is). Remembered by the text's hash and length, not the
    text (a session sends the same PDF each turn; a PDF it no longer holds is not kept)."""
    key = (hash(data), len(data))  # a str caches its hash: the same PDF costs nothing
    if key in _PAGES:
        return _PAGES[key]
    try:
        import pypdf
    except ImportError:
        return None
    try:
        pages: int | None = len(pypdf.PdfReader(io.BytesIO(base64.b64decode(data))).pages)
    except Exception:  # pypdf raises many kinds for a damaged file
        pages = None
    if len(_PAGES) >= _PAGES_KEPT:
        _PAGES.clear()
    _PAGES[key] = pages
    return pages


_PAGES: dict[tuple[int, int], int | None] = {}
"""`pdf_pages`' answers by (hash, length) of the base64 text; emptied when full."""
_PAGES_KEPT = 64


def oversized_pdf_stand_in(block: DocumentContent, room: int, limit: int, api: str) -> str | None:
    """The text a model gets in place of a PDF of more pages than `room`, what is left of
    the `limit` pages its API takes in a request once the request's other PDFs are counted;
    None when it fits or its pages cannot be counted (`pdf_pages`). Sent, it would fail that
    request and, kept in the session, every later one."""
    pages = pdf_pages(block.data)
    if pages is None or pages <= room:
        return None
    named = f" {block.name}" if block.name else ""
    if pages > limit:
        return f"[PDF{named} omitted: {pages} pages, more than the {limit} {api} takes]"
    return (
        f"[PDF{named} omitted: {pages} pages, which with the request's other PDFs are more "
        f"than the {limit} {api} takes]"
    )


def image_type_stand_in(mime_type: str, api: str) -> str | None:
    """The text a model gets in place of an image of a type its API does not read
    (`API_IMAGE_TYPES`), or None when it reads it. `api` names the API in the text."""
    if mime_type in API_IMAGE_TYPES:
        return None
    return f"[image omitted: {api} reads PNG, JPEG, GIF and WebP images, not {mime_type}]"


def attachment_stand_in(block: ImageContent | DocumentContent) -> str:
    """The short text a model that cannot read `block` gets in its place."""
    if isinstance(block, ImageContent):
        return "[image omitted: this model cannot see images]"
    named = f" {block.name}" if block.name else ""
    return f"[PDF{named} omitted: this model cannot read PDFs]"


def warn_unreadable(model: Model | None, blocks: Sequence[ImageContent | DocumentContent]) -> None:
    """Warn (`AttachmentWarning`, at the caller's caller) when `model` (None: the default,
    embedded one) cannot read some of `blocks`."""
    if model is None:
        from yiemagent.ai.models import DEFAULT_MODEL, get_model

        model = get_model(DEFAULT_MODEL)
    warning = attachment_warning(model, blocks)
    if warning:
        warnings.warn(warning, AttachmentWarning, stacklevel=3)


def attachment_warning(
    model: Model, blocks: Sequence[ImageContent | DocumentContent]
) -> str | None:
    """One line for the user when `model` cannot read some of `blocks`, or its API takes no
    image as large as one of them, in bytes or pixels (None when it reads them all): it
    gets a text stand-in for each instead."""
    name = f"{model.provider}/{model.id}" if model.provider else model.id
    missing = sorted({_kind(b) for b in blocks} - set(model.input))
    if missing:
        words = " or ".join("images" if kind == "image" else "PDFs" for kind in missing)
        return f"{name} cannot read {words}: it gets a short note in place of each attachment"
    images = [b for b in blocks if isinstance(b, ImageContent)]
    limit = IMAGE_BASE64_LIMITS.get(model.api)
    if limit is not None and any(len(b.data) > limit for b in images):
        return (
            f"{name} takes images of at most {_mb(limit)} (as base64): it gets a short note "
            "in place of each larger one"
        )
    sides = IMAGE_SIDE_LIMITS.get(model.api)
    if sides is not None and any(
        oversized_sides_stand_in(image_size(b.data), sides.side, "") for b in images
    ):
        return (
            f"{name} takes images of at most {sides.side} px a side: it gets a short note "
            "in place of each larger one"
        )
    limit = PDF_PAGE_LIMITS.get(model.api)
    counted = [pdf_pages(b.data) for b in blocks if isinstance(b, DocumentContent)]
    if limit is not None and sum(pages or 0 for pages in counted) > limit:
        return (
            f"{name} takes at most {limit} PDF pages in a request: it gets a short note in "
            "place of each PDF past them"
        )
    return None
