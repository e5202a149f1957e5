"""What a `yiem chat` talks to: the model, the tools, the stored session and the Agent
(DESIGN §15), built from the command's options before the terminal app starts.

Files live in the user data folder (`data_dir()`): `sessions.db` (an `SqliteSessionStore`,
one session per chat name) and `chat_history` (the input lines, for the up arrow across
chats).

Test-only: `$YIEM_CHAT_FAUX_SCRIPT` names a Python file that defines `faux_model`, a
`yiemagent.ai.providers.faux.FauxModel`; the chat then talks to that scripted model instead of
`--model` (the tmux tests in tests/cli/chat/ use it). Never set it outside tests.
"""

from __future__ import annotations

import contextlib
import importlib
import os
import runpy
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rich.text import Text

from yiemagent.cli.options import DEFAULT_SYSTEM
from yiemagent.cli.render import counted, one_line, shown_in_layout
from yiemagent.errors import ConfigError, ToolLoadError
from yiemagent.types import (
    AgentMessage,
    AssistantMessage,
    Model,
    ThinkingLevel,
    ToolResultMessage,
    UserMessage,
    text_of,
)

if TYPE_CHECKING:
    from yiemagent.agent import Agent
    from yiemagent.cli.chat._approvals import ApprovalGate
    from yiemagent.compaction import Compactor
    from yiemagent.sessions import SqliteSessionStore
    from yiemagent.teams import AgentFile
    from yiemagent.tools import ToolStore

__all__ = [
    "DATA_DIR_ENV",
    "FAUX_SCRIPT_ENV",
    "ChatOptions",
    "ChatSetup",
    "build_setup",
    "check_mcp_available",
    "compactor_for",
    "data_dir",
    "last_exchange",
    "new_session_name",
]

DATA_DIR_ENV = "YIEM_DATA_DIR"
"""Overrides the user data folder (sessions and input history)."""
FAUX_SCRIPT_ENV = "YIEM_CHAT_FAUX_SCRIPT"
"""Test-only: a Python file defining `faux_model` (a `FauxModel`) to chat with."""


def data_dir() -> Path:
    """`$YIEM_DATA_DIR`, else `$XDG_DATA_HOME/yiemagent`, else `~/.local/share/yiemagent`
    (created)."""
    explicit = os.environ.get(DATA_DIR_ENV)
    if explicit:
        folder = Path(explicit)
    else:
        base = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
        folder = Path(base) / "yiemagent"
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise ConfigError(f"cannot create the data folder {folder}: {exc}") from exc
    return folder


@dataclass(slots=True)
class ChatOptions:
    """The `yiem chat` options (see `yiem chat --help`)."""

    model: str
    tools: Path | None = None
    session: str | None = None
    system: str | None = None
    write_tools: Path | None = None
    mcp: list[str] = field(default_factory=list)
    """`--mcp "command args"`: MCP servers to start, each on its own process."""
    mcp_urls: list[str] = field(default_factory=list)
    """`--mcp-url URL`: streamable-HTTP MCP servers to connect to."""
    mcp_timeout_s: float | None = None
    """`--mcp-timeout S`: seconds those servers may stay silent about a call (None: 30)."""
    mcp_max_message_bytes: int | None = None
    """`--mcp-max-message-bytes N`: the largest message those servers may send (None: 64 MiB)."""
    base_url: str | None = None
    tool_calls: str | None = None
    """`--tool-calls MODE`: how a local server's model calls tools (None: its default)."""
    compaction: bool = True
    agent: str | None = None
    """`--agent FILE[:NAME]`: the chat's agent from an agent file."""
    vision: bool | None = None
    """`--vision` (True) or `--no-vision` (False): the local server's model reads images or
    not; None: neither given (the model's default)."""
    reasoning: ThinkingLevel | None = None
    """`--reasoning LEVEL`: the agent's reasoning level (over an agent file's)."""
    temperature: float | None = None
    """`--temperature T`: the agent's sampling temperature (None: the provider's)."""
    max_tokens: int | None = None
    """`--max-tokens N`: the most output tokens of each model call (None: the model's)."""
    max_turns: int = 24
    """`--max-turns N`: the most model calls of one run (an agent file's own value wins)."""


