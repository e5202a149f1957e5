"""Example tool `read_file`: read a text file inside one root folder.

The root is `$YIEM_READ_FILE_ROOT`, else the current directory when the tool is created.
Paths are resolved (symlinks followed) and refused when they leave the root; at most
`MAX_CHARS` characters are returned. A name not found as written is looked for in other
Unicode spellings (macOS names files in NFD, a model writes NFC); when several match, the
error lists them.
"""

from __future__ import annotations

import errno
import json
import os
import stat
import unicodedata
from pathlib import Path

from yiemagent import AgentTool, tool

ROOT_ENV = "YIEM_READ_FILE_ROOT"
"""The environment variable naming the root (`yiem eval` sets it to a dataset's `workdir`)."""
MAX_CHARS = 20_000


def resolve_inside(root: Path, path: str) -> Path:
    """`path` (relative to `root`, or absolute) resolved; it must stay inside `root`.

    Raises:
        ValueError: the path escapes the root (also through a symlink), is empty, holds a
            lone surrogate, or its symlinks form a loop.
    """
    if not path.strip() or "\0" in path:
        raise ValueError("give a file path relative to the root folder")
    base = root.resolve()
    try:
        target = (base / path).resolve()
    except UnicodeEncodeError:
        raise ValueError(f"{path!r} is no file name: it holds a lone surrogate") from None
    except (OSError, RuntimeError) as exc:  # RuntimeError: a symlink loop before Python 3.13
        loop = not isinstance(exc, OSError) or exc.errno == errno.ELOOP
        why = "its symbolic links form a loop" if loop else getattr(exc, "strerror", exc)
        raise ValueError(f"{path!r} cannot be followed: {why}") from None
    if not target.is_relative_to(base):
        raise ValueError(f"{path!r} is outside the allowed folder")
    return target


def read_text(root: Path, path: str) -> str:
    """The text of `path` inside `root`, cut to `MAX_CHARS` characters.

    Raises:
        ValueError: outside the root, missing, ambiguous (several entries spelled like it),
            a directory, no regular file (a pipe, whose reading would wait for a writer),
            unreadable, or not UTF-8 text.
    """
    target = resolve_inside(root, path)
    if not target.exists():
        spelled = _spelled_otherwise(target, path)
        if spelled is None:
            raise ValueError(f"{path!r} does not exist")
        target = resolve_inside(root, str(spelled))  # its links may lead elsewhere
    if target.is_dir():
        names = sorted(p.name + ("/" if p.is_dir() else "") for p in target.iterdir())
        raise ValueError(f"{path!r} is a folder; it holds: {', '.join(names[:50])}")
    limit = MAX_CHARS * 4  # bytes: enough for MAX_CHARS characters of any UTF-8 text
    try:  # O_NONBLOCK: opening a pipe no one writes to would wait for a writer for ever
        fd = os.open(target, os.O_RDONLY | os.O_NONBLOCK)
    except OSError as exc:
        raise ValueError(f"{path!r} cannot be read: {exc.strerror or exc}") from None
    with os.fdopen(fd, "rb") as src:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise ValueError(f"{path!r} is no regular file (a pipe, a socket or a device)")
        data = src.read(limit + 1)
    truncated = len(data) > limit
    data = data[:limit]
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        if not (truncated and exc.start >= len(data) - 3):  # not just a character cut in two
            raise ValueError(f"{path!r} is not a UTF-8 text file") from None
        text = data[: exc.start].decode("utf-8")
    if "\0" in text:
        raise ValueError(f"{path!r} is a binary file, not text")
    if truncated or len(text) > MAX_CHARS:
        return text[:MAX_CHARS] + f"\n[truncated after {MAX_CHARS} characters]"
    return text


_TYPOGRAPHIC = str.maketrans({"\u2018": "'", "\u2019": "'", "\u00a0": " ", "\u202f": " "})
"""What macOS writes in file names (screenshots) and a model types plainly."""


def _folded(name: str) -> str:
    """`name` in NFC, typographic apostrophes and no-break spaces made plain."""
    return unicodedata.normalize("NFC", name).translate(_TYPOGRAPHIC)


_LISTED = 10
"""The most entries an ambiguity error names."""


def _spelled_otherwise(target: Path, path: str) -> Path | None:
    """The existing path that missing `target` (absolute) names in another spelling: each
    missing name compared `_folded`, as macOS writes "é" as e + U+0301 (NFD) and a model
    U+00E9; None when no entry of a folder matches.

    Raises:
        ValueError: several entries of one folder match (`path` is ambiguous); the text
            lists them (at most `_LISTED`) as JSON strings, whose escapes show how they
            differ and can be sent back as written.
    """
    found = Path(target.anchor)
    for name in target.parts[1:]:
        if os.path.lexists(found / name):
            found = found / name
            continue
        try:
            matches = [e.name for e in os.scandir(found) if _folded(e.name) == _folded(name)]
        except OSError:
            return None
        if not matches:
            return None
        if len(matches) > 1:
            matches.sort()
            listed = ", ".join(json.dumps(m) for m in matches[:_LISTED])
            more = f" and {len(matches) - _LISTED} more" if len(matches) > _LISTED else ""
            raise ValueError(
                f"{path!r} is ambiguous: {len(matches)} entries are spelled like {name!r} "
                f"({listed}{more}); give one as written"
            )
        found = found / matches[0]
    return found


def make_read_file(root: str | Path) -> AgentTool:
    """A `read_file` tool confined to `root`."""
    root_path = Path(root)

    @tool(parallel=True)
    def read_file(path: str) -> str:
        """Read a text file.

        Args:
            path: The file path the user gives, relative to the working folder.
        """
        return read_text(root_path, path)

    return read_file


def get_tool() -> AgentTool:
    """The `read_file` tool, rooted at `$YIEM_READ_FILE_ROOT` or the current directory."""
    return make_read_file(os.environ.get(ROOT_ENV) or os.getcwd())
