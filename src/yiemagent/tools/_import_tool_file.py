"""Importing the files of one tool folder (DESIGN R-4.13): each tool file as a private
module, the helper modules of its folder visible to it alone, and the import bounded in
time, every failure of a file a reason naming what it did.

Helpers: a tool file's `import _helpers` / `from _helpers import x` finds `_helpers.py` (or
a package `_helpers/`) in the file's own folder. Only names starting with `_` are looked up
there (files `load_dir` never loads as tools), so a tool file cannot shadow a real module.
Each load imports a helper once, under a private name, and the tool files of that load share
it; `sys.path` is not changed, so other folders, stores and the rest of the program never see
it. The lookup is the tool module's own `__import__` (its `__builtins__`), so imports inside
functions, run later, find the helpers too.

Bound: a file is imported and its `get_tool()` called on a daemon thread; a file that has not
finished within the bound is reported and left running there (Python cannot stop a thread).
A `KeyboardInterrupt` or `SystemExit` raised by the file is its failure; a Ctrl-C of the user
while loading reaches the waiting thread and stops the load as usual.

Exit: `os._exit()` ends the process at once, with no exception, no `finally` and no line;
called by a tool file at import (or by a library it imports), it would end the program that
loads tools, with status 0 if it says so. While a thread imports a tool file (`no_exit`),
`os._exit` called on that thread in this process raises `ExitCalled` instead, a failure of
the file like `sys.exit()`; other threads, and a child forked meanwhile, exit as usual. A file
can still end the process other ways (a signal to itself, a crash in C code): those are not
silent (the shell shows the signal), and stopping them needs a child process per import.
"""

from __future__ import annotations

import builtins
import contextlib
import importlib
import os
import sys
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from types import ModuleType
from typing import Any, NoReturn, TypeVar

from yiemagent.errors import ConfigError, exception_summary
from yiemagent.files import import_file

__all__ = [
    "ExitCalled",
    "FolderImports",
    "ToolFileError",
    "describe_failure",
    "import_tool_file",
    "no_exit",
]

T = TypeVar("T")


class ToolFileError(Exception):
    """A tool file failed to load; the text says why (without the file's path)."""


class ExitCalled(BaseException):
    """`os._exit(status)` called while a tool file loaded (`no_exit`); a BaseException, so
    that the file's own `except Exception` does not swallow it."""

    def __init__(self, status: object) -> None:
        super().__init__(status)
        self.status = status


_exit_lock = threading.Lock()
_exit_guarded: dict[int, int] = {}
"""Thread ident → how many `no_exit` blocks it is in."""
_exit_real: Callable[[int], NoReturn] = os._exit
"""What `os._exit` was when the first guard began (what other threads still call)."""
_exit_pid = os.getpid()


def _guarded_exit(status: int) -> NoReturn:
    if threading.get_ident() in _exit_guarded and os.getpid() == _exit_pid:
        raise ExitCalled(status)
    _exit_real(status)


@contextlib.contextmanager
def no_exit() -> Iterator[None]:
    """`os._exit` called on this thread raises `ExitCalled` until the block ends."""
    global _exit_real, _exit_pid
    ident = threading.get_ident()
    with _exit_lock:
        if not _exit_guarded:
            if os._exit is not _guarded_exit:
                _exit_real = os._exit
            _exit_pid = os.getpid()
            setattr(os, "_exit", _guarded_exit)  # noqa: B010 (os._exit's type is exact)
        _exit_guarded[ident] = _exit_guarded.get(ident, 0) + 1
    try:
        yield
    finally:
        with _exit_lock:
            _exit_guarded[ident] -= 1
            if not _exit_guarded[ident]:
                del _exit_guarded[ident]
            if not _exit_guarded and os._exit is _guarded_exit:
                setattr(os, "_exit", _exit_real)  # noqa: B010


