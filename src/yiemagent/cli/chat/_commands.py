"""The chat's slash commands (DESIGN §15). Each prints one line or a short list above the
prompt; a command that cannot run now (for example `/undo` during a run) says why in one
line and changes nothing."""

from __future__ import annotations

import difflib
import re
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from rich.table import Table
from rich.text import Text

from yiemagent.cli.options import error_line
from yiemagent.cli.render import counted, one_line, usage_line
from yiemagent.types import (
    AssistantMessage,
    ToolResultMessage,
    UserMessage,
    text_of,
    transcript_usage,
)

if TYPE_CHECKING:
    from yiemagent.cli.chat._host import ChatHost
    from yiemagent.types import Model

__all__ = ["COMMANDS", "dispatch", "is_command", "undo_point"]

_COMMAND = re.compile(r"^/([A-Za-z][\w-]*)(?:\s+(.*))?$", re.DOTALL)

Handler = Callable[["ChatHost", str], None]

_OTHER_NAMES = {"quit": "exit", "q": "exit", "bye": "exit", "reset": "new", "cost": "usage"}
"""What other chats call a command of ours: an unknown command of these names suggests ours."""


def is_command(text: str) -> bool:
    """Whether `text` is a `/word ...` command (anything else is sent to the agent)."""
    return _COMMAND.match(text) is not None


def dispatch(app: ChatHost, text: str) -> None:
    """Run the command in `text`; an unknown one gets a one-line hint."""
    match = _COMMAND.match(text)
    assert match is not None
    name, arg = match.group(1).lower(), (match.group(2) or "").strip()
    entry = COMMANDS.get(name)
    if entry is None:
        close = [_OTHER_NAMES[name]] if name in _OTHER_NAMES else []
        close = close or difflib.get_close_matches(name, COMMANDS, n=1, cutoff=0.75)
        meant = f"did you mean /{close[0]}? " if close else ""
        app.say(f"unknown command /{name}; {meant}/help lists the commands", "yellow")
        return
    if arg and name in _NO_ARGUMENT:
        # ignored, `/undo 3` removed one exchange and `/sessions old` listed them all: a
        # word the command does not read is refused before it does anything
        app.say(f"/{name} takes no argument ({entry[1]}); nothing done", "yellow")
        return
    entry[0](app, arg)


def _idle_only(app: ChatHost, name: str) -> bool:
    if app.busy:
        app.say(f"/{name} waits for the run to finish (Ctrl-C stops it)", "yellow")
        return False
    return True


def _help(app: ChatHost, arg: str) -> None:
    for name, (_handler, usage) in COMMANDS.items():
        line = Text(f"  /{name}", style="bold")
        line.append(f"  {usage}", style="dim")
        app.console.print(line)
    app.say("  Enter while the agent works sends a steering message; Ctrl-C stops the run;")
    app.say("  Ctrl-D (or Ctrl-C twice) on an empty line exits.")


def _answering_agent(entry: Any) -> Any:
    """The agent of `entry`'s team that answers the next prompt (`state.active_agent`),
    found through the handoffs; `entry` when no handoff reaches that name."""
    name = entry.state.active_agent
    seen: set[int] = set()
    queue = [entry]
    while queue:
        agent = queue.pop(0)
        if id(agent) in seen:
            continue
        seen.add(id(agent))
        if agent.name == name:
            return agent
        queue.extend(handoff.agent for handoff in getattr(agent, "handoffs", ()))
    return entry


def _tools(app: ChatHost, arg: str) -> None:
    # The tools of the agent that answers next, with its transfer tools: in a team
    # (`--agent` with handoffs) the entry's own store is often empty: its tools alone would
    # say "no tools" for a router that hands over, or after a handoff to a specialist.
    entry = app.setup.agent
    agent = _answering_agent(entry)
    handoffs = list(getattr(agent, "handoffs", ()))
    if agent is not entry or handoffs:
        app.say(f"{agent.name} answers the next prompt; it can call:")
    rows = [(tool.name, tool.description) for tool in agent.tool_store.tools.values()]
    rows += [(h.tool_name, h.description or getattr(h.agent, "description", "")) for h in handoffs]
    if not rows:
        app.say("no tools")
        return
    for name, description in rows:
        # a grid of one row: a description that wraps goes on under itself, not at the
        # window's edge
        line = Table.grid(padding=(0, 0, 0, 2), pad_edge=True)
        line.add_column(style="cyan bold", no_wrap=True)
        line.add_column(style="dim")
        line.add_row(name, one_line(description or "", 100))
        app.console.print(line)