@dataclass(slots=True)
class ChatSetup:
    """The chat's agent and what it needs; `notes` are one-line problems met while building
    it that do not stop the chat (a tool file that failed to load, ...)."""

    options: ChatOptions
    model: Model
    store: ToolStore
    sessions: SqliteSessionStore
    session_name: str
    history_path: Path
    agent: Agent
    gate: ApprovalGate = field(default=None)  # type: ignore[assignment]  # set in build_setup
    compactor: Compactor | None = None
    notes: list[str] = field(default_factory=list)
    keep_history: bool = True
    """Whether the input history is read from and appended to `history_path` (False: it
    could not be opened there; the chat keeps it in memory and said so in `notes`)."""
    keep: Any = None
    """Objects that must outlive the chat (the test-only FauxModel)."""
    resumed: list[AgentMessage] = field(default_factory=list)
    mcp_servers: list[Any] = field(default_factory=list)
    """The `--mcp` servers connected (closed when the chat ends)."""
    mcp_log: Any = None
    """The file the `--mcp` servers' stderr goes to, while they run."""
    agent_file: AgentFile | None = None
    """`--agent FILE`: each session's agent is built from it, on MCP servers started once
    for the chat (a session switch does not restart them)."""

    @property
    def model_label(self) -> str:
        """E.g. "local/qwen2.5-coder-0.5b"."""
        return f"{self.model.provider}/{self.model.id}"

    def resumed_lines(self) -> list[Text]:
        """The last exchange of a resumed session, to print at the start."""
        if not self.resumed:
            return []
        question, answer = last_exchange(self.resumed)
        resumed = counted(len(self.resumed), "message")
        lines = [Text(f"resumed {resumed}; the last exchange:", style="dim")]
        if question:
            lines.append(Text(f"› {question}", style="bold"))
        if answer:  # a model's escape sequences shown, not obeyed, as when it streamed
            lines.append(Text(shown_in_layout(answer)))
        note = last_run_note(self.resumed)
        if note:
            lines.append(Text(note, style="yellow"))
        return lines

    def new_agent(self, session_name: str) -> None:
        """Set the agent to one on session `session_name` (resumed when stored).

        Raises:
            SessionBusyError: another chat (or Agent) is writing that session.
        """
        agent = _make_agent(self, session_name)
        self.agent = agent
        self.session_name = session_name
        self.resumed = list(agent.state.messages)

    async def close(self) -> None:
        """Close the agent (giving its session's writer lease back) and the store."""
        with contextlib.suppress(Exception):
            await self.agent.close()
        if self.agent_file is not None:  # its MCP servers
            with contextlib.suppress(Exception):
                await self.agent_file.close()
        with contextlib.suppress(Exception):
            self.sessions.close()


def new_session_name(sessions: SqliteSessionStore, *, besides: str | None = None) -> str:
    """The name of a new chat's session: `chat-YYYYmmdd-HHMMSS` (local time), with `-2`,
    `-3`, … when a stored session (or `besides`, this chat's own) already has it, so a new
    chat never resumes another's conversation: two chats started in one second, a clock
    set back (the hour a daylight-saving change repeats)."""
    base = time.strftime("chat-%Y%m%d-%H%M%S")
    taken = set(sessions.list_sessions())
    if besides is not None:
        taken.add(besides)
    name, number = base, 1
    while name in taken:
        number += 1
        name = f"{base}-{number}"
    return name


def last_exchange(messages: list[AgentMessage]) -> tuple[str, str]:
    """The last user prompt's text and the text of the last answer after it ("" if none)."""
    question, answer = "", ""
    for message in reversed(messages):
        if isinstance(message, AssistantMessage) and not answer:
            answer = text_of(message.content)
        if isinstance(message, UserMessage):
            content = message.content
            question = content if isinstance(content, str) else text_of(content)
            break
    return question, answer


