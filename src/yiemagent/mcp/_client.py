"""`add_server`: an MCP server's tools as `AgentTool`s in a `ToolStore` (DESIGN §12).

Each MCP tool keeps its name (with `prefix` if given; characters a provider rejects become
`_`), its description and its input schema as given. A call runs the pipeline as any
tool does (validation, hooks, timeout), then is one `tools/call`:
progress notifications become `on_update`, an abort sends `notifications/cancelled`, and
the answer is converted by `_convert.result_from_mcp` (its text cut at `max_result_chars`).

`notifications/tools/list_changed` refreshes the store: new tools are registered (offered on
the next turn), changed ones replaced, removed ones unregistered; a call to a removed tool
that was already on its way answers "not found".
"""

from __future__ import annotations

import hashlib
import inspect
import logging
import re
import threading
from collections import Counter
from collections.abc import Collection, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Protocol

from yiemagent.errors import ConfigError
from yiemagent.mcp._connection import MCPServer
from yiemagent.mcp._convert import result_from_mcp
from yiemagent.tools.schema import check_schema
from yiemagent.tools.store import ToolStore
from yiemagent.types import AgentTool, AgentToolResult, OnUpdate, TextContent
from yiemagent.types.signal import AbortSignal

if TYPE_CHECKING:
    from mcp.types import Tool

__all__ = [
    "DEFAULT_MAX_RESULT_CHARS",
    "MCPToolCall",
    "MCPToolSource",
    "add_server",
    "add_servers",
    "local_tool_name",
]

logger = logging.getLogger(__name__)

_INVALID = re.compile(r"[^A-Za-z0-9_-]")

DEFAULT_MAX_RESULT_CHARS = 100_000
"""The most characters of text an MCP call's result keeps unless `add_server` says
otherwise: about 25,000 tokens, room for a long page or file in any hosted model's context."""


_KEEP_BOTH = "pass prefix=... to add_server to keep both"
"""How a Python caller keeps both tools of a name two sources share: the end of the clash
message of `add_server`."""


class _Owner(Protocol):
    """An object that holds a `tool_store` and can own servers (the `Agent`)."""

    tool_store: ToolStore

    def own(self, resource: MCPServer) -> None: ...


def local_tool_name(name: str, prefix: str | None) -> str:
    """The store name of MCP tool `name`: `prefix_name`, a valid tool name.

    Characters outside `[A-Za-z0-9_-]` become `_`; a name longer than 64 characters is cut
    and ends with 8 hex digits of its hash, so distinct long names stay distinct.
    """
    if prefix:
        name = prefix + name if prefix.endswith(("_", "-")) else f"{prefix}_{name}"
    name = _INVALID.sub("_", name) or "_"
    if len(name) > 64:
        digest = hashlib.sha256(name.encode()).hexdigest()[:8]
        name = f"{name[:55]}_{digest}"
    return name


def _distinct_local_names(names: Sequence[str], prefix: str | None) -> list[str]:
    """`local_tool_name` of each of `names`, except that names alike once made valid
    (`搜索` and `读取` are both `__`; `search.v1` is the `search_v1` a server may also list)
    each end with 8 hex digits of a hash of the server's own name for the tool: every tool
    stays offered, under a name that does not depend on the listing's order."""
    local = [local_tool_name(name, prefix) for name in names]
    counts = Counter(local)
    out: list[str] = []
    for name, made in zip(names, local, strict=True):
        if counts[made] > 1:
            digest = hashlib.sha256(name.encode()).hexdigest()[:8]
            made = f"{made[:55]}_{digest}"
        out.append(made)
    return out


_CLASHES_SHOWN = 3
"""How many clashing tools a clash message names; the rest it counts, so that a server
added twice (every tool clashing) is still one readable line."""


def _source_of(tool: AgentTool) -> str:
    """Where an existing tool came from, for a clash message."""
    if isinstance(tool.execute, MCPToolCall):
        return f"{tool.execute.source.server.label} (its tool {tool.execute.remote_name!r})"
    try:
        path = inspect.getsourcefile(inspect.unwrap(tool.execute))
    except (TypeError, ValueError):
        path = None
    return f"{path}" if path else f"a tool registered as {tool.name!r}"


