"""Teams of agents on the command line (DESIGN §17; `docs/teams.md`).

`--agent FILE[:NAME]` (`AgentOption`) loads an agent file for `yiem run`, `chat` and
`batch` (`agent_from_option`); `run_agent` runs one prompt on it with `yiem run`'s
approvals and Ctrl-C (`render.nested_line` shows what sub-agents do).
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import json
import os
import re
import signal as os_signal
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, TypeAlias

import typer

from yiemagent.cli.options import EXIT_INTERRUPTED, EXIT_TERMINATED, run_signals
from yiemagent.types import (
    AgentEndEvent,
    AgentEvent,
    Model,
    PendingApproval,
    ToolApproval,
)

if TYPE_CHECKING:
    from yiemagent.agent import Agent
    from yiemagent.cli.render import EventPrinter, JsonPrinter
    from yiemagent.types import ThinkingLevel

__all__ = [
    "AgentFileFactory",
    "AgentOption",
    "agent_from_option",
    "ask_pending",
    "file_agent",
    "has_guardrails",
    "refuse_agent_flags",
    "refuse_factory",
    "refuse_sampling_with_agent",
    "run_agent",
    "run_agent_file",
    "split_agent_option",
]

AgentOption: TypeAlias = Annotated[
    str | None,
    typer.Option("--agent", help="An agent file (TOML) as FILE or FILE:NAME; see docs/teams.md."),
]


@dataclass(frozen=True, slots=True)
class AgentFileFactory:
    """`make_agent` of `yiem batch --agent FILE.toml[:NAME]`: each task's Agent loaded from
    the file (picklable, so worker processes and Ray workers load their own); agents the
    file gives no model get `model` (provider/id; `vision`: a local server's that reads
    images); `reasoning`, when given, is the entry agent's level over the file's."""

    spec: str
    model: str
    base_url: str | None = None
    max_turns: int = 8
    vision: bool | None = None
    reasoning: ThinkingLevel | None = None

    def __call__(self, task: Any) -> Agent[Any]:
        agent = file_agent(self.spec, self.model, self.base_url, self.vision, self.reasoning)
        agent.max_turns = agent.max_turns or self.max_turns
        agent.session_id = task.session
        return agent


def file_agent(
    spec: str,
    model: str,
    base_url: str | None,
    vision: bool | None = None,
    reasoning: ThinkingLevel | None = None,
) -> Agent[Any]:
    """The agent of `--agent FILE[:NAME]` as a worker builds it from the command's model
    options: agents the file gives no model get `model` with `base_url` (`vision`: a local
    server's model that reads images), and `reasoning`, when given, is the entry agent's
    level over the file's (as `yiem run --reasoning`).

    Raises:
        CliError: a bad model option; ConfigError: a bad agent file.
    """
    from yiemagent.cli.options import resolve_model

    given = resolve_model(model, base_url, None, vision, reasoning is not None)
    agent = agent_from_option(spec, given)
    if reasoning is not None:
        agent.state.reasoning = reasoning
    return agent


def split_agent_option(spec: str) -> tuple[Path, str | None]:
    """`FILE[:NAME]` as the file and the agent's name (a Windows drive's colon stays)."""
    path, sep, name = spec.rpartition(":")
    if sep and path and name and "/" not in name and "\\" not in name and len(path) > 1:
        return Path(path), name
    return Path(spec), None


def run_agent_file(
    spec: str,
    prompt: str,
    model: Model,
    printer: EventPrinter | JsonPrinter,
    *,
    yes: bool,
    max_turns: int,
    flags: dict[str, Any],
    load_model: Callable[[Model], None],
    reasoning: ThinkingLevel | None = None,
    warn: Callable[[str], None] | None = None,
) -> tuple[str, str | None]:
    """`yiem run --agent FILE[:NAME] PROMPT`: load the file (agents without a model get
    `model`), run the prompt, return the end reason (`yiem run` says the rest;
    "output_closed" when the printer's reader went away, which aborts the run) and, for
    the human printer, the answer still to print: the output as JSON when an agent with
    an output type gave it through its output tool (no text of the run holds it).
    `reasoning` (`--reasoning`), when given, is the entry agent's level over the file's;
    `warn` gets the line saying a level the agent's model cannot use is ignored.

    Raises:
        CliError: another option that the agent file sets (`flags`: option -> value).
        ConfigError: a bad agent file.
    """
    from yiemagent.agent import team_output_tools
    from yiemagent.cli.options import reasoning_ignored
    from yiemagent.cli.render import EventPrinter, output_answer
    from yiemagent.types.output import output_spec

    refuse_factory(spec, "run")
    refuse_agent_flags(spec, flags)
    agent = agent_from_option(spec, model)
    agent.max_turns = agent.max_turns or max_turns
    if reasoning is not None:
        agent.state.reasoning = reasoning
        if (ignored := reasoning_ignored(agent.state.model, reasoning)) and warn is not None:
            warn(ignored)
    if isinstance(printer, EventPrinter):
        printer.hold_text = has_guardrails(agent)  # never show an answer before it passed
        printer.max_tokens = agent.max_tokens  # the file's, named when it cuts an answer off
        typed = output_spec(agent.output_type)
        printer.output_tool = None if typed is None else typed.name
        printer.output_tools = team_output_tools(agent)
    if agent.state.model is not None and agent.state.model.api == "local":
        load_model(agent.state.model)
    printer.on_closed = lambda: agent.abort("output closed")
    ends: list[AgentEndEvent] = []

    def on_event(event: AgentEvent) -> None:
        printer(event)
        if isinstance(event, AgentEndEvent):
            ends.append(event)

    reason = asyncio.run(run_agent(prompt, agent, on_event, yes))
    if printer.closed:
        return "output_closed", None
    return reason, output_answer(ends[-1]) if ends and isinstance(printer, EventPrinter) else None


def refuse_agent_flags(spec: str, flags: dict[str, Any]) -> None:
    """Refuse options that `--agent` sets itself (`flags`: option -> value, falsy when not
    given), rather than leave them unused: the agent file, or the `MODULE:FUNCTION` that
    builds the whole agent, gives the tools and the system prompt.

    Raises:
        CliError: the first option given.
    """
    from yiemagent.cli.options import CliError

    given = [flag for flag, value in flags.items() if value]
    if not given:
        return
    path, _ = split_agent_option(spec)
    if path.suffix == ".toml" or (path.is_file() and path.suffix != ".py"):
        raise CliError(f"{given[0]} does not go with --agent: set it in the agent file")
    raise CliError(f"{given[0]} does not go with --agent {spec}: the function builds the agent")


def refuse_sampling_with_agent(
    spec: str, temperature: float | None, max_tokens: int | None
) -> None:
    """Refuse `--temperature` or `--max-tokens` beside `--agent spec`, as `--system` is: an
    agent file sets them in its tables (`temperature`, `max_tokens`), and a
    `MODULE:FUNCTION` builds its agents whole, so the options would go unused.

    Raises:
        CliError: one of them was given (the text says where to set it instead).
    """
    given = {"--temperature": temperature is not None, "--max-tokens": max_tokens is not None}
    refuse_agent_flags(spec, given)


_MODULE_NAME = re.compile(r"[A-Za-z_]\w*(\.[A-Za-z_]\w*)*")


def refuse_factory(spec: str, command: str) -> None:
    """Refuse `--agent spec` naming a factory (`FILE.py:FUNCTION`, or `MODULE:FUNCTION` of
    a module found from the folder the command runs in or installed) in `yiem command`,
    which takes agent files only.

    Raises:
        CliError: it names one (the text says which commands take it).
    """
    import importlib.machinery

    from yiemagent.cli.options import CliError

    path, name = split_agent_option(spec)
    if name is None:
        return
    if path.suffix != ".py":
        if path.suffix == ".toml" or path.is_file() or not _MODULE_NAME.fullmatch(str(path)):
            return
        top = str(path).split(".")[0]
        if importlib.machinery.PathFinder.find_spec(top, [os.getcwd(), *sys.path]) is None:
            return
    raise CliError(
        f"--agent {spec}: yiem {command} takes an agent file (FILE.toml[:NAME]); a "
        "FILE.py:FUNCTION or MODULE:FUNCTION factory is for yiem batch and yiem eval"
    )


def agent_from_option(spec: str, model: Model | None, **options: Any) -> Agent[Any]:
    """The agent of `--agent FILE[:NAME]`; agents the file gives no model get `model`;
    `options` are further `Agent` arguments for the entry agent (`load_agent`).

    Raises:
        ConfigError: a bad file (one line naming the file, table and key).
    """
    from yiemagent.teams import load_agent

    path, name = split_agent_option(spec)
    return load_agent(path, name, model=model, **options)


def has_guardrails(agent: Agent[Any]) -> bool:
    """Whether `agent` or an agent its handoffs reach has guardrails (the terminal then
    shows an answer only once it has passed them)."""
    seen = [agent]
    for member in seen:
        if member.input_guardrails or member.output_guardrails:
            return True
        seen.extend(h.agent for h in member.handoffs if all(h.agent is not s for s in seen))
    return False


def ask_pending(
    pending: list[PendingApproval],
    *,
    yes: bool,
) -> dict[str, ToolApproval]:
    """A decision for each pending approval (sub-agents' calls name their agent), asked on
    the terminal as `yiem run` does (see `cli.approvals.ask_approvals`)."""
    from yiemagent.cli.approvals import decide

    shown = []
    for item in pending:
        where = f" (in {'›'.join(item.agent_path[1:])})" if item.agent_path else ""
        call = f"{item.tool_name}({json.dumps(item.arguments, ensure_ascii=False)}){where}"
        shown.append((item.tool_call_id, call))
    return decide(shown, yes=yes)


def _decide(agent: Agent[Any], decisions: dict[str, ToolApproval]) -> None:
    """Give `agent` the user's `decisions` on its held calls."""
    for call_id, decision in decisions.items():
        if decision.approved:
            agent.approve(call_id)
        else:
            agent.reject(call_id, decision.reason, by_user=decision.by_user)


async def run_agent(
    prompt: str, agent: Agent[Any], on_event: Callable[[AgentEvent], None], yes: bool
) -> str:
    """Run `prompt` on `agent`, sending each event to `on_event` and asking for held calls
    between runs; Ctrl-C or SIGTERM aborts the run (a second one exits at once), and so it
    does at a question, rejecting the held calls. Returns the end reason of the last run
    ("aborted" when Ctrl-C stopped it; "terminated" when SIGTERM did; `UNAPPROVED` when it
    ended well after a held call went unrun for want of a terminal)."""
    from yiemagent.agent import AgentRunError
    from yiemagent.cli.approvals import UNAPPROVED, QuestionStopped, ask_on_this_thread, stop_held

    loop = asyncio.get_running_loop()
    interrupted = False
    not_asked = False
    stopped_by = "interrupted"
    ends: list[str] = []

    def on_signal(why: str) -> None:
        nonlocal interrupted, stopped_by
        if interrupted:
            sys.stderr.write(f"yiem: {why}\n")
            os._exit(EXIT_INTERRUPTED if why == "interrupted" else EXIT_TERMINATED)
        interrupted, stopped_by = True, why
        agent.abort(why)

    def listen(event: AgentEvent, signal: Any) -> None:
        on_event(event)
        if isinstance(event, AgentEndEvent):
            ends.append(event.reason)

    unsubscribe = agent.subscribe(listen)
    with contextlib.suppress(NotImplementedError, RuntimeError):
        for signum, why in run_signals():
            loop.add_signal_handler(signum, on_signal, why)
    try:
        with contextlib.suppress(AgentRunError):  # the printer has shown why
            await agent.prompt(prompt)
        while agent.pending_approvals and not interrupted:
            question = functools.partial(ask_pending, agent.pending_approvals, yes=yes)
            try:
                decisions = ask_on_this_thread(question)
            except QuestionStopped as stop:  # the run ends as on any other abort
                interrupted, stopped_by = True, stop.reason
                _decide(agent, stop.decided)  # the answers given stand
                with contextlib.suppress(AgentRunError):
                    await stop_held(agent)
                break
            not_asked = not_asked or any(not d.by_user for d in decisions.values())
            _decide(agent, decisions)
            with contextlib.suppress(AgentRunError):
                await agent.resume()
    finally:
        unsubscribe()
        with contextlib.suppress(NotImplementedError, RuntimeError):
            loop.remove_signal_handler(os_signal.SIGINT)
            loop.remove_signal_handler(os_signal.SIGTERM)
        await agent.close()
    if interrupted:
        return "terminated" if stopped_by == "terminated" else "aborted"
    reason = ends[-1] if ends else "error"
    return UNAPPROVED if not_asked and reason == "stop" else reason
