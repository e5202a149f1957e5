"""The built-in `writeTool`: the model writes a new tool file, usable on its very next turn
(DESIGN R-4.15): the seeds' self-modifying tools.

Security: `writeTool` runs model-written Python with this process's rights (the new file's
imports run in this process when it is written; its body runs in a worker process by
default, `isolation="process"`, killed at the tool's timeout, `WRITTEN_TOOL_TIMEOUT_S`). It
is never registered unless asked for. It overwrites only files it wrote itself
(`WRITTEN_MARK` on their first line), never a user's tool or any other file, and refuses
names that would shadow an importable module (`json.py` beside a script shadows the standard
library), names that `load_dir` would skip, and code over `MAX_CODE_CHARS`. Offer
it only to models and users you trust, or gate it with `AgentLoopConfig.before_tool_call` —
e.g. show the code to a person and return `BeforeToolCallResult(block=True, reason=...)`
unless they approve — and run the agent in a sandbox (container, separate user) when the
code is not trusted.
"""

from __future__ import annotations

import contextlib
import importlib.util
import itertools
import json
import keyword
import logging
import os
import stat
import sys
import threading
import types
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from yiemagent.errors import ConfigError, exception_summary
from yiemagent.files import run_module_code, write_atomically
from yiemagent.tools._import_tool_file import ExitCalled, describe_failure, no_exit
from yiemagent.tools._render_tool_file import WRITTEN_MARK, WriteToolError, render_tool_file
from yiemagent.tools.builtin import LIST_TOOLS_NAME
from yiemagent.tools.schema import check_schema
from yiemagent.tools.store import is_tool_file
from yiemagent.types.signal import AbortSignal
from yiemagent.types.tools import AgentTool, AgentToolResult, OnUpdate, check_tool_name

if TYPE_CHECKING:
    from yiemagent.tools.store import ToolStore

__all__ = [
    "MAX_CODE_CHARS",
    "WRITE_TOOL_NAME",
    "WRITTEN_TOOL_TIMEOUT_S",
    "WriteToolError",
    "render_tool_file",
    "write_tool_tool",
]

logger = logging.getLogger(__name__)

WRITE_TOOL_NAME = "writeTool"
_BUILTIN_NAMES = frozenset({WRITE_TOOL_NAME, LIST_TOOLS_NAME})
_counter = itertools.count(1)

WRITTEN_TOOL_TIMEOUT_S = 60.0
"""Default bound on one call of a written tool, in seconds."""

MAX_CODE_CHARS = 100_000
"""Most characters of code (all code parts and the schema together) one written tool may have."""

# `contentMediaType` (a JSON Schema 2020-12 annotation) marks what the model composes — the
# code, the schema, the texts — so the embedded model's grounding guard, which
# checks that a call's values come from the conversation, leaves them alone.
_CODE = "text/x-python"
WRITE_TOOL_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "name": {
            "type": "string",
            "description": "The new tool's name: a Python identifier (letters, digits, "
            "underscores; up to 64 characters), e.g. searchWine.",
        },
        "label": {
            "type": "string",
            "contentMediaType": "text/plain",
            "description": "A short human-readable name.",
        },
        "description": {
            "type": "string",
            "contentMediaType": "text/plain",
            "description": "What the tool does, for the model.",
        },
        "inputSchema": {
            "type": "object",
            "contentMediaType": "application/schema+json",
            "description": 'JSON Schema of the arguments object, e.g. {"type": "object", '
            '"properties": {"query": {"type": "string"}}, "required": ["query"]}.',
        },
        "executeCode": {
            "type": "string",
            "contentMediaType": _CODE,
            "description": "Python body of execute(tool_call_id, args, signal, on_update). "
            "Read arguments from the dict `args`, return a str (or an AgentToolResult). "
            "Imports may go inside the body or in `imports`. May use `await`.",
        },
        "imports": {
            "type": "string",
            "contentMediaType": _CODE,
            "description": "Optional import statements for the top of the file.",
        },
        "validateCode": {
            "type": "string",
            "contentMediaType": _CODE,
            "description": "Optional body of validate_arguments(args): return None when the "
            "arguments are fine, else an error text.",
        },
        "prepareCode": {
            "type": "string",
            "contentMediaType": _CODE,
            "description": "Optional body of prepare_arguments(args): return the arguments "
            "to validate (e.g. with renamed keys).",
        },
        "parallel": {
            "type": "boolean",
            "description": "Whether it may run beside other tools (default false).",
        },
        "overwrite": {
            "type": "boolean",
            "description": "Replace an existing tool of that name (default false).",
        },
    },
    "required": ["name", "label", "description", "inputSchema", "executeCode"],
}


