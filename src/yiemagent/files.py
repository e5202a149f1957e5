"""The two things yiemagent does to a file in one way each: replace it whole or not at all
(`write_atomically`: a `writeTool` tool file, a batch's repaired results file, the embedded
model's verified marker, a trace page), so that a crash at any moment leaves the old file or
the new one, never half of one (DESIGN §8); and import a Python file as a module
(`import_file`: tool files and their helpers, the modules beside an agent file, an eval's
check file), leaving nothing behind when its code fails and keeping the code it ran
(`module_code`: a tool's worker process runs that, not the file as it is now), or the
function a `MODULE:FUNCTION` reference names (`import_function`: `--agent`, an agent file's
guardrails, an eval's own checks), with one wording for what is wrong with it.

Internal: not part of the public API (`yiemagent` does not re-export it). It sits at the
bottom of the layers, beside `errors`, and imports nothing of yiemagent.
"""

from __future__ import annotations

import contextlib
import importlib
import importlib.machinery
import importlib.util
import os
import re
import secrets
import stat
import sys
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from types import CodeType, ModuleType
from typing import Any

__all__ = [
    "STALE_TEMPORARY_S",
    "import_file",
    "import_function",
    "module_code",
    "run_module_code",
    "write_atomically",
]

_O_BINARY = getattr(os, "O_BINARY", 0)  # Windows: no newline translation

STALE_TEMPORARY_S = 3600.0
"""Age in seconds past which a temporary file of `write_atomically` is a killed writer's."""


def write_atomically(target: Path, data: bytes, *, exclusive: bool = False) -> None:
    """Replace `target` with `data` (with `exclusive`: create it, only if it does not exist).

    The bytes go to a hidden temporary file beside `target` (same folder, so the rename
    cannot cross file systems), are flushed to the disk (`fsync`), and the file is renamed
    over `target` (`os.replace`, atomic on POSIX); then the folder is synced so that the
    rename itself survives a power loss. On any failure the temporary file is removed and
    `target` is as it was. A process killed meanwhile cannot remove its temporary file, so
    each write first removes those of `target` last written over `STALE_TEMPORARY_S` ago (a
    writer still at work has a fresh one). The file's permissions are those `open` would
    give: a new file gets the umask's (0644 under the usual 022, not a temporary file's
    private 0600), a replaced one keeps its own.

    With `exclusive` the whole file is linked to `target` (`os.link`, which fails when the
    name exists) instead of renamed over it: checking that `target` does not exist and then
    replacing it would overwrite a file another process created in between.

    Args:
        target: The file to create or replace; its folder must exist.
        data: The whole new content.
        exclusive: Refuse to replace an existing `target`.

    A `target` that is a symbolic link is written through: the file it points to is
    replaced and the link stays (renamed over, the link would become a plain file and the
    file it pointed to would keep the old content).

    A `target` that exists and is no regular file (a device such as /dev/null, a named
    pipe, also through a link such as /dev/stdout) is written into, as `open(target, "wb")`
    would: renamed over, it would become a regular file, and /dev/null one that every
    program writing to it then fills.

    Raises:
        FileExistsError: `exclusive` and `target` exists; it is unchanged.
        OSError: the folder cannot be written, the disk is full, ...; `target` is unchanged.
    """
    if not exclusive and _special(target):
        with open(target, "wb") as out:
            out.write(data)
        return
    if not exclusive and target.is_symlink():
        target = Path(os.path.realpath(target))
    _remove_stale_temporaries(target)
    fd, temp = _create_temporary(target)
    try:
        with os.fdopen(fd, "wb") as out:
            out.write(data)
            out.flush()
            os.fsync(out.fileno())
        if exclusive:
            os.link(temp, target)
            with contextlib.suppress(OSError):
                os.unlink(temp)
        else:
            os.replace(temp, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temp)
        raise
    _fsync_folder(target.parent)


def _special(target: Path) -> bool:
    """Whether `target` (a link followed) exists and is no regular file nor a folder."""
    try:
        mode = os.stat(target).st_mode
    except (OSError, ValueError):  # absent, a broken link, or no valid path
        return False
    return not (stat.S_ISREG(mode) or stat.S_ISDIR(mode))


def _temporary_name(target: Path) -> re.Pattern[str]:
    """The names `_create_temporary` gives the temporary files of `target`."""
    return re.compile(rf"\.{re.escape(target.name)}\.[0-9a-f]{{8}}\.tmp")


def _remove_stale_temporaries(target: Path) -> None:
    """Delete the temporary files of `target` that were last written over
    `STALE_TEMPORARY_S` ago: a process killed while writing leaves its own (as large as the
    file). Best effort: one that cannot be listed or removed stays, never an error."""
    pattern = _temporary_name(target)
    prefix = f".{target.name}."
    cutoff = time.time() - STALE_TEMPORARY_S
    try:
        entries = list(os.scandir(target.parent))
    except OSError:
        return
    for entry in entries:
        if not (entry.name.startswith(prefix) and pattern.fullmatch(entry.name)):
            continue
        with contextlib.suppress(OSError):  # gone already, or not ours to remove
            if entry.is_file(follow_symlinks=False) and entry.stat().st_mtime < cutoff:
                os.unlink(entry.path)