class MCPToolSource:
    """One `add_server` binding: which store, which server, which names it registered.

    Thread-safety: `sync` runs on the connection's thread (list_changed) or the caller's;
    the store swaps its dict under its own lock, and `_names` is guarded here.
    """

    def __init__(
        self,
        store: ToolStore,
        server: MCPServer,
        prefix: str | None,
        *,
        parallel: bool,
        timeout_s: float | None,
        max_result_chars: int | None = None,
        requires_approval: bool | frozenset[str] = False,
    ) -> None:
        self.store = store
        self.server = server
        self.prefix = prefix
        self.parallel = parallel
        self.timeout_s = timeout_s
        self.max_result_chars = max_result_chars
        self.requires_approval = requires_approval
        self._lock = threading.Lock()
        self._tools: dict[str, AgentTool] = {}  # local name -> the AgentTool we registered
        self.remove_listener = lambda: None

    @property
    def names(self) -> list[str]:
        """The store names this binding registered, in the server's order."""
        return list(self._tools)

    def build(self, tools: Sequence[Tool]) -> dict[str, AgentTool]:
        """AgentTools for the server's tools; a tool with an unusable schema is left out,
        with a warning (the SDK's listing has left out those it would refuse)."""
        built: dict[str, AgentTool] = {}
        names = _distinct_local_names([remote.name for remote in tools], self.prefix)
        for remote, name in zip(tools, names, strict=True):
            schema = dict(remote.input_schema or {"type": "object"})
            try:
                check_schema(schema, what="its input schema")
                if remote.output_schema is not None:  # else each call fails on it in the SDK
                    check_schema(dict(remote.output_schema), what="its output schema")
                if schema.get("type", "object") != "object":
                    raise ConfigError(
                        f"its input schema is of type {schema['type']!r}, not 'object': "
                        "a tool's arguments are an object"
                    )
            except ConfigError as exc:
                logger.warning(
                    "%s: leaving out its tool %r: %s", self.server.label, remote.name, exc
                )
                continue
            if name in built:
                logger.warning(
                    "MCP server %s: tools %r map to the same name %r; keeping the first",
                    self.server.name,
                    remote.name,
                    name,
                )
                continue
            built[name] = AgentTool(
                name=name,
                label=remote.title or _annotation_title(remote) or remote.name,
                description=remote.description or "",
                input_schema=schema,
                execute=MCPToolCall(self, remote.name, name),
                parallel=self.parallel,
                timeout_s=self.timeout_s,
                requires_approval=self._held(remote.name),
            )
        return built

    def _held(self, remote_name: str) -> bool:
        """Whether the server's tool `remote_name` holds its calls for approval."""
        if isinstance(self.requires_approval, bool):
            return self.requires_approval
        return remote_name in self.requires_approval

    def register(
        self,
        tools: Sequence[Tool],
        *,
        replacing: Collection[str] = (),
        keep_both: str = _KEEP_BOTH,
    ) -> list[str]:
        """First registration: all or nothing. A tool whose name is in `replacing` replaces
        the store's tool of that name; any other name already in the store is a clash.

        Returns:
            The names of the store's tools replaced.

        Raises:
            ConfigError: a clash; the text names both sources and ends with `keep_both`.
        """
        built = self.build(tools)
        with self._lock:
            taken = self.store.tools
            clashes = [
                f"{name!r} (from {self.server.label}) is already registered "
                f"from {_source_of(taken[name])}"
                for name in built
                if name in taken and name not in replacing
            ]
            if clashes:
                shown = clashes[:_CLASHES_SHOWN]
                if len(clashes) > len(shown):
                    shown.append(f"and {len(clashes) - len(shown)} more of its tools likewise")
                raise ConfigError(
                    f"cannot add {self.server.label} to store {self.store.name!r}: "
                    f"tool {'; '.join(shown)}; {keep_both}"
                )
            replaced = [name for name in built if name in taken]
            for tool in built.values():
                self.store.register(tool, replace=tool.name in replaced)
            self._tools = built
        return replaced

    def sync(self, tools: Sequence[Tool]) -> None:
        """After a refresh: add new tools, replace changed ones, drop removed ones. A new
        name taken by a tool from elsewhere is skipped (logged), never replaced."""
        built = self.build(tools)
        with self._lock:
            for name, old in list(self._tools.items()):
                if name not in built and self.store.get(name) is old:
                    self.store.unregister(name)
            kept: dict[str, AgentTool] = {}
            for name, tool in built.items():
                current = self.store.get(name)
                if current is not None and current is not self._tools.get(name):
                    logger.warning(
                        "MCP server %s: new tool %r clashes with %s; not registered",
                        self.server.name,
                        name,
                        _source_of(current),
                    )
                    continue
                previous = self._tools.get(name)
                if previous is not None and _same(previous, tool):
                    kept[name] = previous
                    continue
                self.store.register(tool, replace=True)
                kept[name] = tool
            self._tools = kept
        logger.info(
            "MCP server %s: %d tools in store %s", self.server.name, len(kept), self.store.name
        )

    def offers(self, name: str) -> bool:
        """Whether the store name `name` is still one of this binding's tools."""
        return name in self._tools