def write_tool_tool(
    store: ToolStore,
    directory: str | Path,
    *,
    timeout_s: float | None = WRITTEN_TOOL_TIMEOUT_S,
    isolation: Literal["thread", "process"] = "process",
) -> AgentTool:
    """A `writeTool` that writes tool files into `directory` and registers them in `store`.

    Each call: checks the name (a Python identifier, not a keyword, not a built-in,
    not starting with `_` nor containing "registry" (would skip the file), not the
    name of an importable module), caps the code at `MAX_CODE_CHARS`, refuses an existing
    tool or file unless `overwrite` — and even then overwrites only a file that `writeTool`
    wrote (`WRITTEN_MARK`) whose tool, if registered, came from that file — checks
    `inputSchema` against the 2020-12 meta-schema, renders the file (`render_tool_file`),
    parses it, imports it in isolation and calls `get_tool()`, then writes it atomically
    (temporary file in the same folder, then `os.replace`; a new file is linked in place
    instead, so a file another writer created meanwhile is refused, never replaced) and
    registers the tool at once (hot reload). The result carries `added_tool_names=[name]`,
    so the next turn offers the new tool. On any failure it raises `WriteToolError` (the
    pipeline makes that an error result) and the store and the folder are as before (a
    failed registration after the write restores the old file).

    Read the module docstring on the risk: the written code runs with this process's rights.

    Args:
        store: where the new tools are registered (the agent's store).
        directory: the only folder files are written to (created on first use).
        timeout_s: the written tools' `timeout_s` (seconds; `None` for no bound).
        isolation: the written tools' `isolation`: "process" (default; a timeout or abort
            kills the call's process) or "thread" (cannot be stopped once it runs).

    Raises:
        ConfigError: `isolation` is neither "thread" nor "process", or `timeout_s` is not
            above 0 (here, when the tool is made; a call's failures are `WriteToolError`).
    """
    folder = Path(directory)
    lock = threading.Lock()
    if isolation not in ("thread", "process"):
        raise ConfigError(f"isolation must be 'thread' or 'process', not {isolation!r}")
    if timeout_s is not None and not timeout_s > 0:
        raise ConfigError("timeout_s must be > 0 seconds or None")
    options = {"timeout_s": timeout_s, "isolation": isolation}

    def execute(
        tool_call_id: str, args: dict[str, Any], signal: AbortSignal, on_update: OnUpdate
    ) -> AgentToolResult:
        with lock:
            return _write(store, folder, args, options)

    return AgentTool(
        name=WRITE_TOOL_NAME,
        label="Write tool",
        description=(
            "Create a new tool (a Python file) that you can call from your next step on. "
            "Use it when no existing tool can do the job; call listTools first to avoid a "
            "name that is taken."
        ),
        input_schema=WRITE_TOOL_SCHEMA,
        execute=execute,
    )


