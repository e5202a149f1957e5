"""Showing a run in the terminal: the answer streams to stdout; tool calls, errors and the
usage line go to stderr, so `yiem run ... > answer.txt` keeps only the answer (DESIGN §8).

When the reader of the output goes away (`yiem run ... | head -1`), a printer stops
writing, marks itself `closed` and calls its `on_closed` (the command aborts the run)."""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Callable, Mapping
from typing import IO, TYPE_CHECKING

from rich.console import Console
from rich.markup import escape
from rich.text import Text

from yiemagent.cli.options import silence_closed_output, unwritable_output
from yiemagent.types import (
    AgentEndEvent,
    AgentEvent,
    AssistantMessage,
    MessageEndEvent,
    MessageStartEvent,
    MessageUpdateEvent,
    NestedAgentEvent,
    ToolExecutionEndEvent,
    ToolExecutionStartEvent,
    Usage,
    event_to_dict,
    text_of,
    transcript_usage,
)
from yiemagent.types.text import CUT_OFF, cut_off_note

if TYPE_CHECKING:  # rich's live display loads only when a status line is shown
    from rich.live import Live

__all__ = [
    "CUT_OFF",
    "GUARDRAIL_TEXTS",
    "EventPrinter",
    "JsonPrinter",
    "PipeConsole",
    "counted",
    "cut_off_note",
    "nested_line",
    "one_line",
    "output_answer",
    "output_refused",
    "shown_in_layout",
    "usage_line",
]

_RESULT_CHARS = 200
GUARDRAIL_TEXTS = ("input guardrail ", "output guardrail ")
"""How the error text of a run a guardrail stopped begins."""


def counted(number: int, noun: str) -> str:
    """`number` and `noun` in agreement: "1 tool", "2 tools" (for nouns whose plural takes
    an "s")."""
    if number == 1:
        return f"1 {noun}"
    return f"{number} {noun}s"


_SHOWN = {c: chr(0x2400 + c) for c in range(0x20)} | {0x7F: "\u2421"}
_SHOWN |= {c: "\ufffd" for c in range(0x80, 0xA0)}
"""Control characters as the symbols that show them (ESC as ␛, BEL as ␇, C1 as �):
text a model or a tool wrote is untrusted, and a terminal obeys the escape sequences in
it (clear the screen, move the cursor over lines already printed, retitle the window)."""
_SHOWN_IN_LAYOUT = {c: v for c, v in _SHOWN.items() if chr(c) not in "\n\t"} | {0x0D: ""}
"""The same for text printed as it is: line breaks and tabs kept, a carriage return (which
would let the text write over its own line) dropped."""


def shown_in_layout(text: str) -> str:
    """`text` as a terminal may print it: its control characters shown as symbols (ESC as
    ␛), line breaks and tabs kept, carriage returns dropped. For an answer or thinking
    printed whole on a terminal (`yiem run`, `yiem chat`)."""
    return text.translate(_SHOWN_IN_LAYOUT)


def one_line(text: str, limit: int = _RESULT_CHARS) -> str:
    """`text` on one line, cut to `limit` characters with an ellipsis, its control
    characters shown as symbols (ESC as ␛): such lines show what a model or tool sent."""
    flat = " ".join(text.split()).translate(_SHOWN)
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def _terminal(out: IO[str]) -> bool:
    try:
        return out.isatty()
    except (AttributeError, ValueError):  # no isatty, or a closed file
        return False


def output_answer(end: AgentEndEvent) -> str | None:
    """The run's validated output as JSON text when the answer came through the output
    tool, so that no text shown holds it (as `yiem serve` and `yiem batch` give it); None
    otherwise (no output type, or the final text is the JSON already). A resumed run
    whose held batch gave the output has no assistant message of its own: its output
    came through the tool too."""
    if end.reason != "stop" or end.output is None:
        return None
    from pydantic_core import to_jsonable_python

    last = next((m for m in reversed(end.messages) if isinstance(m, AssistantMessage)), None)
    if last is not None and not last.tool_calls:
        return None
    return json.dumps(to_jsonable_python(end.output), ensure_ascii=False)


def output_refused(result: str) -> str:
    """The line saying the output tool refused an answer, from the tool's error `result`:
    its problem lines (`- $.legs: 'eight' is not of type 'integer'`) when the value did not
    validate, else the result itself, which says why no value was checked (a call cut off
    by the output token limit is no schema problem). The model is asked again, or the run
    ends in error. The output tool is how a typed run hands over its answer, plumbing to a
    user, so a call of it is shown only by this line, when refused."""
    problems = [line[2:].strip() for line in result.splitlines() if line.startswith("- ")]
    if not problems:
        return "✗ the answer was not taken: " + one_line(result, _RESULT_CHARS)
    return "✗ the answer does not match the schema: " + one_line("; ".join(problems), _RESULT_CHARS)


