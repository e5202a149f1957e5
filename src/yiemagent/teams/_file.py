"""Agent files: a team of agents described in TOML (DESIGN §17; `docs/teams.md`).

    [agents.router]
    description = "Sends each question to the right specialist."
    system_prompt = "..."
    handoffs = ["billing", "support"]

    [agents.billing]
    model = "openai/gpt-4o-mini"   # default: the embedded model
    tools = ["tools"]              # tool folders, relative to this file

Each `[agents.NAME]` table is one `Agent` named NAME; the first table is the entry agent
unless `name` picks another. Names in `handoffs` and `as_tools` refer to other tables of
the file, so agents may hand over to each other in a cycle. Every problem is one
`ConfigError` whose text names the file, the table and the key.

`load_agent` builds the team once, and each agent owns the MCP servers its table names.
`AgentFile` builds it as often as asked (`yiem serve`: a session's agent for each run) with
the MCP servers started once and shared by all the builds, until `AgentFile.close()`.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import functools
import hashlib
import importlib
import logging
import math
import sys
import threading
import tomllib
from collections.abc import Callable, Coroutine, Mapping
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any

from yiemagent.agent import Agent, Handoff, speaking_agent
from yiemagent.errors import ConfigError, YiemAgentError
from yiemagent.files import import_file, import_function
from yiemagent.types import THINKING_LEVELS, Model, ThinkingLevel, UsageLimits
from yiemagent.types.output import read_schema_file
from yiemagent.types.tools import is_whole_number

if TYPE_CHECKING:
    from yiemagent.mcp import MCPServer
    from yiemagent.tools import ToolStore

__all__ = ["AGENT_KEYS", "MCP_KEYS", "MODEL_KEYS", "AgentFile", "load_agent"]

logger = logging.getLogger(__name__)

AGENT_KEYS = (
    "description",
    "system_prompt",
    "model",
    "tools",
    "mcp",
    "handoffs",
    "as_tools",
    "output_schema",
    "input_guardrails",
    "output_guardrails",
    "max_turns",
    "reasoning",
    "temperature",
    "max_tokens",
    "max_handoffs",
    "return_to_entry",
    "usage_limits",
)
"""The keys an `[agents.NAME]` table may hold."""


class _Problem(Exception):
    """A bad value: the caller adds where it was."""


def load_agent(
    path: str | Path, name: str | None = None, *, model: Model | None = None, **options: Any
) -> Agent[Any]:
    """The entry agent of the agent file at `path`, with every agent it names built.

    Args:
        path: a TOML file with `[agents.NAME]` tables (keys: `AGENT_KEYS`).
        name: the entry agent's table name; default the file's first agent.
        model: the model of agents whose table names none (default: the embedded one).
        options: further `Agent` arguments for the entry agent only (its `session_store`
            and `session_id`, so a server or a chat builds a session's agent from the file;
            hooks); they win over the file's keys.

    Returns:
        The entry `Agent`; the others are reachable through its handoffs and tools.
        MCP servers named in the file are connected and owned by their agent (closed by
        `await agent.close()`).

    Raises:
        ConfigError: the file is missing or not TOML, or a table or key is wrong; the
            message names the file, the table and the key.
    """
    file, tables, entry = _read(path, name)
    return _team(file, tables, entry, model, options, None)


class AgentFile:
    """An agent file read once, whose entry agent is built again for each use, with the
    MCP servers of its tables started once and shared by every agent built.

    For a caller that builds the agent again and again (`yiem serve --agent FILE`: a
    session's agent for each run and approval), where `load_agent` would start the file's
    MCP servers for each build and stop them with each agent: the first `build` starts
    them and lists their tools, every build gets those tools (as they are then: a tool a
    server adds later reaches the builds after it), and `close()` stops them. Closing a
    built agent leaves them running.

    `build` may be called from any thread; the first builds wait for the servers to start.

    Args:
        path: the agent file (see `load_agent`).
        name: the entry agent's table name; default the file's first agent.
        model: the model of agents whose table names none.

    Raises:
        ConfigError: the file is missing or not TOML, or has no such agent.
    """

    def __init__(
        self, path: str | Path, name: str | None = None, *, model: Model | None = None
    ) -> None:
        self._file, self._tables, self._entry = _read(path, name)
        self._model = model
        self._servers = _SharedServers()

    def build(self, **options: Any) -> Agent[Any]:
        """A new entry agent, as `load_agent(path, name, model=model, **options)` returns,
        whose MCP tools call the shared servers (started by the first build).

        Raises:
            ConfigError: a table or key is wrong, or an MCP server did not start (the
                next build tries it again).
        """
        return _team(self._file, self._tables, self._entry, self._model, options, self._servers)

    async def close(self) -> None:
        """Stop the MCP servers; a later `build` starts them again."""
        await self._servers.close()

    async def __aenter__(self) -> AgentFile:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.close()


class _SharedServers:
    """The MCP servers of an `AgentFile`, by table: each table's servers are connected once,
    into a store of their own whose tools each build copies."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._stores: dict[str, ToolStore] = {}
        self._servers: list[MCPServer] = []

    def add_tools(
        self, agent: Agent[Any], table: str, make: Callable[[], list[_ServerSpec]]
    ) -> list[str]:
        """Give `agent` the tools of `table`'s servers (`make()` makes them, once), a
        server's tool replacing the tools-folder tool of the same name (`_connect`).

        Returns:
            One note per tool of the agent replaced.

        Raises:
            ConfigError: two servers share a tool name.
            Exception: what connecting raised (the servers made are closed).
        """
        from yiemagent.tools import ToolStore

        with self._lock:  # builds on several threads start the servers once
            store = self._stores.get(table)
            if store is None:
                servers = make()
                store = ToolStore(f"{table} MCP servers")
                try:
                    _connect(store, servers)
                except BaseException:
                    _run_now(_close_all([server for server, *_ in servers]))
                    raise
                self._servers.extend(server for server, *_ in servers)
                self._stores[table] = store
        notes = []
        for tool in store.tools.values():
            if agent.tool_store.get(tool.name) is not None:
                notes.append(
                    f"its MCP servers' tool {tool.name!r} replaces the tool of that name from "
                    "the tools folder"
                )
            agent.tool_store.register(tool, replace=True)
        return notes

    async def close(self) -> None:
        """Stop every server started; the next `add_tools` starts them again."""
        with self._lock:
            servers, self._servers, self._stores = self._servers, [], {}
        await _close_all(servers)


async def _close_all(servers: list[MCPServer]) -> None:
    for server in reversed(servers):
        await server.close()


def _read(path: str | Path, name: str | None) -> tuple[Path, dict[str, Any], str]:
    """The file, its `[agents.*]` tables and the entry agent's name.

    Raises:
        ConfigError: the file is missing or not TOML, has no agents, or no agent `name`.
    """
    file = Path(path)
    try:
        data = tomllib.loads(file.read_text(encoding="utf-8-sig"))  # a BOM is no statement
    except OSError as exc:
        raise ConfigError(f"{file}: cannot read the agent file: {exc.strerror or exc}") from None
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{file}: not valid TOML: {exc}") from None
    extra = sorted(set(data) - {"agents"})
    if extra:
        raise ConfigError(f"{file}: unknown table or key {extra[0]!r}; put agents in [agents.NAME]")
    tables = data.get("agents")
    if not isinstance(tables, dict) or not tables:
        raise ConfigError(f"{file}: no agents: add an [agents.NAME] table")
    if name is not None and name not in tables:
        raise ConfigError(f"{file}: no agent {name!r}; the file has {', '.join(tables)}")
    return file, tables, name if name is not None else next(iter(tables))


def _team(
    file: Path,
    tables: Mapping[str, Any],
    entry: str,
    model: Model | None,
    options: Mapping[str, Any],
    shared: _SharedServers | None,
) -> Agent[Any]:
    """Every agent of the file built and linked; returns the entry agent. When one fails,
    those built are closed: their MCP servers stop, the entry agent's session is free."""
    agents: dict[str, Agent[Any]] = {}
    try:
        for table, spec in tables.items():
            _check_keys(file, table, spec)
            extra = options if table == entry else {}
            agents[table] = _build(file, table, spec, model, extra, shared)
        for table, spec in tables.items():
            _link(file, table, spec, agents)
    except BaseException:
        for built in agents.values():
            _close_quietly(built)
        raise
    # The entry agent read who answers next from its session before its handoffs were
    # linked, when no handoff reached the agent a transcript names; read it again, so a
    # session built from the file per run (yiem serve) goes on with the agent handed to.
    built = agents[entry]
    built.state.active_agent = speaking_agent(built, built.state.messages)
    return built


def _check_keys(file: Path, table: str, spec: Any) -> None:
    """Raises `ConfigError` unless `[agents.<table>]` is a table of `AGENT_KEYS` only."""
    where = f"{file}: [agents.{table}]"
    if not isinstance(spec, dict):
        raise ConfigError(f"{where}: must be a table of keys")
    for key in spec:
        if key not in AGENT_KEYS:
            raise ConfigError(f"{where} {key}: unknown key; the keys are {', '.join(AGENT_KEYS)}")


def _close_quietly(agent: Agent[Any]) -> None:
    with contextlib.suppress(Exception):
        _run_now(agent.close())


def _build(
    file: Path,
    table: str,
    spec: Mapping[str, Any],
    default: Model | None,
    extra: Mapping[str, Any],
    shared: _SharedServers | None,
) -> Agent[Any]:
    """The `Agent` of `[agents.<table>]` (`spec`), its keys read, `extra` `Agent` arguments
    winning over them, with the tools of its MCP servers (`_add_servers`); its `handoffs`
    and `as_tools` are linked later (`_link`), once every agent exists.

    Raises:
        ConfigError: a bad value or a failed MCP server; the text names the file, the
            table and the key.
    """

    def get(key: str, parse: Callable[[Any], Any], fallback: Any = None) -> Any:
        if key not in spec:
            return fallback
        try:
            return parse(spec[key])
        except (_Problem, ConfigError) as exc:
            raise ConfigError(f"{file}: [agents.{table}] {key}: {exc}") from None

    base = file.parent
    thinks = get("reasoning", _reasoning) is not None  # said again below, in its place
    model = get("model", lambda v: _model(v, thinks), default)
    arguments: dict[str, Any] = {
        "system_prompt": get("system_prompt", _text, "You are a helpful assistant."),
        "model": model,
        "name": table,
        "description": get("description", _text),
        "tools": get("tools", lambda v: _tools(base, v, model)),
        "output_type": get("output_schema", lambda v: _schema(base, v)),
        "input_guardrails": get("input_guardrails", lambda v: _guardrails(base, v)),
        "output_guardrails": get("output_guardrails", lambda v: _guardrails(base, v)),
        "max_turns": get("max_turns", lambda v: _count(v, 1)),
        "reasoning": get("reasoning", _reasoning),
        "temperature": get("temperature", _temperature),
        "max_tokens": get("max_tokens", lambda v: _count(v, 1)),
        "max_handoffs": get("max_handoffs", _count, 10),
        "return_to_entry": get("return_to_entry", _flag, False),
        "usage_limits": get("usage_limits", _limits),
    }
    try:
        agent: Agent[Any] = Agent(**{**arguments, **extra})
    except ConfigError as exc:
        if str(exc).startswith(str(file)):
            raise
        raise ConfigError(f"{file}: [agents.{table}]: {exc}") from None
    if "mcp" in spec:
        _add_servers(file, table, spec["mcp"], agent, shared)
    return agent


def _add_servers(
    file: Path, table: str, value: Any, agent: Agent[Any], shared: _SharedServers | None
) -> None:
    """Give `agent` the tools of the MCP servers its table's `mcp` (`value`) names: servers
    it owns and connects now, or with `shared`, the servers an `AgentFile` keeps.

    Raises:
        ConfigError: a bad `mcp` value, or a server that did not connect (the agent is
            closed first); the text names the file, the table and the key.
    """
    where = f"{file}: [agents.{table}] mcp"

    def make() -> list[_ServerSpec]:
        try:
            return _servers(file.parent, value)
        except (_Problem, ConfigError) as exc:
            raise ConfigError(f"{where}: {exc}") from None

    try:
        if shared is not None:
            notes = shared.add_tools(agent, table, make)
        else:
            servers = make()
            for server, *_ in servers:
                agent.own(server)  # closed with the agent, also when connecting failed
            notes = _connect(agent.tool_store, servers)
    except Exception as exc:
        _close_quietly(agent)  # the servers it owns that started
        if isinstance(exc, ConfigError) and str(exc).startswith(str(file)):
            raise
        raise ConfigError(f"{where}: {exc}") from None
    for note in notes:
        logger.warning("%s: %s", where, note)


def _link(file: Path, table: str, spec: Mapping[str, Any], agents: dict[str, Agent[Any]]) -> None:
    """Resolve `handoffs` and `as_tools`, now that every agent of the file exists."""
    agent = agents[table]
    base = file.parent
    for key in ("handoffs", "as_tools"):
        where = f"{file}: [agents.{table}] {key}"
        items = spec.get(key, [])
        if not isinstance(items, list):
            raise ConfigError(f"{where}: must be a list of agent names")
        try:
            handoffs = [_handoff(base, item, key) for item in items]
        except _Problem as exc:
            raise ConfigError(f"{where}: {exc}") from None
        names = [name for name, _, _ in handoffs]
        for other in names:
            if other not in agents:
                raise ConfigError(f"{where}: no agent {other!r} in the file")
            if other == table:
                raise ConfigError(f"{where}: an agent cannot name itself")
        try:
            if key == "handoffs":
                agent.handoffs = [Handoff(agents[n], d, f) for n, d, f in handoffs]
            else:
                for other in names:
                    agent.tool_store.register(agents[other].as_tool())
        except ConfigError as exc:
            raise ConfigError(f"{where}: {exc}") from None


# ── values ─────────────────────────────────────────────────────────────────


def _handoff(base: Path, item: Any, key: str) -> tuple[str, str | None, Any]:
    """A `handoffs` item: a name, or (handoffs only) a table `{ agent = NAME,
    description = ..., input_filter = "module:function" }`."""
    if isinstance(item, str):
        return item, None, None
    if key != "handoffs" or not isinstance(item, dict):
        raise _Problem("must be a list of agent names")
    unknown = sorted(set(item) - {"agent", "description", "input_filter"})
    if unknown:
        raise _Problem(
            f"unknown key {unknown[0]!r}; a handoff has agent, description, input_filter"
        )
    if not isinstance(item.get("agent"), str):
        raise _Problem("a handoff table needs agent = NAME")
    description = _text(item["description"]) if "description" in item else None
    found = _guardrails(base, item["input_filter"]) if "input_filter" in item else [None]
    return item["agent"], description, found[0]


def _text(value: Any) -> str:
    if not isinstance(value, str):
        raise _Problem(f"must be a string, not {type(value).__name__}")
    return value


def _flag(value: Any) -> bool:
    if not isinstance(value, bool):
        raise _Problem(f"must be true or false, not {value!r}")
    return value


def _reasoning(value: Any) -> ThinkingLevel | None:
    """A reasoning level, or "off" (None: TOML has no null) for no thinking."""
    if value == "off":
        return None
    if not isinstance(value, str) or value not in THINKING_LEVELS:
        raise _Problem(f"must be one of {', '.join(THINKING_LEVELS)} or off, not {value!r}")
    return value


def _temperature(value: Any) -> float:
    """A sampling temperature: a finite number, 0 or more (the Agent's own rule)."""
    if not (
        isinstance(value, int | float)
        and not isinstance(value, bool)
        and math.isfinite(value)
        and value >= 0
    ):
        raise _Problem(f"must be a number >= 0, not {value!r}")
    return float(value)


def _seconds(value: Any, key: str) -> float:
    """A number of seconds above 0, finite, for `key`."""
    if not (
        isinstance(value, int | float)
        and not isinstance(value, bool)
        and math.isfinite(value)
        and value > 0
    ):
        raise _Problem(f"{key} must be a number of seconds > 0, not {value!r}")
    return float(value)


def _count(value: Any, least: int = 0) -> int:
    """A whole number of at least `least` (the Agent's own bound, so that the file's
    message states the rule the Agent would apply)."""
    if not is_whole_number(value, least):
        raise _Problem(f"must be a whole number >= {least}, not {value!r}")
    return value


def _strings(value: Any) -> list[str]:
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise _Problem("must be a string or a list of strings")
    return value


MODEL_KEYS = ("name", "base_url", "vision", "tool_calls")
"""The keys of a `model` table: `get_model`'s arguments."""


def _model(value: Any, thinks: bool) -> Model:
    """`"provider/id"`, or a table of `get_model`'s arguments: `name` ("provider/id"),
    `base_url`, `vision` (a local server's model reads images) and `tool_calls`. A local
    server's model (`ollama/…`, `openai-compatible/…`) is taken to think when the agent
    has a reasoning level (`thinks`), as `yiem run --reasoning` takes it: nothing else says."""
    from yiemagent.ai.models import get_model

    spec: dict[str, Any] = {"name": value} if isinstance(value, str) else value
    if not isinstance(spec, dict):
        raise _Problem(f'must be "provider/id" or a table with keys {", ".join(MODEL_KEYS)}')
    for key in spec:
        if key not in MODEL_KEYS:
            raise _Problem(f"unknown key {key!r}; the keys are {', '.join(MODEL_KEYS)}")
    if "name" not in spec:
        raise _Problem('a model table needs name = "provider/id"')
    name = _text(spec["name"])
    local = name.partition("/")[0] in ("ollama", "openai-compatible")
    calls: Any = _text(spec["tool_calls"]) if "tool_calls" in spec else None  # get_model checks
    try:
        return get_model(
            name,
            base_url=_text(spec["base_url"]) if "base_url" in spec else None,
            tool_calls=calls,
            vision=_flag(spec["vision"]) if "vision" in spec else None,
            reasoning=thinks and local,
        )
    except (YiemAgentError, KeyError, ValueError) as exc:
        # a KeyError's str() is its argument's repr: give the text, not its quotes
        text = exc.args[0] if isinstance(exc, KeyError) and exc.args else exc
        raise _Problem(" ".join(str(text).split())) from None


def _tools(base: Path, value: Any, model: Model | None) -> Any:
    """A store of the tools in the `tools` folders (`value`, relative to `base`), with
    `listTools` only when `model` is offered it (`offers_list_tools`)."""
    from yiemagent.tools import ToolStore, offers_list_tools
    from yiemagent.tools.builtin import LIST_TOOLS_NAME

    store = ToolStore("agent-file")
    for folder in _strings(value):
        directory = base / folder
        if not directory.is_dir():
            raise _Problem(f"{directory} is not a folder")
        try:
            store.load_dir(directory)
        except Exception as exc:
            raise _Problem(f"{directory}: {exc}") from None
    if not offers_list_tools(model):
        store.unregister(LIST_TOOLS_NAME)
    return store


def _schema(base: Path, value: Any) -> dict[str, Any]:
    if isinstance(value, str):
        try:
            return read_schema_file(base / value)
        except ConfigError as exc:
            raise _Problem(str(exc)) from None
    if not isinstance(value, dict):
        raise _Problem("must be a JSON Schema (a table) or the path of a JSON file")
    return value


def _guardrails(base: Path, value: Any) -> list[Any]:
    """Each `module:function` of `value` (guardrails, input filters), imported."""
    found = []
    for ref in _strings(value):
        if str(base) not in sys.path:
            sys.path.insert(0, str(base))  # modules beside the file import as they are
        try:
            found.append(import_function(ref, functools.partial(_import_beside, base)))
        except ImportError as exc:
            raise _Problem(str(exc)) from None
    return found


def _import_beside(base: Path, module_name: str) -> ModuleType:
    """The module `module_name` of an agent file in folder `base`: one beside the file (a
    `.py` file or a package folder) is loaded from there under a name of its own, so two
    files' `guards.py` are two modules, not the first one twice from `sys.modules`; any
    other name is imported as usual.

    Raises:
        ImportError: it cannot be found; whatever its own code raised (`import_function`
            says it in one line).
    """
    top, _, rest = module_name.partition(".")
    folder = base / top
    path = folder / "__init__.py" if (folder / "__init__.py").is_file() else base / f"{top}.py"
    if not path.is_file():
        return importlib.import_module(module_name)
    digest = hashlib.sha256(str(path.resolve()).encode()).hexdigest()[:16]
    unique = f"_yiemagent_agent_file_{digest}_{top}"
    module = sys.modules.get(unique)
    if module is None:
        module = import_file(path, unique, package=path.name == "__init__.py")
    return importlib.import_module(f"{unique}.{rest}") if rest else module


def _limits(value: Any) -> UsageLimits:
    if not isinstance(value, dict):
        raise _Problem("must be a table, e.g. { max_total_tokens = 20000 }")
    known = [f.name for f in dataclasses.fields(UsageLimits)]
    unknown = [key for key in value if key not in known]
    if unknown:  # UsageLimits(**value) would say "__init__() got an unexpected keyword"
        raise _Problem(f"unknown limit {unknown[0]!r}; the limits are {', '.join(known)}")
    return UsageLimits(**value)


MCP_KEYS = ("command", "url", "prefix", "timeout_s", "max_message_bytes", "requires_approval")
"""The keys of an `mcp` item given as a table: a `command` or a `url`, a `prefix`,
`timeout_s`, the seconds the server may stay silent about a call, `max_message_bytes`,
the largest message it may send (`MCPServerStdio`'s), and `requires_approval`, true or
the names of its tools whose calls wait for a person's decision (`add_server`'s)."""

_ServerSpec = tuple["MCPServer", str | None, bool | list[str]]
"""An `mcp` server of an agent file: the server, its prefix, its `requires_approval`."""

_KEEP_BOTH = (
    'to keep both, give one of the servers a prefix: { command = "...", prefix = "..." } '
    "(or url = ...)"
)
"""How an agent file keeps both tools of a name two of its servers share."""


def _servers(base: Path, value: Any) -> list[_ServerSpec]:
    """The `mcp` servers, each with its prefix: an item is a command, an `http(s)://` URL,
    or a table of `MCP_KEYS`. A command runs in the file's folder, so `python server.py`
    beside the file works from anywhere, as `tools` folders relative to it do."""
    from yiemagent.mcp import MCPServerHTTP, MCPServerStdio
    from yiemagent.mcp.servers import DEFAULT_MAX_MESSAGE_BYTES, DEFAULT_TIMEOUT_S

    items = [value] if isinstance(value, (str, dict)) else value
    if not isinstance(items, list):
        raise _Problem("must be a server command or URL, a table, or a list of them")
    servers: list[_ServerSpec] = []
    for item in items:
        prefix, silence_s, size = None, DEFAULT_TIMEOUT_S, DEFAULT_MAX_MESSAGE_BYTES
        held: bool | list[str] = False
        if isinstance(item, dict):
            unknown = sorted(set(item) - set(MCP_KEYS))
            if unknown:
                raise _Problem(f"unknown key {unknown[0]!r}; a server has {', '.join(MCP_KEYS)}")
            if ("command" in item) == ("url" in item):
                raise _Problem("a server table needs command = ... or url = ..., not both")
            prefix = _text(item["prefix"]) if "prefix" in item else None
            if "timeout_s" in item:
                silence_s = _seconds(item["timeout_s"], "timeout_s")
            if "max_message_bytes" in item:
                size = item["max_message_bytes"]
                if not is_whole_number(size, 1):
                    raise _Problem(f"max_message_bytes must be a whole number >= 1, not {size!r}")
            if "requires_approval" in item:
                held = item["requires_approval"]
                if not isinstance(held, bool) and not (
                    isinstance(held, list) and all(isinstance(name, str) for name in held)
                ):
                    raise _Problem(
                        "requires_approval must be true, false or a list of tool names, "
                        f"not {held!r}"
                    )
            if "url" in item and not _text(item["url"]).startswith(("http://", "https://")):
                raise _Problem(f"url must start with http:// or https://, not {item['url']!r}")
            item = _text(item.get("command", item.get("url")))
        elif not isinstance(item, str):
            raise _Problem("must be a server command or URL, a table, or a list of them")
        if item.startswith(("http://", "https://")):
            http = MCPServerHTTP(item, timeout_s=silence_s, max_message_bytes=size)
            servers.append((http, prefix, held))
        elif item.strip():
            # a ConfigError: an unclosed quote
            server = MCPServerStdio(item, cwd=base, timeout_s=silence_s, max_message_bytes=size)
            servers.append((server, prefix, held))
        else:
            raise _Problem("an empty server command")
    return servers


def _connect(store: ToolStore, servers: list[_ServerSpec]) -> list[str]:
    """Connect `servers` into `store` by `add_servers`' rule (their connections run on threads
    of their own); returns the notes of the tools replaced."""
    from yiemagent.mcp import add_servers

    notes: list[str] = []
    pairs = [(server, prefix) for server, prefix, _ in servers]
    held = {server: names for server, _, names in servers}

    async def connect() -> None:
        added = await add_servers(store, pairs, keep_both=_KEEP_BOTH, requires_approval=held)
        notes.extend(added[1])

    _run_now(connect())
    return notes


def _run_now(work: Coroutine[Any, Any, None]) -> None:
    """Run `work` to its end here; from a running event loop, on a helper thread."""
    failure: list[BaseException] = []

    def run() -> None:
        try:
            asyncio.run(work)
        except BaseException as exc:
            failure.append(exc)

    try:
        asyncio.get_running_loop()
    except RuntimeError:
        run()
    else:
        thread = threading.Thread(target=run, name="yiem-agent-file-mcp", daemon=True)
        thread.start()
        thread.join()
    if failure:
        raise failure[0]