def _write(
    store: ToolStore, folder: Path, args: dict[str, Any], options: dict[str, Any]
) -> AgentToolResult:
    name = _check_name(args.get("name"))
    overwrite = bool(args.get("overwrite", False))
    _check_size(args)
    schema = _check_input_schema(args.get("inputSchema"))
    root = folder.resolve()
    target = (root / f"{name}.py").resolve()
    if target.parent != root:
        raise WriteToolError(f"refusing to write outside the tool folder: {target}")
    _check_not_shadowing(name, target)
    existed = name in store or target.exists()
    if existed and not overwrite:
        raise WriteToolError(
            f'a tool named "{name}" already exists; choose another name, or pass '
            '"overwrite": true to replace it'
        )
    if existed:
        _check_overwritable(store, name, target)
    source = render_tool_file(
        name=name,
        label=_text(args, "label") or name,
        description=_text(args, "description") or name,
        input_schema=schema,
        execute_code=_text(args, "executeCode"),
        imports=_text(args, "imports"),
        validate_code=_text(args, "validateCode"),
        prepare_code=_text(args, "prepareCode"),
        parallel=bool(args.get("parallel", False)),
        **options,
    )
    if len(source) > 2 * MAX_CODE_CHARS:
        raise WriteToolError(
            f"the generated file is {len(source)} characters; the limit is {2 * MAX_CODE_CHARS}"
        )
    tool, module_name = _import_in_isolation(source, target, name)
    try:
        root.mkdir(parents=True, exist_ok=True)
        previous = target.read_bytes() if existed and target.exists() else None
        # a new file only if still absent: another writer may have made it since the check
        write_atomically(target, source.encode("utf-8"), exclusive=not existed)
    except FileExistsError:
        sys.modules.pop(module_name, None)
        raise WriteToolError(
            f'a tool file named "{name}" was just written by another writer ({target}); '
            'choose another name, or pass "overwrite": true to replace it'
        ) from None
    except OSError as exc:
        sys.modules.pop(module_name, None)
        raise WriteToolError(f"could not write {target}: {exc}") from None
    try:
        store.register(tool, replace=overwrite, module=module_name)
    except Exception as exc:
        sys.modules.pop(module_name, None)
        _restore(target, previous)
        raise WriteToolError(f"could not register tool {name!r}: {exc}") from exc
    logger.info("writeTool wrote %s and registered %s in store %s", target, name, store.name)
    verb = "replaced" if existed else "created"
    return AgentToolResult.text(
        f'Tool "{name}" {verb} ({target.name}) and registered; you can call it now.',
        details={"name": name, "path": str(target), "overwritten": existed},
        added_tool_names=[name],
    )


# ── checks ───────────────────────────────────────────────────────────────


def _check_name(name: object) -> str:
    if not isinstance(name, str) or not name:
        raise WriteToolError("name is required: a Python identifier such as searchWine")
    try:
        check_tool_name(name)
    except ConfigError as exc:
        raise WriteToolError(str(exc)) from None
    if not name.isidentifier() or not name.isascii():
        raise WriteToolError(
            f"invalid tool name {name!r}: use a Python identifier (letters, digits and '_', "
            "not starting with a digit)"
        )
    if keyword.iskeyword(name) or keyword.issoftkeyword(name):
        raise WriteToolError(f"invalid tool name {name!r}: it is a Python keyword")
    if name in _BUILTIN_NAMES:
        raise WriteToolError(f"{name!r} is a built-in tool and cannot be replaced")
    if not is_tool_file(Path(f"{name}.py")):
        raise WriteToolError(
            f"invalid tool name {name!r}: load_dir skips files starting with '_' or "
            "containing 'registry', so the tool would vanish on the next load; "
            "choose another name"
        )
    return name


def _check_size(args: dict[str, Any]) -> None:
    size = sum(
        len(value)
        for key in ("executeCode", "imports", "validateCode", "prepareCode", "description")
        if isinstance(value := args.get(key), str)
    )
    schema = args.get("inputSchema")
    if isinstance(schema, dict):
        with contextlib.suppress(TypeError, ValueError):  # reported by the schema check
            size += len(json.dumps(schema, default=str))
    if size > MAX_CODE_CHARS:
        raise WriteToolError(
            f"the tool's code and schema are {size} characters; the limit is "
            f"{MAX_CODE_CHARS}: write a smaller tool"
        )


def _check_not_shadowing(name: str, target: Path) -> None:
    """Refuse a name that is an importable module's: `json.py` in a folder on `sys.path`
    (the working folder, a script's folder) would shadow it for every Python started there."""
    shadowed = name in sys.stdlib_module_names or name in sys.builtin_module_names
    if not shadowed:
        try:
            spec = importlib.util.find_spec(name)
        except (ImportError, ValueError):
            spec = None
            shadowed = name in sys.modules
        if spec is not None:
            origin = spec.origin
            shadowed = origin is None or Path(origin).resolve() != target
    if shadowed:
        raise WriteToolError(
            f"invalid tool name {name!r}: it is the name of an importable Python module, "
            f"and {name}.py would shadow it; choose another name (e.g. {name}Tool)"
        )