def usage_line(usage: Usage, elapsed_s: float) -> str:
    """E.g. "tokens: 180 in (64 cached), 25 out (12 reasoning) · $0.0003 · 3.41 s" (the
    cached, reasoning and cost parts only when > 0)."""
    cached = f" ({usage.cache_read} cached)" if usage.cache_read else ""
    reasoning = f" ({usage.reasoning} reasoning)" if usage.reasoning else ""
    parts = [f"tokens: {usage.prompt_tokens} in{cached}, {usage.output} out{reasoning}"]
    if usage.cost.total > 0:
        parts.append(f"${usage.cost.total:.4f}")
    parts.append(f"{elapsed_s:.2f} s")
    return " · ".join(parts)


def nested_line(
    event: NestedAgentEvent, output_tools: Mapping[str, str] | None = None
) -> str | None:
    """The rich markup line for a sub-agent's tool call or tripped guardrail, indented by
    its depth and naming the agent; None for its other events. `output_tools` (agent name:
    its output tool's name, `team_output_tools`) marks a typed sub-agent's output tool,
    shown as the entry agent's is: nothing for its call, `output_refused` when it refused
    the answer."""
    inner = event.event
    indent = "  " * (len(event.agent_path) - 1)
    who = f"[magenta]{'›'.join(event.agent_path[1:])}[/]"
    own = (output_tools or {}).get(event.agent_path[-1])
    if isinstance(inner, ToolExecutionStartEvent | ToolExecutionEndEvent) and (
        inner.tool_name == own
    ):
        if isinstance(inner, ToolExecutionEndEvent) and inner.is_error:
            refused = output_refused(text_of(inner.result.content))
            return f"{indent}{who} [yellow]{escape(refused)}[/]"
        return None
    if isinstance(inner, ToolExecutionStartEvent):
        args = json.dumps(inner.args, ensure_ascii=False, default=str)
        return f"{indent}{who} [cyan]→ {escape(inner.tool_name)}[/] {escape(one_line(args))}"
    if isinstance(inner, ToolExecutionEndEvent):
        text = escape(one_line(text_of(inner.result.content) or "(no output)"))
        name = escape(inner.tool_name)
        head = f"[red]✗ {name} error:[/]" if inner.is_error else f"[green]← {name}:[/]"
        return f"{indent}{who} {head} {text}"
    if isinstance(inner, AgentEndEvent) and inner.reason == "guardrail":
        last = next(
            (m for m in reversed(inner.messages) if getattr(m, "role", "") == "assistant"), None
        )
        why = getattr(last, "error_message", None) or "a guardrail tripped"
        return f"{indent}{who} [red]✗ stopped: {escape(one_line(why, 300))}[/]"
    return None


class PipeConsole(Console):
    """A rich `Console` that lets a `BrokenPipeError` through to the printer, where rich's
    own ends the process with exit 1 (after pointing stdout at /dev/null, whichever of
    stdout and stderr broke)."""

    def on_broken_pipe(self) -> None:
        self.quiet = True
        raise BrokenPipeError


class _Printer:
    """What both printers share: they stop at the first write whose reader has gone."""

    closed = False
    """The reader of the output went away; later events are not shown."""
    on_closed: Callable[[], None] | None = None
    """Called once when the printer finds its output closed (to abort the run)."""

    def __call__(self, event: AgentEvent) -> None:
        if self.closed:
            return
        try:
            self._show(event)
        except BrokenPipeError:
            self.closed = True
            silence_closed_output()
            if self.on_closed is not None:
                self.on_closed()
        except OSError as exc:  # a full disk: what is shown would be lost, so stop
            raise unwritable_output(exc) from None

    def _show(self, event: AgentEvent) -> None:
        raise NotImplementedError


class _Waited:
    """The status line's text, `waiting for MODEL… N s`, its seconds counted at each
    redraw."""

    def __init__(self, model: str) -> None:
        self.model = model
        self.since = time.perf_counter()

    def __rich__(self) -> Text:
        seconds = time.perf_counter() - self.since
        return Text(f"waiting for {self.model}… {seconds:.0f} s", style="dim")


