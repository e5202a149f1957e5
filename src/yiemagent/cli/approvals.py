"""`yiem run`'s held tool calls and `--output-schema` (DESIGN §14; docs/approvals.md,
docs/output.md).

`ask_approvals` asks y/n on the terminal for each tool call a run held (or approves all with
`--yes`; without a terminal nobody decides: the calls are not run, and the model and the
user are told why, not that someone refused) and returns the decisions for the continuing
run; `ask_on_this_thread` asks so that Ctrl-C stops the question at once, and
`stop_held` (`yiem run --agent`, `yiem chat`) rejects what the Ctrl-C left held.
`load_output_schema` reads the JSON Schema file of `--output-schema`.
"""

from __future__ import annotations

import json
import signal as os_signal
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from yiemagent.errors import ConfigError
from yiemagent.types import AbortSignal, AgentContext, AgentEvent, OutputSpec, ToolApproval
from yiemagent.types.output import read_schema_file

if TYPE_CHECKING:
    from yiemagent.agent import Agent

__all__ = [
    "NOT_ASKED_ERROR",
    "NO_TERMINAL_REASON",
    "STOPPED_REASON",
    "UNAPPROVED",
    "QuestionStopped",
    "ask_approvals",
    "ask_on_this_thread",
    "load_output_schema",
    "rejected_held_calls",
    "stop_held",
]

NO_TERMINAL_REASON = (
    "it needs approval and nobody can approve it here (no terminal); the user can run the "
    "command again with --yes, or from a terminal, to approve it"
)
"""Why a held call was not run when there is no terminal to ask: the model reads it after
"Tool call not run: " (`ToolApproval.by_user` False)."""

UNAPPROVED = "unapproved"
"""The end of a `yiem run` that left a held call unrun for want of a terminal: the answer
was printed, and the command says so on stderr and exits 1."""

NOT_ASKED_ERROR = (
    "a tool call was not run: it needs approval and there is no terminal to ask; "
    "run again with --yes to approve it, or from a terminal"
)
STOPPED_REASON = "The user stopped the run (Ctrl-C) instead of answering."

T = TypeVar("T")


class QuestionStopped(Exception):
    """Ctrl-C or SIGTERM came while a question waited for its answer."""

    def __init__(self, reason: str, decided: dict[str, ToolApproval] | None = None) -> None:
        super().__init__(reason)
        self.reason = reason
        """"interrupted" (Ctrl-C) or "terminated" (SIGTERM), as the command's abort says."""
        self.decided = decided or {}
        """The answers the user gave before the signal, by tool-call id (`decide`): they
        stand; only the calls not answered yet are rejected as stopped."""


def ask_on_this_thread(question: Callable[[], T]) -> T:
    """Run the terminal `question` (e.g. `ask_approvals`) on the event loop's own thread,
    where Ctrl-C and SIGTERM stop `input()` at once.

    The command's loop handles those signals by flagging an abort. Asked on a worker
    thread, `input()` never saw them: Ctrl-C waited for an Enter, and a second one
    exited without the usage line. Meanwhile the loop is blocked (nothing runs on it
    between a run's end and the next) and does not hear of the signal, so its handler
    does not take it for a first Ctrl-C of the next run.

    Raises:
        QuestionStopped: a signal stopped the question.
    """
    if threading.current_thread() is not threading.main_thread():
        return question()  # signal handlers can be set on the main thread only

    def stop(signum: int, frame: object) -> None:
        raise QuestionStopped("interrupted" if signum == os_signal.SIGINT else "terminated")

    wakeup = os_signal.set_wakeup_fd(-1)
    handlers = {sig: os_signal.signal(sig, stop) for sig in (os_signal.SIGINT, os_signal.SIGTERM)}
    try:
        return question()
    except (KeyboardInterrupt, QuestionStopped) as exc:  # KeyboardInterrupt: an `ask` of its own
        print(file=sys.stderr, flush=True)  # the answer's line, left after the ^C
        if isinstance(exc, QuestionStopped):
            raise QuestionStopped(exc.reason, exc.decided) from None
        raise QuestionStopped("interrupted") from None
    finally:
        for sig, handler in handlers.items():
            if handler is not None:  # None: set outside Python, which cannot be restored
                os_signal.signal(sig, handler)
        os_signal.set_wakeup_fd(wakeup)


