"""`ToolStore`: one agent's tools, and loading tool files from a folder (DESIGN R-4.12).

The seeds' toolStore, loadTools, registerTool, getTools and clearTools, and the tool file
contract (a file's `get_tool()` returns its tool).
"""

from __future__ import annotations

import itertools
import json
import logging
import re
import stat
import sys
import threading
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from types import MappingProxyType, ModuleType
from typing import Any

from yiemagent.errors import ConfigError, ToolLoadError
from yiemagent.tools._given import to_agent_tool
from yiemagent.tools._import_tool_file import (
    ExitCalled,
    FolderImports,
    ToolFileError,
    describe_failure,
    import_tool_file,
)
from yiemagent.tools.builtin import LIST_TOOLS_NAME, list_tools_tool
from yiemagent.tools.schema import check_schema
from yiemagent.types.tools import AgentTool, check_tool_name

__all__ = ["LOAD_TIMEOUT_S", "ToolStore", "is_tool_file"]

logger = logging.getLogger(__name__)

LOAD_TIMEOUT_S = 30.0
"""Seconds a tool file may take to import and build its tool in `load_dir` (default)."""

_store_ids = itertools.count(1)
_module_ids = itertools.count(1)


class ToolStore:
    """The tools of one agent, by name, in registration order.

    Invariants: one store per agent (registering in one never shows in another); names are
    unique (`register` of an existing name raises unless `replace=True`); every tool in it has
    a valid name and a valid JSON Schema.

    Threads: a store may be changed (by `writeTool`, on a worker thread) while a run reads it.
    Every change builds a new dict and swaps it in under a lock, so `tools` is a consistent
    snapshot that never changes under a reader; read `tools` again to see later changes.

    Attributes:
        name: identifies the store in logs and in tool-file module names.
    """

    def __init__(self, name: str = "default") -> None:
        self.name = name
        self._id = next(_store_ids)
        self._tools: dict[str, AgentTool] = {}
        self._modules: dict[str, list[str]] = {}  # tool name -> its file modules in sys.modules
        self._lock = threading.RLock()

    def __repr__(self) -> str:
        return f"ToolStore(name={self.name!r}, tools={list(self._tools)!r})"

    # ── reading ──────────────────────────────────────────────────────────

    @property
    def tools(self) -> Mapping[str, AgentTool]:
        """A read-only snapshot `{name: AgentTool}` in registration order (O(1) lookups)."""
        return MappingProxyType(self._tools)

    def get(self, name: str) -> AgentTool | None:
        """The tool called `name`, or None."""
        return self._tools.get(name)

    def __len__(self) -> int:
        return len(self._tools)

    def __contains__(self, name: object) -> bool:
        return name in self._tools

    def __iter__(self) -> Iterator[str]:
        return iter(list(self._tools))

    # ── changing ─────────────────────────────────────────────────────────

    def register(
        self,
        tool: AgentTool | Callable[..., Any],
        *,
        replace: bool = False,
        module: str | None = None,
    ) -> AgentTool:
        """Add `tool` (registerTool); with `replace=True` an existing one is replaced
        in place (keeping its position). A typed function is made a tool as `@tool` makes it.

        `module` names the module in `sys.modules` the tool came from (a tool file; `writeTool`
        passes it): the store drops that module when the tool is replaced or removed, so a
        rewritten tool file never leaves its old module behind.

        Returns:
            The tool registered (`tool`, or the one made of the function).

        Raises:
            ConfigError: neither an `AgentTool` nor a function, a function `@tool` refuses,
                an invalid name or input schema, or the name is taken and `replace` is False.
        """
        tool = to_agent_tool(tool)
        _check_tool(tool)
        with self._lock:
            if tool.name in self._tools and not replace:
                raise ConfigError(
                    f"tool {tool.name!r} is already registered in store {self.name!r}; "
                    "pass replace=True to replace it"
                )
            self._tools = {**self._tools, tool.name: tool}
            _forget_modules(self._modules.pop(tool.name, []))
            if module is not None:
                self._modules[tool.name] = [module]
        return tool

    def unregister(self, name: str) -> AgentTool | None:
        """Remove the tool called `name`; return it, or None when there was none."""
        with self._lock:
            if name not in self._tools:
                return None
            tools = dict(self._tools)
            removed = tools.pop(name)
            self._tools = tools
            _forget_modules(self._modules.pop(name, []))
        return removed

    def clear(self) -> None:
        """Remove every tool (clearTools); other stores are untouched."""
        with self._lock:
            self._tools = {}
            for names in self._modules.values():
                _forget_modules(names)
            self._modules = {}

    def load_dir(
        self, path: str | Path, *, timeout_s: float = LOAD_TIMEOUT_S
    ) -> Mapping[str, AgentTool]:
        """Load every tool file of a folder, then register `listTools`.

        Files: `*.py` in alphabetical order, skipping `__init__.py`, names starting with `_`
        and names containing "registry". Each is imported as its own module (unique per store
        and load, so top-level names never collide) and must define `get_tool() -> AgentTool`.
        Tool files may import the folder's helper modules by name (`from _helpers import x`:
        `_helpers.py` or a package `_helpers/` beside them), seen by this load's tools only.

        Args:
            path: the folder.
            timeout_s: seconds each file may take to import and build its tool; a file that
                takes longer (it blocks at import) is a failure, left running on a
                background thread.

        Returns:
            `tools` after loading.

        Raises:
            ToolLoadError: after registering every good file, listing `(path, reason)` for each
                file that failed to import (anything it raised, `KeyboardInterrupt` and
                `SystemExit` included), took longer than `timeout_s`, lacks `get_tool`,
                returned something other than an `AgentTool`, or duplicates a name.
            ConfigError: `path` is not a folder, or `timeout_s` is not above 0.
        """
        with self._lock:
            tools, modules, failures = self._load(path, dict(self._tools), timeout_s)
            self._commit(tools, modules, keep=True)
        return self._finish(failures)

    def reload(
        self, path: str | Path, *, timeout_s: float = LOAD_TIMEOUT_S
    ) -> Mapping[str, AgentTool]:
        """`clear()` then `load_dir(path)` as one swap: readers never see a half-loaded store.

        On broken files the good ones (and `listTools`) are in the store and `ToolLoadError` is
        raised; if `path` is not a folder the store is unchanged.
        """
        with self._lock:
            tools, modules, failures = self._load(path, {}, timeout_s)
            self._commit(tools, modules, keep=False)
        return self._finish(failures)

    # ── internals ────────────────────────────────────────────────────────

    def _load(
        self, path: str | Path, tools: dict[str, AgentTool], timeout_s: float
    ) -> tuple[dict[str, AgentTool], dict[str, list[str]], list[tuple[str, str]]]:
        if not timeout_s > 0:
            raise ConfigError(f"timeout_s must be > 0 seconds, not {timeout_s!r}")
        folder = Path(path)
        if not folder.is_dir():
            raise ConfigError(f"tool folder {str(folder)!r} does not exist or is not a folder")
        modules: dict[str, list[str]] = {}
        failures: list[tuple[str, str]] = []
        origin: dict[str, str] = {}
        load = next(_module_ids)
        imports = FolderImports(folder, f"_yiemagent_tool_{self._id}_{load}")
        for file in sorted(p for p in folder.iterdir() if is_tool_file(p)):
            special = _special_file(file)
            if special:
                failures.append((str(file), f"{special}, not a file of Python code"))
                continue
            try:
                module, tool = import_tool_file(
                    file,
                    _module_name(self.name, self._id, file),
                    imports,
                    _tool_from_module,
                    timeout_s=timeout_s,
                )
            except ToolFileError as exc:
                failures.append((str(file), str(exc)))
                continue
            if tool.name in tools:
                where = origin.get(tool.name, "registered before")
                failures.append((str(file), f"duplicate tool name {tool.name!r} ({where})"))
                _forget_modules([module.__name__])
                continue
            tools[tool.name] = tool
            origin[tool.name] = f"already defined by {file.name}"
            modules[tool.name] = [module.__name__]
        helpers = imports.module_names()
        if helpers:  # shared by this load's tools: forgotten with the first of them
            first = next((name for name in modules), None)
            if first is None:
                _forget_modules(helpers)
            else:
                modules[first] = [*modules[first], *helpers]
        if LIST_TOOLS_NAME not in tools:
            tools[LIST_TOOLS_NAME] = list_tools_tool(self)
        return tools, modules, failures

    def _commit(
        self, tools: dict[str, AgentTool], modules: dict[str, list[str]], *, keep: bool
    ) -> None:
        if not keep:
            for names in self._modules.values():
                _forget_modules(names)
            self._modules = {}
        self._tools = tools
        self._modules.update(modules)

    def _finish(self, failures: list[tuple[str, str]]) -> Mapping[str, AgentTool]:
        logger.info(
            "store %s: %d tools, %d files failed", self.name, len(self._tools), len(failures)
        )
        if failures:
            raise ToolLoadError(failures)
        return self.tools