class FolderImports:
    """The helper modules of one tool folder for the tool files of one load.

    Args:
        folder: the tool folder.
        prefix: the private module-name prefix of this load (unique per store and load).
    """

    def __init__(self, folder: Path, prefix: str) -> None:
        self.folder = folder
        self.prefix = prefix
        self.helpers: dict[str, ModuleType] = {}
        """Top-level helper name → its private module."""
        self.builtins: dict[str, Any] = dict(vars(builtins))
        self.builtins["__import__"] = self._import
        self._lock = threading.RLock()

    def module_names(self) -> list[str]:
        """The names in `sys.modules` of the helpers and their submodules."""
        prefixes = tuple(f"{module.__name__}." for module in self.helpers.values())
        own = {module.__name__ for module in self.helpers.values()}
        return [name for name in list(sys.modules) if name in own or name.startswith(prefixes)]

    def prepare(self, module: ModuleType) -> None:
        """Make `module`'s imports see the folder's helpers (before it runs)."""
        module.__dict__["__builtins__"] = self.builtins

    def _import(
        self,
        name: str,
        globals: Mapping[str, Any] | None = None,
        locals: Mapping[str, Any] | None = None,
        fromlist: Sequence[str] | None = (),
        level: int = 0,
    ) -> ModuleType:
        if level == 0 and name.startswith("_"):
            top, _, rest = name.partition(".")
            helper = self._helper(top)
            if helper is not None:
                if not rest:
                    return helper
                sub = importlib.import_module(f"{helper.__name__}.{rest}")
                return sub if fromlist else helper
        return builtins.__import__(name, globals, locals, fromlist or (), level)

    def _helper(self, top: str) -> ModuleType | None:
        with self._lock:
            if top in self.helpers:
                return self.helpers[top]
            if not top.isidentifier():
                return None
            package = self.folder / top / "__init__.py"
            file = package if package.is_file() else self.folder / f"{top}.py"
            if not file.is_file():
                return None

            def register(module: ModuleType) -> None:  # before it runs: it may import itself
                self.prepare(module)
                self.helpers[top] = module

            try:
                name = f"{self.prefix}_{top}"
                return import_file(file, name, package=file == package, prepare=register)
            except BaseException:
                self.helpers.pop(top, None)
                raise


def import_tool_file(
    path: Path,
    module_name: str,
    imports: FolderImports,
    build: Callable[[ModuleType], T],
    *,
    timeout_s: float,
) -> tuple[ModuleType, T]:
    """Import `path` as `module_name` and call `build(module)`, on a daemon thread, within
    `timeout_s` seconds.

    Returns:
        The module (in `sys.modules` under `module_name`) and what `build` returned.

    Raises:
        ToolFileError: importing failed ("import failed: ..."), `build` raised (its text), or
            both did not finish within `timeout_s` (the module is then removed from
            `sys.modules`, also if it finishes later).
    """
    outcome: list[tuple[ModuleType, T] | BaseException] = []
    abandoned = threading.Event()

    def run() -> None:
        with no_exit():
            load()

    def load() -> None:
        try:
            module = _exec(path, module_name, imports)
        except BaseException as exc:
            outcome.append(ToolFileError(f"import failed: {describe_failure(exc)}"))
            return
        try:
            built = build(module)
        except BaseException as exc:
            sys.modules.pop(module_name, None)
            outcome.append(
                exc if isinstance(exc, ToolFileError) else ToolFileError(describe_failure(exc))
            )
            return
        if abandoned.is_set():  # reported as too slow already: leave nothing behind
            sys.modules.pop(module_name, None)
            return
        outcome.append((module, built))

    thread = threading.Thread(target=run, name=f"yiem-load-{path.name}", daemon=True)
    thread.start()
    thread.join(timeout_s)
    if thread.is_alive():
        abandoned.set()
        sys.modules.pop(module_name, None)
        raise ToolFileError(
            f"did not finish within {timeout_s:g} s (does it block at import or in "
            "get_tool()?); it is left running on a background thread"
        )
    result = outcome[0]
    if isinstance(result, BaseException):
        raise result
    return result


def _exec(path: Path, module_name: str, imports: FolderImports) -> ModuleType:
    try:
        return import_file(path, module_name, prepare=imports.prepare)
    except SystemExit as exc:
        raise ToolFileError(f"the file called sys.exit({exc.code!r})") from None
    except ExitCalled as exc:
        raise ToolFileError(f"the file called os._exit({exc.status!r})") from None


def describe_failure(exc: BaseException) -> str:
    """What a tool file's failure says: our own errors' text, `SyntaxError: msg (line n)`,
    else `exception_summary` (this runs inside the handler, so it must not raise)."""
    if isinstance(exc, ToolFileError | ConfigError):
        return str(exc)
    if isinstance(exc, ExitCalled):
        return f"os._exit({exc.status!r}) was called"
    if isinstance(exc, SyntaxError):
        return f"SyntaxError: {exc.msg} (line {exc.lineno})"
    return exception_summary(exc)
