"""What `yiem chat` shows while the agent works (DESIGN §15): a reducer of agent events into
finished lines for the scrollback and a live region redrawn above the input line.

`LiveView` has no terminal of its own: finished output goes to `commit` (the app prints it
above the prompt with rich), and `fragments()` is the live region as prompt_toolkit
formatted text. All methods run on the event loop thread (agent listeners do).

Shown live: the answer's unfinished line as it streams; one status line per running tool
call (name, short arguments, elapsed time, the latest `on_update` progress), so the calls of
a parallel batch stand side by side; the steering and follow-up messages still queued; a
spinner line while the agent works. A finished answer line, a tool call's end (result or
error and duration, in ms), a delivered steering message and the answer's usage line
(tokens and USD) move to the scrollback.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal

from rich.text import Text

from yiemagent.cli.render import (
    GUARDRAIL_TEXTS,
    cut_off_note,
    nested_line,
    one_line,
    output_answer,
    output_refused,
    shown_in_layout,
    usage_line,
)
from yiemagent.types import (
    AgentEndEvent,
    AgentEvent,
    AgentMessage,
    AgentStartEvent,
    AssistantMessage,
    MessageEndEvent,
    MessageStartEvent,
    MessageUpdateEvent,
    NestedAgentEvent,
    ToolExecutionEndEvent,
    ToolExecutionStartEvent,
    ToolExecutionUpdateEvent,
    TurnEndEvent,
    text_of,
    transcript_usage,
)

__all__ = ["Commit", "LiveView", "ToolLine", "short_args"]

Commit = Callable[[Text], None]
"""Where finished lines go (printed above the prompt)."""

_SPINNER = "⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏"
_ARGS_CHARS = 60
_RESULT_CHARS = 160


def short_args(args: Any) -> str:
    """Tool arguments for one line: `key=value, ...` for a dict (strings unquoted, other
    values as JSON with their text as written, "Zürich" not "Z\\u00fcrich"), cut to
    `_ARGS_CHARS` characters."""
    if isinstance(args, dict):
        parts = []
        for key, value in args.items():
            shown = value if isinstance(value, str) else _json(value)
            parts.append(f"{key}={shown}")
        text = ", ".join(parts)
    else:
        text = _json(args)
    return one_line(text, _ARGS_CHARS)


def _json(value: Any) -> str:
    """`value` as JSON, non-ASCII text kept as it is (`one_line` makes control characters
    safe to print)."""
    return json.dumps(value, default=str, ensure_ascii=False)


@dataclass(slots=True)
class ToolLine:
    """One tool call of the current batch."""

    call_id: str
    name: str
    args: str
    started: float = field(default_factory=time.perf_counter)
    progress: str = ""
    state: Literal["running", "ok", "error", "held"] = "running"
    result: str = ""
    ms: float = 0.0

    def text(self, now: float, spin: str) -> Text:
        """The status line: running (spinner, elapsed s, progress) or ended (result, ms)."""
        line = Text("  ")
        if self.state == "running":
            line.append(f"{spin} ", style="cyan")
            line.append(self.name, style="cyan bold")
            line.append(f"({self.args})")
            line.append(f"  {now - self.started:.1f} s", style="dim")
            if self.progress:
                line.append(f"  {self.progress}", style="yellow")
            return line
        if self.state == "held":  # not run; the chat asks about it next
            line.append("⏸ ", style="yellow")
            line.append(self.name, style="yellow bold")
            line.append(f"({self.args}) waiting for approval", style="yellow")
            return line
        if self.state == "ok":
            line.append("✓ ", style="green")
            line.append(self.name, style="green bold")
            line.append(f"({self.args}) → ")
            line.append(self.result)
        else:
            line.append("✗ ", style="red")
            line.append(self.name, style="red bold")
            line.append(f"({self.args}) error: ", style="red")
            line.append(self.result)
        line.append(f"  ({self.ms:.0f} ms)", style="dim")
        return line


@dataclass(slots=True)
class Queued:
    """A steering message or follow-up waiting for its turn boundary, or a prompt waiting
    for a session switch to end."""

    message: AgentMessage
    kind: Literal["steering", "follow-up", "prompt"]
    text: str


class LiveView:
    """Reduces the agent's events into scrollback lines (`commit`) and a live region.

    Args:
        commit: receives each finished line (a rich `Text`).
        invalidate: asks the terminal to redraw the live region (thread-safe).
    """

    def __init__(self, commit: Commit, invalidate: Callable[[], None]) -> None:
        self._commit = commit
        self._invalidate = invalidate
        self._line: list[str] = []
        """The streaming answer's unfinished line, in the pieces it came in (`partial`
        joins them): appending each delta to one string would copy the line each time."""
        self._partial_style = ""
        self.tools: list[ToolLine] = []
        self.queued: list[Queued] = []
        self.busy = False
        self._speaker: str | None = None
        self.hold_text = False
        """Show an answer once its message has ended, not as it streams (the agent has
        guardrails that may still stop it)."""
        self.max_tokens: int | None = None
        """The chat's `--max-tokens` (None: the model's own limit), named when it cuts an
        answer off."""
        self.output_tool: str | None = None
        """The name of the agent's output tool: its calls get no status line, only
        `output_refused` for an answer it refused (the answer itself is shown)."""
        self.output_tools: dict[str, str] = {}
        """The output tools of the team's typed sub-agents by agent name
        (`team_output_tools`), shown as `output_tool` is (`nested_line`)."""
        self.status = ""
        """What the spinner line says (e.g. loading the model), when not empty."""
        self.notice: Text | None = None
        """A question or hint shown above the input line (e.g. an approval question)."""
        self._final: AssistantMessage | None = None
        self._t0 = time.perf_counter()
        self.first_delta_s: float | None = None
        """Seconds from the run's start to its first streamed character (latency figure)."""

    @property
    def partial(self) -> str:
        """The streaming answer's unfinished line ("" when none)."""
        if len(self._line) > 1:
            self._line[:] = ["".join(self._line)]
        return self._line[0] if self._line else ""

    # ── input side ─────────────────────────────────────────────────────────

    def queue(
        self, message: AgentMessage, kind: Literal["steering", "follow-up", "prompt"]
    ) -> None:
        """Show `message` as queued until it reaches the transcript (or `unqueue`)."""
        self.queued.append(Queued(message, kind, text_of(getattr(message, "content", []))))
        self._invalidate()

    def unqueue(self, message: AgentMessage) -> None:
        """Stop showing `message` as queued: it is sent another way (a waiting prompt)."""
        self.queued = [item for item in self.queued if item.message is not message]
        self._invalidate()

    def drop_queued(self) -> int:
        """Forget the queued messages (after an abort); returns how many there were."""
        count = len(self.queued)
        self.queued.clear()
        self._invalidate()
        return count

    def started(self) -> None:
        """A run was started by the user (before its first event)."""
        self.busy = True
        self._final = None
        self._t0 = time.perf_counter()
        self.first_delta_s = None
        self._invalidate()

    # ── events ─────────────────────────────────────────────────────────────

    def __call__(self, event: AgentEvent) -> None:
        """Reduce one agent event (an `Agent.subscribe` listener's body)."""
        if isinstance(event, MessageUpdateEvent):
            inner = event.assistant_message_event
            if inner.type == "text_delta" and not self.hold_text:
                self._stream(inner.delta, "")
            elif inner.type == "thinking_delta":
                self._stream(inner.delta, "dim italic")
            elif inner.type in ("text_end", "thinking_end"):
                self._end_line()
        elif isinstance(event, ToolExecutionStartEvent):
            self._end_line()
            if event.tool_name == self.output_tool:
                return
            self.tools.append(ToolLine(event.tool_call_id, event.tool_name, short_args(event.args)))
        elif isinstance(event, ToolExecutionUpdateEvent):
            line = self._tool(event.tool_call_id)
            if line is not None:
                partial = event.partial_result
                text = text_of(partial.content) or json.dumps(partial.details, default=str)
                line.progress = one_line(text, _ARGS_CHARS)
        elif isinstance(event, ToolExecutionEndEvent):
            if event.tool_name == self.output_tool:
                if event.is_error:
                    self._commit(Text(output_refused(text_of(event.result.content)), "yellow"))
                return
            line = self._tool(event.tool_call_id)
            if line is not None:
                line.ms = (time.perf_counter() - line.started) * 1000
                line.state = "error" if event.is_error else "ok"
                shown = text_of(event.result.content) or "(no output)"
                line.result = one_line(shown, _RESULT_CHARS)
        elif isinstance(event, NestedAgentEvent):  # a sub-agent at work
            if (relayed := nested_line(event, self.output_tools)) is not None:
                self._end_line()
                self._commit(Text.from_markup(relayed))
        elif isinstance(event, MessageStartEvent):
            self._delivered(event.message)
            if isinstance(event.message, AssistantMessage):
                speaker = event.message.agent
                if self._speaker is not None and speaker != self._speaker:  # a handoff
                    self._end_line()
                    self._commit(Text(f"⇢ {speaker} answers", style="magenta"))
                self._speaker = speaker
        elif isinstance(event, MessageEndEvent):
            if isinstance(event.message, AssistantMessage):
                if self.hold_text and event.message.stop_reason not in ("error", "aborted"):
                    self._stream(event.message.text, "")
                self._end_line()
                self._final = event.message
                self._show_failure(event.message)
        elif isinstance(event, TurnEndEvent):
            self._flush_tools({r.tool_call_id for r in event.tool_results})
        elif isinstance(event, AgentStartEvent):
            self.busy = True
        elif isinstance(event, AgentEndEvent):
            self._ended(event)
        self._invalidate()

    def _stream(self, delta: str, style: str) -> None:
        delta = shown_in_layout(delta)  # a model's escape sequences shown, not obeyed
        if not delta:
            return
        if self.first_delta_s is None:
            self.first_delta_s = time.perf_counter() - self._t0
        if self.partial and style != self._partial_style:
            self._end_line()
        self._partial_style = style
        first, *after_breaks = delta.split("\n")
        self._line.append(first)
        for piece in after_breaks:  # each line break ends the line so far
            self._commit(Text(self.partial, style=style))
            self._line[:] = [piece]

    def _end_line(self) -> None:
        if partial := self.partial:
            self._commit(Text(partial, style=self._partial_style))
        self._line.clear()

    def _tool(self, call_id: str) -> ToolLine | None:
        for line in self.tools:
            if line.call_id == call_id:
                return line
        return None

    def _flush_tools(self, answered: set[str] | None = None) -> None:
        """Commit the batch's status lines. A call still running at its turn's end without a
        result among `answered` is held for approval; one with a result but no
        end event was ended by an abort."""
        now = time.perf_counter()
        for line in self.tools:
            if line.state == "running" and answered is not None and line.call_id not in answered:
                line.state = "held"
            elif line.state == "running":
                line.state, line.result, line.ms = "error", "aborted", (now - line.started) * 1000
            self._commit(line.text(now, ""))
        self.tools.clear()

    def _delivered(self, message: AgentMessage) -> None:
        for index, item in enumerate(self.queued):
            if item.message is message:
                del self.queued[index]
                label = "steering" if item.kind == "steering" else "follow-up"
                line = Text(f"» {label} delivered: ", style="magenta")
                line.append(item.text)
                self._commit(line)
                return

    def _show_failure(self, message: AssistantMessage) -> None:
        error = message.error_message or ""
        if message.stop_reason == "error" and error.startswith(GUARDRAIL_TEXTS):
            self._commit(Text(f"✗ stopped: {one_line(error, 300)}", style="red"))
        elif message.stop_reason == "error":
            detail = one_line(message.error_message or "unknown error", 300)
            self._commit(Text(f"✗ model error: {detail}", style="red"))
        elif message.stop_reason == "aborted":
            self._commit(Text("⏹ aborted", style="yellow"))
        elif message.stop_reason == "length":
            self._commit(Text(cut_off_note(message, self.max_tokens), style="yellow"))

    def _ended(self, event: AgentEndEvent) -> None:
        self._end_line()
        self._flush_tools()
        self.busy = False
        final = self._final
        if event.reason == "aborted" and (final is None or final.stop_reason != "aborted"):
            self._commit(Text("⏹ aborted", style="yellow"))  # during the tools
        answer = output_answer(event)  # given through the output tool: no text holds it
        if answer is not None:
            self._commit(Text(answer))
        usage = transcript_usage(event.messages)
        failed = final is None or final.stop_reason in ("error", "aborted")
        if not failed or usage.input or usage.output or usage.cache_read:
            elapsed = time.perf_counter() - self._t0
            self._commit(Text(usage_line(usage, elapsed), style="dim"))
        self._final = None

    # ── the live region ────────────────────────────────────────────────────

    def lines(self, tail: int | None = None) -> list[Text]:
        """The live region, top to bottom (rich `Text`s). With `tail`, the unfinished line
        shows at most its last `tail` characters, after a "…": the live region is drawn
        again at every frame, at a cost in time and memory (prompt_toolkit keeps several
        frames) that grows with its length, while the terminal shows no more than its own
        size. The whole line goes to the scrollback once it ends."""
        now = time.perf_counter()
        spin = _SPINNER[int(now * 10) % len(_SPINNER)]
        out: list[Text] = []
        if partial := self.partial:
            if tail is not None and len(partial) > tail:
                partial = "…" + partial[len(partial) - max(0, tail - 1) :]
            out.append(Text(partial, style=self._partial_style))
        out.extend(line.text(now, spin) for line in self.tools)
        for item in self.queued:
            line = Text(f"  ⧗ queued {item.kind}: ", style="magenta")
            line.append(one_line(item.text, _RESULT_CHARS))
            out.append(line)
        if self.status:
            out.append(Text(f"{spin} {self.status}", style="dim"))
        elif self.busy:
            out.append(
                Text(
                    f"{spin} working — Enter sends a steering message, /follow TEXT a "
                    "follow-up, Ctrl-C stops",
                    style="dim",
                )
            )
        if self.notice is not None:
            out.append(self.notice)
        return out