def _model(app: ChatHost, arg: str) -> None:
    if not arg:
        label = f"{app.setup.model_label}{_served_at(app.setup.model)}"
        app.say(f"model: {label}; /model PROVIDER/ID switches (see yiem models)")
        return
    try:
        model, unused = _switched_model(app, arg)
    except Exception as exc:
        app.say(f"error: {' '.join(str(exc).split())}", "red")
        return
    from yiemagent.cli.chat._loading import load_model
    from yiemagent.cli.chat.setup import context_window, no_key_note

    app.setup.model = model
    app.setup.agent.state.model = model
    if app.setup.compactor is not None:
        app.setup.compactor.model = model
        app.setup.compactor.context_window = context_window(model)
    app.say(f"model: {app.setup.model_label}{_served_at(model)} (from the next prompt)")
    if unused:
        app.say(f"{' and '.join(unused)}: not for {arg}, not used", "yellow")
    if no_key := no_key_note(model):
        app.say(no_key, "yellow")
    import asyncio

    app.ready = asyncio.get_running_loop().create_task(load_model(app))


_LOCAL_SERVERS = ("openai-compatible", "ollama", "azure")
"""The providers whose models `--tool-calls`, `--vision` and `--reasoning` describe (an
Azure deployment's name does not tell its model either)."""


def _switched_model(app: ChatHost, name: str) -> tuple[Model, list[str]]:
    """The model `/model name` switches to, as the chat was started: a local server's model
    with the chat's `--base-url`, `--tool-calls`, `--vision` and `--reasoning`; another
    with `--base-url` unless it is embedded (`local/...`), which takes none of them.
    Returns the model and the options given that it does not take, to say so.

    Raises:
        CliError, ProviderError: as `resolve_model` (an unknown name, a bad URL).
    """
    from yiemagent.cli.options import resolve_model

    options = app.setup.options
    provider = name.partition("/")[0]
    if provider in _LOCAL_SERVERS:
        model = resolve_model(
            name, options.base_url, options.tool_calls, options.vision,
            reasoning=options.reasoning is not None,
        )  # fmt: skip
        return model, []
    vision = "--no-vision" if options.vision is False else "--vision"
    given = {"--tool-calls": options.tool_calls is not None, vision: options.vision is not None}
    if provider == "local":
        given["--base-url"] = options.base_url is not None
    unused = [option for option, set_ in given.items() if set_]
    return resolve_model(name, None if provider == "local" else options.base_url), unused


def _served_at(model: Model) -> str:
    """The words " at URL" for a model served over HTTP (an OpenAI-compatible server's URL is what
    `--base-url` or the provider's default made it, and a wrong one is the usual reason a
    switched model does not answer), else ""; never a password or key in the URL."""
    if not model.base_url:
        return ""
    from yiemagent.cli.stores import without_password

    shown = without_password(model.base_url)
    # a user name alone may be a key too (https://KEY@host): hide the whole user part
    return " at " + re.sub(r"^([\w+.-]+://)[^/@?#]*@", r"\1***@", shown)


def _system(app: ChatHost, arg: str) -> None:
    state = app.setup.agent.state
    if arg:
        state.system_prompt = arg
        app.say("system prompt set (from the next prompt)")
    else:
        app.say(f"system prompt: {state.system_prompt}")


def _clear(app: ChatHost, arg: str) -> None:
    app.app.renderer.clear()


def _usage(app: ChatHost, arg: str) -> None:
    messages = app.setup.agent.state.messages
    answers = sum(isinstance(message, AssistantMessage) for message in messages)
    total = transcript_usage(messages)  # summaries and sub-agents' runs too
    line = usage_line(total, 0).rsplit(" · ", 1)[0]  # no elapsed time for a session
    cost = "" if total.cost.total > 0 else " · $0 (free model)"
    app.say(f"session {app.setup.session_name}: {answers} model calls · {line}{cost}", "")


def _follow(app: ChatHost, arg: str) -> None:
    if not arg:
        app.say("usage: /follow TEXT", "yellow")
        return
    app.follow_up(arg)


def _sessions(app: ChatHost, arg: str) -> None:
    try:
        names = app.setup.sessions.list_sessions()
    except Exception as exc:
        app.say(f"error: {exc}", "red")
        return
    if not names:
        app.say("no stored sessions")
    for name in names:
        mark = " (this chat)" if name == app.setup.session_name else ""
        app.console.print(Text(f"  {name}{mark}"))
    app.say("  open one here with /new NAME, or start with it: yiem chat --session NAME")