def _create_temporary(target: Path) -> tuple[int, str]:
    """A new hidden file beside `target`, created with the mode `open(target, "w")` would
    give it: `target`'s own when it exists, else 0666 less the umask (which `os.open`
    applies; `tempfile.mkstemp` would make it 0600)."""
    try:
        mode = stat.S_IMODE(os.stat(target).st_mode)
    except OSError:
        mode = None
    for _ in range(100):
        temp = str(target.parent / f".{target.name}.{secrets.token_hex(4)}.tmp")
        try:
            fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _O_BINARY, 0o666)
        except FileExistsError:
            continue
        if mode is not None:
            with contextlib.suppress(OSError):  # then the umask's mode, still a whole file
                os.chmod(temp, mode)
        return fd, temp
    raise FileExistsError(f"no free temporary name beside {target}")


def _fsync_folder(folder: Path) -> None:
    with contextlib.suppress(OSError):  # not every platform lets a folder be synced
        fd = os.open(folder, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def import_file(
    path: Path,
    module_name: str,
    *,
    package: bool = False,
    prepare: Callable[[ModuleType], None] | None = None,
) -> ModuleType:
    """Import the Python file `path` as the module `module_name`, as Python's own recipe
    does: the module is in `sys.modules` before its code runs, so a dataclass in it finds
    its module and the module lives as long as the process; when its code raises, it is
    removed again, so a failed import leaves nothing behind.

    Args:
        path: The file (with `package`, a package's `__init__.py`: its folder is searched
            for the package's submodules).
        module_name: The name in `sys.modules`; one already there is replaced.
        prepare: Called with the new module before its code runs (to give it its own
            `__builtins__`, say).

    Raises:
        ImportError: `path` is not a Python source file (no `.py` name).
        BaseException: whatever the file's code raised (`SyntaxError`, `SystemExit`, ...),
            as it raised it.
    """
    search = [str(path.parent)] if package else None
    spec = importlib.util.spec_from_file_location(
        module_name, path, submodule_search_locations=search
    )
    if spec is None or spec.loader is None:
        raise ImportError(f"{path} is not a Python file")
    module = importlib.util.module_from_spec(spec)
    if prepare is not None:
        prepare(module)
    sys.modules[module_name] = module
    try:
        loader = spec.loader
        if isinstance(loader, importlib.machinery.SourceFileLoader):
            code = loader.get_code(module_name)  # as `exec_module` does, keeping the code
            assert code is not None  # a source file always compiles to code (or raises)
            run_module_code(module, code)
        else:
            loader.exec_module(module)
    except BaseException:
        if sys.modules.get(module_name) is module:
            del sys.modules[module_name]
        raise
    return module


_CODE_NAME = "__yiemagent_code__"
"""Where a module's namespace keeps the code that made it: its functions hold the namespace
(`__globals__`), not the module, which goes once it leaves `sys.modules` (a tool replaced)."""


def run_module_code(module: ModuleType, code: CodeType) -> None:
    """Run `code` as the body of `module`, and keep it as the code `module` ran.

    Raises:
        BaseException: whatever the code raised, as it raised it.
    """
    module.__dict__[_CODE_NAME] = code
    exec(code, module.__dict__)


def module_code(namespace: Mapping[str, Any]) -> CodeType | None:
    """The code run to make the module whose namespace is `namespace` (its `__dict__`, or
    a function's `__globals__`, which outlives a module taken out of `sys.modules`) when
    `import_file` or `run_module_code` made it; None for another module. What a worker
    process must run to have the same module, since its file may have been changed,
    replaced or removed since."""
    code = namespace.get(_CODE_NAME)
    return code if isinstance(code, CodeType) else None


def import_function(
    ref: str, load: Callable[[str], ModuleType] = importlib.import_module
) -> Callable[..., Any]:
    """The function `ref` names: `MODULE:FUNCTION`, the module imported by `load` (its
    name, or whatever else the caller lets `load` take: a file's path, say).

    Raises:
        ImportError: one line saying what is wrong, for the caller to put after the option
            or field it came from: `'x' is not MODULE:FUNCTION`, `cannot import m: why` (the
            module is missing, or its code failed: `SyntaxError: ...`), or `m has no
            function 'f'`.
    """
    module_name, _, attribute = ref.rpartition(":")
    if not module_name or not attribute:
        raise ImportError(f"{ref!r} is not MODULE:FUNCTION")
    try:
        module = load(module_name)
    except Exception as exc:  # a missing module, or its own code failing
        raise ImportError(f"cannot import {module_name}: {_why(exc)}") from exc
    function = getattr(module, attribute, None)
    if not callable(function):
        raise ImportError(f"{module_name} has no function {attribute!r}")
    found: Callable[..., Any] = function
    return found


def _why(exc: Exception) -> str:
    """One line on why importing failed; never raises (an exception whose `__str__` raises
    is named by its class)."""
    if isinstance(exc, SyntaxError):
        return f"SyntaxError: {exc.msg} ({Path(exc.filename or '?').name}, line {exc.lineno})"
    try:
        text = str(exc)
    except Exception:
        text = ""
    if isinstance(exc, ImportError) and text:  # says what is missing already
        return text
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__