def last_run_note(messages: list[AgentMessage]) -> str | None:
    """How the session's last run ended, when it ended without an answer: aborted (Ctrl-C
    while the model wrote), failed, or stopped after its prompt or tools (Ctrl-C during a
    tool, the turn limit, a chat that was killed); None when it answered or waits for an
    approval."""
    stopped = "⏹ the last run ended before it answered (stopped, or out of turns)"
    after_results = False
    for message in reversed(messages):
        if isinstance(message, ToolResultMessage):  # an aborted call's result too
            after_results = True
        elif isinstance(message, UserMessage):
            return stopped
        elif isinstance(message, AssistantMessage):
            if message.stop_reason == "aborted":
                return "⏹ the last run was aborted before it answered"
            if message.stop_reason == "error":
                error = one_line(message.error_message or "unknown error", 300)
                return f"✗ the last run failed: {error}"
            return stopped if after_results else None
    return None


def no_key_note(model: Model | None) -> str | None:
    """ "no API key for openai/gpt-4o: set OPENAI_API_KEY ..." when `model`'s API needs a key
    the environment lacks, said when the chat starts and at `/model` rather than by the
    first prompt's error; None when it has one or needs none."""
    from yiemagent.ai.providers import missing_api_key

    variable = None if model is None else missing_api_key(model)
    if model is None or variable is None:
        return None
    return (
        f"no API key for {model.provider}/{model.id}: set {variable} in the environment "
        "(and start the chat again), or every prompt fails"
    )


def _resolve_model(options: ChatOptions) -> tuple[Model, Any]:
    script = os.environ.get(FAUX_SCRIPT_ENV)
    if script:
        namespace = runpy.run_path(script)
        faux = namespace.get("faux_model")
        if faux is None:
            raise ConfigError(f"${FAUX_SCRIPT_ENV} {script}: defines no faux_model")
        return faux.model, faux
    from yiemagent.cli.options import resolve_model

    reasoning = options.reasoning is not None
    return resolve_model(
        options.model,
        options.base_url,
        options.tool_calls,
        vision=options.vision,
        reasoning=reasoning,
    ), None


def _load_tools(options: ChatOptions, model: Model, notes: list[str]) -> ToolStore:
    from yiemagent.cli.options import DEFAULT_TOOLS_DIR, no_tool_files_note
    from yiemagent.tools import ToolStore, offers_list_tools, write_tool_tool
    from yiemagent.tools.builtin import LIST_TOOLS_NAME

    store = ToolStore("chat")
    folders = [options.tools or DEFAULT_TOOLS_DIR]
    if options.write_tools is not None:
        options.write_tools.mkdir(parents=True, exist_ok=True)
        folders.append(options.write_tools)
    for folder in folders:
        if not folder.is_dir():
            raise ConfigError(f"{folder}: not a folder of tool files")
        # a folder the model is to write tools into may well start empty
        wanted = folder == options.tools and folder != options.write_tools
        note = no_tool_files_note(folder) if wanted else None
        if note:
            notes.append(note)
        try:  # each folder adds its tools (a name in two folders is a failure, one line)
            store.load_dir(folder)
        except ToolLoadError as exc:  # the good files are loaded: say which failed, go on
            notes.extend(
                f"tool file {path} failed to load: {reason}" for path, reason in exc.failures
            )
    if not offers_list_tools(model):
        store.unregister(LIST_TOOLS_NAME)
    if options.write_tools is not None:
        store.register(write_tool_tool(store, options.write_tools), replace=True)
    return store


def check_mcp_available(option: str = "--mcp") -> None:
    """Raise `ConfigError` naming `option` (the one the user gave: `--mcp` or `--mcp-url`)
    when this build has no MCP client."""
    from yiemagent.errors import ConfigError

    try:
        importlib.import_module("yiemagent.mcp")
    except ImportError as exc:
        raise ConfigError(f"{option} needs yiemagent's MCP client (yiemagent.mcp): {exc}") from exc


def _history_usable(path: Path, notes: list[str]) -> bool:
    """Whether the input history file can be read and appended to (it is made when
    missing); else a note: the history file (a folder by that name, a file the user cannot
    read) must not stop the chat, whose input line would fail at every key press."""
    try:
        with path.open("ab"), path.open("rb"):
            return True
    except OSError as exc:
        notes.append(f"input history is not kept: {path}: {exc.strerror or exc}")
        return False