def ask_approvals(
    context: AgentContext,
    *,
    yes: bool,
) -> dict[str, ToolApproval]:
    """A decision for each call of the transcript's last assistant message held for approval,
    as `decide` makes it.

    Args:
        context: the run's context after it ended "awaiting_approval".
        yes: approve every held call without asking (`--yes`).
    """
    from yiemagent.loop import held_tool_calls

    held = held_tool_calls(context.messages)
    if held is None:
        return {}
    shown = [
        (call.id, f"{call.name}({json.dumps(call.arguments, ensure_ascii=False)})")
        for call in held[1]
    ]
    return decide(shown, yes=yes)


def rejected_held_calls(
    context: AgentContext, decided: dict[str, ToolApproval] | None = None
) -> dict[str, ToolApproval]:
    """The decisions of a question Ctrl-C stopped: those `decided` (the answers given
    before it) as given, and a rejection (`STOPPED_REASON`) for every other call the run
    held."""
    from yiemagent.loop import held_tool_calls

    held = held_tool_calls(context.messages)
    calls = held[1] if held is not None else []
    stopped = {call.id: ToolApproval(False, STOPPED_REASON) for call in calls}
    return {**stopped, **(decided or {})}


async def stop_held(agent: Agent[Any]) -> None:
    """Reject (`STOPPED_REASON`) every undecided call `agent` holds and let a resume
    write their results (every call answered), aborted as it starts, so the model is not
    called again; its `agent_end` ends the command's output as any aborted run's does."""
    for held in list(agent.pending_approvals):
        if held.decision is None:
            agent.reject(held.tool_call_id, STOPPED_REASON)

    def stop_at_start(event: AgentEvent, signal: AbortSignal) -> None:
        if event.type == "agent_start":
            signal.abort("interrupted by the user (Ctrl-C)")

    unsubscribe = agent.subscribe(stop_at_start)
    try:
        await agent.resume()
    finally:
        unsubscribe()


def decide(
    shown: list[tuple[str, str]],
    *,
    yes: bool,
) -> dict[str, ToolApproval]:
    """A decision for each held call, given as (tool-call id, how the call is shown): all
    approved with `yes` (`--yes`); else asked one after another with `input` when stdin is
    a terminal ("y"/"yes" approves, anything else, an empty line too, rejects); else all
    rejected, as no one can be asked. What was decided is printed to stderr.

    Raises:
        QuestionStopped: Ctrl-C or SIGTERM at a question; its `decided` holds the answers
            given before it.
    """

    def say(text: str) -> None:
        print(text, file=sys.stderr, flush=True)

    ask = input if not yes and sys.stdin is not None and sys.stdin.isatty() else None
    decisions: dict[str, ToolApproval] = {}
    for call_id, call in shown:
        if yes:
            decisions[call_id] = ToolApproval(True)
            say(f"approved (--yes): {call}")
        elif ask is None:
            decisions[call_id] = ToolApproval(False, NO_TERMINAL_REASON, by_user=False)
            say(f"not run: {call}: it needs approval and there is no terminal to ask")
        else:
            try:
                answer = ask(f"Run {call}? [y/N] ")
            except EOFError:
                answer = ""
            except QuestionStopped as stop:
                raise QuestionStopped(stop.reason, decisions) from None
            except KeyboardInterrupt:  # Ctrl-C asked off the main thread
                raise QuestionStopped("interrupted", decisions) from None
            approved = answer.strip().lower() in ("y", "yes")
            decisions[call_id] = ToolApproval(approved, None if approved else "the user said no")
    return decisions


def load_output_schema(path: Path) -> OutputSpec[Any]:
    """The output type of `--output-schema FILE.json`.

    Raises:
        ConfigError: the file is missing, not JSON, or not a valid JSON Schema object.
    """
    try:
        schema = read_schema_file(path)
    except ConfigError as exc:
        raise ConfigError(f"--output-schema {exc}") from None
    try:
        return OutputSpec(schema)
    except ConfigError as exc:
        raise ConfigError(f"--output-schema {path}: {exc}") from None