def _annotation_title(tool: Tool) -> str | None:
    annotations = tool.annotations
    return annotations.title if annotations is not None else None


def _same(a: AgentTool, b: AgentTool) -> bool:
    return (a.label, a.description, a.input_schema) == (b.label, b.description, b.input_schema)


class MCPToolCall:
    """The `execute` of a tool from an MCP server: one `tools/call` of `remote_name`.
    Its `source` and `remote_name` tell a clash message where the tool came from."""

    def __init__(self, source: MCPToolSource, remote_name: str, local_name: str) -> None:
        self.source = source
        """The `add_server` binding that registered the tool."""
        self.remote_name = remote_name
        """The tool's name on the server."""
        self.local_name = local_name
        """The tool's name in the store (with the prefix, made valid)."""

    async def __call__(
        self, tool_call_id: str, args: dict[str, Any], signal: AbortSignal, on_update: OnUpdate
    ) -> AgentToolResult:
        source, server = self.source, self.source.server
        if not source.offers(self.local_name):
            available = ", ".join(source.store.tools) or "none"
            raise LookupError(  # the pipeline makes it the call's error result
                f'Tool "{self.local_name}" not found: {server.label} no longer offers it. '
                f"Available tools: {available}"
            )

        def on_progress(progress: float, total: float | None, message: str | None) -> None:
            if message:
                text = message
            elif total:
                text = f"{progress:g}/{total:g}"
            else:
                text = f"{progress:g}"
            details = {"progress": progress, "total": total, "message": message}
            on_update(AgentToolResult([TextContent(text)], details))

        result = await server.call_tool(
            self.remote_name, args, signal=signal, on_progress=on_progress
        )
        return result_from_mcp(result, self.remote_name, max_chars=source.max_result_chars)


async def add_server(
    target: ToolStore | _Owner,
    server: MCPServer,
    prefix: str | None = None,
    *,
    parallel: bool = True,
    timeout_s: float | None = None,
    max_result_chars: int | None = DEFAULT_MAX_RESULT_CHARS,
    requires_approval: bool | Collection[str] = False,
) -> list[str]:
    """Connect `server` (if needed) and register its tools in a store.

    Args:
        target: a `ToolStore`, or an `Agent`: its `tool_store` gets the tools and the agent
            owns the server, closing it in `Agent.close()`.
        server: an `MCPServerStdio` or `MCPServerHTTP`.
        prefix: registered names become `prefix_name` (avoids clashes between servers).
        parallel: whether the tools may run beside others in a parallel batch; an
            MCP server answers concurrent requests, so the default is True.
        timeout_s: each call's timeout (`AgentTool.timeout_s`); default: the run's
            `tool_timeout_s`.
        max_result_chars: the most characters of text a call's result keeps; the rest is
            cut, with a note saying how much there was (None: no limit). A result larger
            than the model's context would fail every later model call of the session.
        requires_approval: hold calls for a person's decision (`docs/approvals.md`): True
            for every tool of the server, or the names of those that need it, as the server
            names them (before `prefix`).

    Returns:
        The registered tool names, in the server's order.

    Raises:
        ConfigError: the `mcp` extra is missing, `prefix` or `max_result_chars` is
            invalid, `requires_approval` names a tool the server has not, or a tool name
            is already in the store (the text names both sources; nothing is registered).
            A server this call connected is closed again; one connected before stays so.
        MCPConnectionError: the server could not be started or did not answer in time.
    """
    _check_prefix(prefix)
    if max_result_chars is not None and max_result_chars < 1:
        raise ConfigError(f"max_result_chars must be >= 1 or None, not {max_result_chars!r}")
    held = _held_names(requires_approval)
    owner = None if isinstance(target, ToolStore) else target
    store = target if isinstance(target, ToolStore) else target.tool_store
    if not isinstance(store, ToolStore):
        raise ConfigError(f"add_server needs a ToolStore or an Agent, got {type(target).__name__}")
    opened = not server.connected
    await server.connect()
    try:
        _check_held(held, server)
        source = MCPToolSource(
            store,
            server,
            prefix,
            parallel=parallel,
            timeout_s=timeout_s,
            max_result_chars=max_result_chars,
            requires_approval=held,
        )
        source.register(server.tools)
    except ConfigError:
        if opened:  # nothing owns it yet: its process or session would outlive the error
            await server.close()
        raise
    source.remove_listener = server.add_tools_listener(source.sync)
    if owner is not None:
        owner.own(server)
    logger.info(
        "MCP server %s: %d tools added to store %s", server.name, len(source.names), store.name
    )
    return source.names