def build_setup(options: ChatOptions) -> ChatSetup:
    """Resolve the model, load the tools, open the session store and build the Agent.

    Raises:
        ConfigError, ProviderError: a bad option (one line for the CLI to print).
    """
    from yiemagent.sessions import SqliteSessionStore

    if options.mcp or options.mcp_urls:
        check_mcp_available("--mcp" if options.mcp else "--mcp-url")
    model, keep = _resolve_model(options)
    notes: list[str] = []
    store = _load_tools(options, model, notes)
    folder = data_dir()
    sessions = SqliteSessionStore(folder / "sessions.db")
    name = options.session or new_session_name(sessions)
    setup = ChatSetup(
        options=options,
        model=model,
        store=store,
        sessions=sessions,
        session_name=name,
        history_path=folder / "chat_history",
        keep_history=_history_usable(folder / "chat_history", notes),
        agent=None,  # type: ignore[arg-type]  # set by new_agent below
        notes=notes,
        keep=keep,
    )
    from yiemagent.cli.chat._approvals import ApprovalGate

    setup.gate = ApprovalGate()
    if options.compaction:
        setup.compactor = compactor_for(model)
    try:
        setup.new_agent(name)
        from yiemagent.cli.options import reasoning_ignored

        if ignored := reasoning_ignored(setup.agent.state.model, options.reasoning):
            notes.append(ignored)
        if no_key := no_key_note(setup.agent.state.model):
            notes.append(no_key)
    except Exception:
        if setup.agent_file is not None:  # the MCP servers it started
            import asyncio

            with contextlib.suppress(Exception):
                asyncio.run(setup.agent_file.close())
        sessions.close()
        raise
    return setup


def context_window(model: Model) -> int:
    """The tokens `model` can take: for the embedded model the runtime's window
    (`$YIEMAGENT_LOCAL_N_CTX`, default 8,192), which is smaller than the model's own."""
    if model.api != "local":
        return model.context_window
    from yiemagent.ai.providers.local.runtime import N_CTX, N_CTX_ENV

    try:
        runtime = int(os.environ.get(N_CTX_ENV) or N_CTX)
    except ValueError:
        runtime = N_CTX
    return min(model.context_window, runtime)


def compactor_for(model: Model) -> Compactor:
    """The compactor of `yiem chat` and `yiem serve`: the reserve holds the answer (a
    quarter of the window, or the model's `max_tokens` when more); the system prompt and
    the tools' schemas of each call, tools added since included, are counted by the
    compactor as it runs."""
    from yiemagent.compaction import Compactor, answer_tokens

    window = context_window(model)
    answer = max(window // 4, answer_tokens(model, window))
    return Compactor(model, context_window=window, reserve_tokens=answer)


def _make_agent(setup: ChatSetup, session_name: str) -> Agent:
    from yiemagent.agent import Agent

    options = setup.options
    if options.agent is not None:  # an agent file: its entry agent, on the chat's session
        if setup.agent_file is None:
            from yiemagent.cli.teams import split_agent_option
            from yiemagent.teams import AgentFile

            path, name = split_agent_option(options.agent)
            setup.agent_file = AgentFile(path, name, model=setup.model)
        team = setup.agent_file.build(
            session_store=setup.sessions,
            session_id=session_name,
            transform_context=setup.compactor,
            before_tool_call=setup.gate,
        )
        team.max_turns = team.max_turns or options.max_turns
        if options.reasoning is not None:
            team.state.reasoning = options.reasoning
        setup.store = team.tool_store  # /tools lists the entry agent's tools
        return team
    agent = Agent(
        options.system or DEFAULT_SYSTEM,
        setup.model,
        tool_store=setup.store,
        session_store=setup.sessions,
        session_id=session_name,
        transform_context=setup.compactor,
        before_tool_call=setup.gate,
        max_turns=options.max_turns,
        reasoning=options.reasoning,
        temperature=options.temperature,
        max_tokens=options.max_tokens,
    )
    return agent