def _check_overwritable(store: ToolStore, name: str, target: Path) -> None:
    """Overwrite only what writeTool wrote: the file carries `WRITTEN_MARK`, and the
    registered tool of that name (if any) was loaded from that very file."""
    if target.exists():
        first = _first_line(target)
        if first != WRITTEN_MARK:
            raise WriteToolError(
                f"refusing to overwrite {target.name}: writeTool did not write it (only files "
                "it wrote are replaced); choose another name"
            )
    registered = store.get(name)
    if registered is None:
        return
    code = getattr(registered.execute, "__code__", None)
    source = getattr(code, "co_filename", None)
    if not target.exists() or source is None or Path(source).resolve() != target:
        raise WriteToolError(
            f'refusing to replace the tool "{name}": it was not written by writeTool; '
            "choose another name"
        )


def _check_input_schema(schema: object) -> dict[str, Any]:
    if not isinstance(schema, dict):
        raise WriteToolError("inputSchema must be a JSON object (a JSON Schema)")
    if "type" not in schema:
        schema = {"type": "object", **schema}
    if schema.get("type") != "object":
        raise WriteToolError(
            "inputSchema must describe the arguments object, not one value: e.g. "
            + json.dumps(_object_example(schema))
        )
    try:
        check_schema(schema)
    except ConfigError as exc:
        raise WriteToolError(str(exc)) from None
    return schema


def _object_example(schema: dict[str, Any]) -> dict[str, Any]:
    """The arguments object a one-value schema probably meant, for the error text: each name
    it lists in `required` (else "value") a property of its type."""
    kind = schema.get("type") if isinstance(schema.get("type"), str) else "string"
    required = schema.get("required")
    names = [n for n in required if isinstance(n, str)] if isinstance(required, list) else []
    names = names or ["value"]
    return {
        "type": "object",
        "properties": {name: {"type": kind} for name in names},
        "required": names,
    }


def _import_in_isolation(source: str, target: Path, name: str) -> tuple[AgentTool, str]:
    """Run the file's text as a fresh module (unique name); return its `get_tool()` and the
    module's name in `sys.modules` (where it stays while its tool is registered)."""
    module_name = f"_yiemagent_written_tool_{next(_counter)}_{name}"
    module = types.ModuleType(module_name)
    module.__file__ = str(target)
    sys.modules[module_name] = module  # dataclasses and typing look modules up while running
    try:
        code = compile(source, str(target), "exec")
        with no_exit():  # os._exit() in the file's import is its failure, not the program's end
            run_module_code(module, code)  # the documented purpose of writeTool
            tool = module.get_tool()
    except BaseException as exc:
        sys.modules.pop(module_name, None)
        if isinstance(exc, KeyboardInterrupt):
            raise
        text = describe_failure(exc) if isinstance(exc, ExitCalled) else exception_summary(exc)
        raise WriteToolError(f"the new tool file failed to import: {text}") from None
    if not isinstance(tool, AgentTool):
        sys.modules.pop(module_name, None)
        raise WriteToolError("get_tool() did not return an AgentTool")
    return tool, module_name


# ── files ────────────────────────────────────────────────────────────────


def _first_line(target: Path) -> str:
    """The first line of `target`, a regular file. Opened without blocking and checked as
    opened, so a named pipe there (opening one to read waits for a writer) or a device is
    refused at once, never read.

    Raises:
        WriteToolError: `target` is no regular file, or cannot be read.
    """
    try:
        fd = os.open(target, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    except OSError as exc:
        raise WriteToolError(f"cannot read {target.name} to check it: {exc}") from None
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise WriteToolError(
            f"refusing to overwrite {target.name}: it is not a regular file (a named "
            "pipe, a device or a folder); choose another name"
        )
    with os.fdopen(fd, "rb") as handle:
        try:
            line = handle.readline(len(WRITTEN_MARK.encode()) + 1)
        except OSError as exc:
            raise WriteToolError(f"cannot read {target.name} to check it: {exc}") from None
    return line.decode("utf-8", errors="replace")


def _restore(target: Path, previous: bytes | None) -> None:
    if previous is None:
        with contextlib.suppress(OSError):
            target.unlink()
    else:
        write_atomically(target, previous)


def _text(args: dict[str, Any], key: str) -> str:
    value = args.get(key)
    return value if isinstance(value, str) else ""
