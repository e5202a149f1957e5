"""Replacing a file whole or not at all: the one way yiemagent rewrites a file it owns (a
`writeTool` tool file, a batch's repaired results file, the embedded model's verified
marker, a trace page), so that a crash at any moment leaves the old file or the new one,
never half of one (DESIGN §8).

Internal: not part of the public API (`yiemagent` does not re-export it). It sits at the
bottom of the layers, beside `errors`, and imports nothing of yiemagent.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from pathlib import Path

__all__ = ["write_atomically"]


def write_atomically(target: Path, data: bytes) -> None:
    """Replace `target` with `data`.

    The bytes go to a hidden temporary file beside `target` (same folder, so the rename
    cannot cross file systems), are flushed to the disk (`fsync`), and the file is renamed
    over `target` (`os.replace`, atomic on POSIX); then the folder is synced so that the
    rename itself survives a power loss. On any failure the temporary file is removed and
    `target` is as it was.

    Args:
        target: The file to create or replace; its folder must exist.
        data: The whole new content.

    Raises:
        OSError: the folder cannot be written, the disk is full, ...; `target` is unchanged.
    """
    fd, temp = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as out:
            out.write(data)
            out.flush()
            os.fsync(out.fileno())
        os.replace(temp, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temp)
        raise
    _fsync_folder(target.parent)


def _fsync_folder(folder: Path) -> None:
    with contextlib.suppress(OSError):  # not every platform lets a folder be synced
        fd = os.open(folder, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