class EventPrinter(_Printer):
    """Human output for one run: text deltas as they come, one line per tool call start and
    end (name, arguments, result or error, duration in ms), the usage at the end.

    On a terminal, a model call that has shown nothing yet has a transient status line on
    stderr (a spinner, `waiting for MODEL… N s`): the embedded model may think for many
    seconds before its first word. Any output ends it first, so it never mixes with the
    answer, and it leaves nothing on the screen."""

    def __init__(
        self,
        out: IO[str] | None = None,
        err: Console | None = None,
        *,
        hold_text: bool = False,
        max_tokens: int | None = None,
    ) -> None:
        self.hold_text = hold_text
        """Print an answer only once its message has ended (guardrails may still stop it), instead
        of as it streams."""
        self.max_tokens = max_tokens
        """The run's `--max-tokens` (None: the model's own limit), named when it cuts an
        answer off."""
        self.output_tool: str | None = None
        """The name of the typed run's output tool: its calls show no `→`/`←` lines, only
        `output_refused` for an answer it refused (the answer itself is the output)."""
        self.output_tools: dict[str, str] = {}
        """The output tools of the team's typed sub-agents by agent name
        (`team_output_tools`), shown as `output_tool` is (`nested_line`)."""
        self._out = out or sys.stdout
        self._err = err or PipeConsole(stderr=True, highlight=False, soft_wrap=True, emoji=False)
        self._shown = _terminal(self._out)
        """On a terminal the answer's control characters are shown, not obeyed; into a
        file or a pipe it goes as written."""
        self._started: dict[str, float] = {}
        self._line_open = False
        self._t0 = time.perf_counter()
        self.final: AssistantMessage | None = None
        self.end: AgentEndEvent | None = None
        self._speaker: str | None = None
        self._held_spent = Usage()
        """What runs that stopped on calls held for approval spent: the command's one usage
        line, after the run that follows the decisions, includes it."""
        self._open: set[str] = set()
        """Tool calls (a sub-agent's too) whose `→` line is shown and whose end is not."""
        self._held: set[str] = set()
        """Calls open when a run stopped for approval: the run after the decisions starts
        them again, and their `→` line is already on the screen."""
        self._waiting: Live | None = None
        """The status line of a model call that has shown nothing yet (terminals only)."""

    def _wait_for(self, model: str) -> None:
        """Show that a model call is under way, on a terminal's stderr."""
        if self._waiting is None and self._err.is_terminal and not self._err.is_dumb_terminal:
            from rich.live import Live
            from rich.spinner import Spinner

            # sys.stdout and sys.stderr stay as they are: the command has redirected them
            self._waiting = Live(
                Spinner("dots", text=_Waited(model)),
                console=self._err,
                transient=True,
                refresh_per_second=8,
                redirect_stdout=False,
                redirect_stderr=False,
            )
            self._waiting.start()

    def _waited(self) -> None:
        """Take the status line away (before anything is written)."""
        if self._waiting is not None:
            self._waiting.stop()
            self._waiting = None

    def _break_line(self) -> None:
        if self._line_open:
            self._out.write("\n")
            self._out.flush()
            self._line_open = False

    def _show(self, event: AgentEvent) -> None:
        quiet = isinstance(event, MessageUpdateEvent) and (
            event.assistant_message_event.type not in ("text_delta", "fallback")
        )  # thinking and tool-call arguments: nothing is shown, the wait goes on
        if not quiet:
            self._waited()
        if isinstance(event, MessageUpdateEvent):
            inner = event.assistant_message_event
            if inner.type == "text_delta" and not self.hold_text:
                self._out.write(self._as_shown(inner.delta))
                self._out.flush()
                self._line_open = not inner.delta.endswith("\n")
            elif inner.type == "fallback":  # FallbackModel moved on
                self._break_line()
                who = escape(f"{inner.failed_provider}/{inner.failed_model}")
                why = escape(one_line(inner.error_message))
                self._err.print(f"[yellow]↷ {who} failed ({why}); trying the next model[/]")
        elif isinstance(event, ToolExecutionStartEvent):
            self._break_line()
            self._started[event.tool_call_id] = time.perf_counter()
            if self._shown_again(event.tool_call_id) or event.tool_name == self.output_tool:
                return
            args = json.dumps(event.args, ensure_ascii=False, default=str)
            self._err.print(f"[cyan]→ {escape(event.tool_name)}[/] {escape(one_line(args))}")
        elif isinstance(event, ToolExecutionEndEvent):
            self._open.discard(event.tool_call_id)
            started = self._started.pop(event.tool_call_id, time.perf_counter())
            if event.tool_name == self.output_tool:
                if event.is_error:
                    refused = output_refused(text_of(event.result.content))
                    self._err.print(f"[yellow]{escape(refused)}[/]")
                return
            ms = (time.perf_counter() - started) * 1000
            text = escape(one_line(text_of(event.result.content) or "(no output)"))
            name = escape(event.tool_name)
            head = f"[red]✗ {name} error:[/]" if event.is_error else f"[green]← {name}:[/]"
            self._err.print(f"{head} {text} [dim]({ms:.0f} ms)[/]")
        elif isinstance(event, NestedAgentEvent):  # a sub-agent at work
            sub = event.event
            if isinstance(sub, ToolExecutionEndEvent):
                self._open.discard(sub.tool_call_id)
            elif isinstance(sub, ToolExecutionStartEvent) and self._shown_again(sub.tool_call_id):
                return
            if (line := nested_line(event, self.output_tools)) is not None:
                self._break_line()
                self._err.print(line)
        elif isinstance(event, MessageStartEvent) and isinstance(event.message, AssistantMessage):
            speaker = event.message.agent
            if self._speaker is not None and speaker != self._speaker:  # after a handoff
                self._break_line()
                self._err.print(f"[magenta]⇢ {escape(str(speaker))} answers[/]")
            self._speaker = speaker
            if not self._line_open:
                self._wait_for(event.message.model)
        elif isinstance(event, MessageEndEvent) and isinstance(event.message, AssistantMessage):
            self.final = event.message
            if self.hold_text and event.message.stop_reason not in ("error", "aborted"):
                text = event.message.text
                self._out.write(self._as_shown(text))
                self._out.flush()
                self._line_open = bool(text) and not text.endswith("\n")
        elif isinstance(event, AgentEndEvent):
            self.end = event
            self._break_line()
            if self.final is not None and self.final.stop_reason == "length":
                note = cut_off_note(self.final, self.max_tokens)
                self._err.print(f"[yellow]{escape(note)}[/]")
            usage = transcript_usage(event.messages)
            if event.reason == "awaiting_approval":  # the command goes on once decided
                self._held_spent.add(usage)
                self._held = set(self._open)
                return
            self._held = set()
            usage.add(self._held_spent)
            self._held_spent = Usage()
            failed = self.final is None or self.final.stop_reason in ("error", "aborted")
            if failed and not (usage.input or usage.output or usage.cache_read):
                return  # nothing was spent: the error line is all there is to say
            elapsed = time.perf_counter() - self._t0
            self._err.print(f"[dim]{escape(usage_line(usage, elapsed))}[/]")

    def _as_shown(self, text: str) -> str:
        return shown_in_layout(text) if self._shown else text

    def _shown_again(self, call_id: str) -> bool:
        """Note that `call_id` started; whether its `→` line is shown already (a held call
        that runs, or is answered, after the decisions)."""
        again = call_id in self._held
        self._held.discard(call_id)
        self._open.add(call_id)
        return again