async def add_servers(
    store: ToolStore,
    servers: Sequence[tuple[MCPServer, str | None]],
    *,
    keep_both: str,
    replacing: Collection[str] | None = None,
    requires_approval: Mapping[MCPServer, bool | Collection[str]] | None = None,
) -> tuple[list[str], list[str]]:
    """Connect `servers` in order and register their tools in `store`, by the rule of every
    place that names MCP servers for an agent (an agent file's `mcp`, `yiem run`, `chat` and
    `serve`'s `--mcp`): naming a server asks for its tools, so a server's tool replaces the
    tools-folder tool of the same name; a name two servers share is refused.

    Args:
        store: the agent's tools so far (its tools folder's).
        servers: each server with its `prefix` (None: none).
        keep_both: the end of the clash message: how to keep both tools where the servers
            were named (an agent-file key; `add_server`'s says to pass `prefix=`).
        replacing: the names a server's tool may replace; default every tool now in `store`.
        requires_approval: by server, the tools whose calls wait for a person's decision,
            as `add_server` takes it (a server not in it holds none).

    Returns:
        The registered tool names, server by server in each server's order; and one note
        per replaced tool: `MCP server "…"'s tool 'x' replaces the tool of that name from
        the tools folder`.

    Raises:
        ConfigError: the `mcp` extra is missing, a prefix is invalid, `requires_approval`
            names a tool its server has not, or two servers share a tool name (nothing of
            that server is registered).
        MCPConnectionError: a server could not be started or did not answer in time.
        The servers connected before a failure stay connected: the caller closes them.
    """
    replaceable = set(store.tools if replacing is None else replacing)
    names: list[str] = []
    notes: list[str] = []
    approvals = requires_approval or {}
    for server, prefix in servers:
        _check_prefix(prefix)
        held = _held_names(approvals.get(server, False))
        await server.connect()
        _check_held(held, server)
        source = MCPToolSource(
            store,
            server,
            prefix,
            parallel=True,
            timeout_s=None,
            max_result_chars=DEFAULT_MAX_RESULT_CHARS,
            requires_approval=held,
        )
        for name in source.register(server.tools, replacing=replaceable, keep_both=keep_both):
            replaceable.discard(name)
            notes.append(
                f"{server.label}'s tool {name!r} replaces the tool of that name from the "
                "tools folder"
            )
        source.remove_listener = server.add_tools_listener(source.sync)
        names.extend(source.names)
    return names, notes


def _held_names(requires_approval: bool | Collection[str]) -> bool | frozenset[str]:
    """`requires_approval` as `MCPToolSource` keeps it: a flag, or the tool names.

    Raises:
        ConfigError: it is a text (a collection of its characters, not a name).
    """
    if isinstance(requires_approval, bool):
        return requires_approval
    if isinstance(requires_approval, str):
        raise ConfigError(
            f"requires_approval is a text, {requires_approval!r}: give a list of tool names"
        )
    return frozenset(requires_approval)


def _check_held(held: bool | frozenset[str], server: MCPServer) -> None:
    """Refuse names of tools the connected `server` has not (a misspelt name would leave
    the tool it meant unguarded).

    Raises:
        ConfigError: naming the unknown names and the server's tools.
    """
    if isinstance(held, bool):
        return
    unknown = sorted(held - {remote.name for remote in server.tools})
    if unknown:
        raise ConfigError(
            f"requires_approval names no tool of {server.label}: "
            + ", ".join(map(repr, unknown))
            + f" (its tools: {', '.join(remote.name for remote in server.tools)})"
        )


def _check_prefix(prefix: str | None) -> None:
    if prefix is not None and (not prefix or _INVALID.search(prefix)):
        raise ConfigError(
            f"prefix must be 1+ characters from A-Z, a-z, 0-9, '_', '-', not {prefix!r}"
        )
