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
"""

from __future__ import annotations

import builtins
import importlib
import sys
import threading
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from types import ModuleType
from typing import Any, TypeVar

from yiemagent.errors import ConfigError, exception_summary
from yiemagent.files import import_file

__all__ = ["FolderImports", "ToolFileError", "describe_failure", "import_tool_file"]

T = TypeVar("T")


class ToolFileError(Exception):
    """A tool file failed to load; the text says why (without the file's path)."""


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


def describe_failure(exc: BaseException) -> str:
    """What a tool file's failure says: our own errors' text, `SyntaxError: msg (line n)`,
    else `exception_summary` (this runs inside the handler, so it must not raise)."""
    if isinstance(exc, ToolFileError | ConfigError):
        return str(exc)
    if isinstance(exc, SyntaxError):
        return f"SyntaxError: {exc.msg} (line {exc.lineno})"
    return exception_summary(exc)