class JsonPrinter(_Printer):
    """`--json`: every event as one JSON line on stdout (`event_to_dict`).

    A `message_update` line carries only its `assistant_message_event` without the partial
    message (no `message`, no `partial`): each update of a streamed reply would repeat the
    whole reply so far. The partial message is rebuilt from the `message_start` line and the
    deltas (`text_delta`, `thinking_delta`, `toolcall_delta`, each with its
    `content_index`); `message_end` has the whole message."""

    def __init__(self, out: IO[str] | None = None) -> None:
        self._out = out or sys.stdout
        self.final: AssistantMessage | None = None
        self.end: AgentEndEvent | None = None
        encoding = (getattr(self._out, "encoding", None) or "utf-8").lower().replace("-", "")
        # Under a non-UTF-8 locale, \u escapes keep every line valid JSON and lose nothing.
        self._ascii = encoding != "utf8"

    def _show(self, event: AgentEvent) -> None:
        line = event_to_dict(event)
        if isinstance(event, MessageUpdateEvent):
            line.pop("message", None)
            inner = line.get("assistant_message_event")
            if isinstance(inner, dict):
                inner.pop("partial", None)
        self._out.write(json.dumps(line, ensure_ascii=self._ascii) + "\n")
        self._out.flush()
        if isinstance(event, MessageEndEvent) and isinstance(event.message, AssistantMessage):
            self.final = event.message
        elif isinstance(event, AgentEndEvent):
            self.end = event