def _new(app: ChatHost, arg: str) -> None:
    if not _idle_only(app, "new"):
        return
    from yiemagent.cli.chat.setup import new_session_name

    setup = app.setup
    name = arg or new_session_name(setup.sessions, besides=setup.session_name)
    if name == setup.session_name:
        app.say(f"this chat is session {name} already")
        return

    async def switch() -> None:
        try:
            await app.replace_agent(name)
        except Exception as exc:
            app.say(f"error: {error_line(exc)}", "red")
            return
        setup = app.setup
        app.say(f"new session {name}" if not setup.resumed else f"switched to session {name}")
        for line in setup.resumed_lines():
            app.console.print(line)

    app.begin(switch(), steers=False)  # what is typed meanwhile is for the new session


def undo_point(messages: Sequence[object], steered: Sequence[object] = ()) -> int | None:
    """Where the last exchange starts: the index of the last user message that opened a
    run (a prompt; steering inside a run belongs to that run's exchange), or None.

    Decided by message order and by what the chat sent, never by timestamps (a wall clock
    can step back): a user message after an answer, after nothing, or after tool results
    (a run stopped after its tools: its turn limit, Ctrl-C during a tool) opens a run,
    unless it is one of `steered`, the steering messages this chat queued. Steering sent
    by an earlier chat process (a resumed session) counts as a prompt: `/undo` then takes
    away less than the exchange, never more.
    """
    index = None
    for position in range(len(messages) - 1, -1, -1):
        message = messages[position]
        if isinstance(message, UserMessage):
            index = position
            if message not in steered and _opens_a_run(messages, position):
                return index
    return index


def _opens_a_run(messages: Sequence[object], position: int) -> bool:
    """Whether the message before the user message at `position` leaves room for a prompt:
    nothing, tool results, or an answer that calls no tool."""
    if position == 0:
        return True
    previous = messages[position - 1]
    if isinstance(previous, ToolResultMessage):
        return True
    return isinstance(previous, AssistantMessage) and not previous.tool_calls


def _undo(app: ChatHost, arg: str) -> None:
    if not _idle_only(app, "undo"):
        return
    state = app.setup.agent.state
    messages = list(state.messages)
    cut = undo_point(messages, app.steered)
    if cut is None:
        app.say("nothing to undo")
        return
    removed = messages[cut]
    try:
        state.messages = messages[:cut]  # one rewrite of the stored session
    except Exception as exc:
        app.say(f"error: undo failed, nothing changed: {' '.join(str(exc).split())}", "red")
        return
    text = text_of(removed.content) if isinstance(removed, UserMessage) else ""
    removed_count = counted(len(messages) - cut, "message")
    app.say(f"undone: › {one_line(text, 80)} ({removed_count} removed)")


def _approvals(app: ChatHost, arg: str) -> None:
    if not _idle_only(app, "approvals"):
        return
    held = app.pending_approvals()
    if not held:
        app.say("no tool call waits for approval")
        return
    from yiemagent.cli.chat._view import short_args

    for call in held:
        line = Text(f"  {call.tool_name}({short_args(call.arguments)})", style="bold")
        line.append(f"  {call.tool_call_id}", style="dim")
        app.console.print(line)
    app.ask_held()


def _exit(app: ChatHost, arg: str) -> None:
    app.exit()


COMMANDS: dict[str, tuple[Handler, str]] = {
    "help": (_help, "this list"),
    "tools": (_tools, "the tools the agent can call"),
    "model": (_model, "NAME: switch the model (e.g. /model local/qwen2.5-coder-1.5b)"),
    "system": (_system, "[TEXT]: show or set the system prompt"),
    "follow": (_follow, "TEXT: queue a follow-up for when the agent would stop"),
    "usage": (_usage, "tokens and cost of this session"),
    "sessions": (_sessions, "the stored sessions"),
    "new": (_new, "[NAME]: start a new session (or open NAME)"),
    "undo": (_undo, "remove the last exchange"),
    "approvals": (_approvals, "the tool calls waiting for your approval; asks about them"),
    "clear": (_clear, "clear the screen (the conversation stays)"),
    "exit": (_exit, "leave (as Ctrl-D)"),
}

# the commands that read no argument (the others' usage starts with theirs)
_NO_ARGUMENT = frozenset(
    name for name, (_handler, usage) in COMMANDS.items() if not usage.split()[0].endswith(":")
)