def is_tool_file(path: Path) -> bool:
    """Whether `load_dir` loads this file: `*.py`, not `_*`, no "registry" in the name.

    A `*.py` that is not a readable regular file (a broken link, a folder) is still taken, so
    that its failure is reported rather than skipped in silence.
    """
    name = path.name
    return name.endswith(".py") and not name.startswith("_") and "registry" not in name.lower()


def _special_file(path: Path) -> str | None:
    """What `path` is when it is a named pipe, a socket or a device ("a named pipe"), else
    None: reading a pipe waits for a writer, for ever if none comes. A link is followed; a
    path that cannot be looked at is None (importing it reports why)."""
    try:
        mode = path.stat().st_mode
    except (OSError, RuntimeError):
        return None
    if stat.S_ISFIFO(mode):
        return "a named pipe"
    if stat.S_ISSOCK(mode):
        return "a socket"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    return None


def _module_name(store_name: str, store_id: int, path: Path) -> str:
    slug = re.sub(r"\W", "_", f"{store_name}_{path.stem}")
    return f"_yiemagent_tool_{store_id}_{next(_module_ids)}_{slug}"


def _tool_from_module(module: ModuleType) -> AgentTool:
    get_tool = getattr(module, "get_tool", None)
    if not callable(get_tool):
        # a file of @tool functions without get_tool is the usual first try: say the line
        made = [name for name, value in vars(module).items() if isinstance(value, AgentTool)]
        if len(made) > 1:  # offering the first would drop the others
            raise ConfigError(
                f"defines no get_tool() function, and a tool file offers one tool: put "
                f"{_listed(made)} in files of their own, each with get_tool = lambda: <its tool>"
            )
        if made:
            raise ConfigError(
                f"defines no get_tool() function; to offer its tool {made[0]}, add: "
                f"get_tool = lambda: {made[0]}"
            )
        raise ConfigError("defines no get_tool() function")
    try:
        tool = get_tool()
    except ExitCalled as exc:
        raise ConfigError(f"get_tool() called os._exit({exc.status!r})") from None
    except BaseException as exc:  # KeyboardInterrupt and SystemExit too: the file's failure
        raise ConfigError(f"get_tool() raised {describe_failure(exc)}") from None
    if isinstance(tool, (list, tuple)) and tool and all(isinstance(t, AgentTool) for t in tool):
        raise ConfigError(
            f"get_tool() returned {len(tool)} tools, and a tool file offers one: put "
            f"{_listed([t.name for t in tool])} in files of their own, each with its get_tool()"
        )
    if not isinstance(tool, AgentTool):
        raise ConfigError(f"get_tool() returned {type(tool).__name__}, not an AgentTool")
    _check_tool(tool)
    return tool


def _listed(names: list[str]) -> str:
    """Names in a sentence: `a and b`, `a, b and c`."""
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]


def _check_tool(tool: object) -> None:
    if not isinstance(tool, AgentTool):
        raise ConfigError(f"expected an AgentTool, got {type(tool).__name__}")
    check_tool_name(tool.name)
    what = f"input_schema of tool {tool.name!r}"
    check_schema(tool.input_schema, what=what)
    kind = tool.input_schema.get("type", "object")
    if kind != "object" and not (isinstance(kind, list) and "object" in kind):
        # A call's arguments are one JSON object on every provider's wire; a schema of
        # another type could never be met, and OpenAI-style APIs refuse the whole request.
        raise ConfigError(
            f'{what} must describe the arguments object ("type": "object"), '
            f'got "type": {json.dumps(kind)}'
        )


def _forget_modules(names: list[str]) -> None:
    for name in names:
        sys.modules.pop(name, None)
