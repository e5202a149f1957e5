"""Guardrails: checks that stop a run when its input or its answer is out of bounds
(DESIGN §17; `docs/teams.md`).

A guardrail is a function `(GuardrailContext) -> GuardrailResult | bool | None`, plain or
async: `True` (or a result with `tripped=True`) trips it, `False`/`None` lets the run go on,
and one that raises counts as tripped with its error as the message. Plain guardrails run on
a worker thread, so a slow check never holds up the model call it runs beside.
`check_guardrails` runs a list of them at once and answers with the first trip in list
order. `RunGuards` applies them to one run: input guardrails beside the first model call
(its `message_end` waits for them; a trip aborts the call at once), output guardrails on
a message that would be the final answer, and a tripped message emptied into an error
message before anyone sees it end, so it is never returned or stored as the answer.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, TypeAlias

from yiemagent.errors import ConfigError
from yiemagent.types import (
    AbortSignal,
    AgentEvent,
    AgentMessage,
    AssistantMessage,
    MessageEndEvent,
    OutputSpec,
    TextContent,
    UserMessage,
)
from yiemagent.types.callbacks import is_async_callable
from yiemagent.types.output import OUTPUT_TOOL_NAME

__all__ = [
    "Guardrail",
    "GuardrailContext",
    "GuardrailResult",
    "RunGuards",
    "Trip",
    "check_guardrail_list",
    "check_guardrails",
    "guardrail_name",
]


@dataclass(slots=True)
class GuardrailResult:
    """A guardrail's verdict: `tripped` stops the run; `message` says why (shown to the
    user, never to the model)."""

    tripped: bool
    message: str = ""


@dataclass(slots=True)
class GuardrailContext:
    """What a guardrail sees.

    For input guardrails `input` is the prompt's text and `text`/`output` are empty; for
    output guardrails `text` is the final answer's text and `output` the validated output
    value (None without an output type). `messages` is the transcript so far (read it,
    do not change it)."""

    kind: Literal["input", "output"]
    agent: str
    """The name of the agent the run speaks for."""
    input: str = ""
    text: str = ""
    output: Any = None
    messages: list[AgentMessage] = field(default_factory=list)


Guardrail: TypeAlias = Callable[
    [GuardrailContext],
    "GuardrailResult | bool | Awaitable[GuardrailResult | bool | None] | None",
]
"""A guardrail function, plain or async."""


@dataclass(slots=True)
class Trip:
    """A tripped guardrail: which kind, its name, and its message."""

    kind: Literal["input", "output"]
    guardrail: str
    message: str

    def text(self) -> str:
        """The run's error text: `input guardrail 'name' tripped: message`."""
        why = f": {self.message}" if self.message else ""
        return f"{self.kind} guardrail {self.guardrail!r} tripped{why}"


def guardrail_name(guardrail: Callable[..., Any]) -> str:
    """The name a guardrail is reported by: its `__name__`, else its class's."""
    return str(getattr(guardrail, "__name__", None) or type(guardrail).__name__)


def check_guardrail_list(value: Any, what: str) -> list[Guardrail]:
    """`value` (None or an iterable of callables) as a list.

    Raises:
        ConfigError: something in it is not callable (`what` names the option).
    """
    if value is None:
        return []
    if callable(value) or isinstance(value, str | bytes):
        raise ConfigError(f"{what} must be a list of guardrail functions, not {value!r}")
    guards = list(value)
    for guard in guards:
        if not callable(guard):
            raise ConfigError(f"{what} holds {guard!r}, which is not a function")
    return guards


async def check_guardrails(
    guardrails: Sequence[Guardrail], context: GuardrailContext
) -> Trip | None:
    """Run `guardrails` concurrently on `context`; the first trip in list order, or None."""
    if not guardrails:
        return None
    verdicts = await asyncio.gather(*(_verdict(g, context) for g in guardrails))
    for guard, (tripped, message) in zip(guardrails, verdicts, strict=True):
        if tripped:
            return Trip(context.kind, guardrail_name(guard), message)
    return None


async def _verdict(guardrail: Guardrail, context: GuardrailContext) -> tuple[bool, str]:
    try:
        if is_async_callable(guardrail):
            value = await guardrail(context)  # type: ignore[misc]
        else:
            value = await asyncio.to_thread(guardrail, context)
            if isinstance(value, Awaitable):
                value = await value
    except Exception as exc:  # a guardrail that raises counts as tripped
        return True, f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
    if value is None:
        return False, ""
    if isinstance(value, GuardrailResult):
        return bool(value.tripped), value.message
    if isinstance(value, bool):
        return value, ""
    return True, f"returned {type(value).__name__}, not a GuardrailResult, bool or None"


class RunGuards:
    """One run's guardrails (event loop thread only); `trip` is the one that stopped it."""

    __slots__ = ("_input", "_messages", "_output", "_signal", "trip")

    def __init__(
        self, signal: AbortSignal, messages: list[AgentMessage], output: OutputSpec[Any] | None
    ) -> None:
        self._signal = signal
        self._messages = messages
        self._output = output
        self._input: asyncio.Task[Trip | None] | None = None
        self.trip: Trip | None = None

    def start_input(
        self, guards: Sequence[Guardrail], agent: str, prompts: Sequence[AgentMessage]
    ) -> None:
        """Start the input guardrails on `prompts` (a trip aborts the run's signal)."""
        if not guards:
            return
        context = GuardrailContext(
            "input", agent, input=_prompt_text(prompts), messages=self._messages
        )
        self._input = asyncio.create_task(check_guardrails(guards, context))
        self._input.add_done_callback(self._input_checked)

    def _input_checked(self, task: asyncio.Task[Trip | None]) -> None:
        if task.cancelled() or task.exception() is not None:
            return
        trip = task.result()
        if trip is not None and self.trip is None:
            self.trip = trip
            self._signal.abort(trip.text())

    def stop(self) -> None:
        """The run is over: cancel input guardrails still running."""
        if self._input is not None and not self._input.done():
            self._input.cancel()

    def must_check(self, message: AssistantMessage, output_guards: Sequence[Guardrail]) -> bool:
        """Whether `message_end` of `message` must wait for `checked`."""
        if self.trip is not None or self._input is not None:
            return True
        return bool(output_guards) and self._is_answer(message)

    async def checked(
        self,
        event: MessageEndEvent,
        inner: Callable[[AgentEvent], Awaitable[None] | None],
        speaker: Any,
    ) -> None:
        """Pass `event` to `inner` once the guardrails are done with its message: the input
        ones (first message), the speaker's output ones (a final answer). A tripped message
        loses its content and becomes an error message saying what tripped."""
        message = event.message
        assert isinstance(message, AssistantMessage)
        task, self._input = self._input, None
        if task is not None:
            with contextlib.suppress(Exception):  # failed: nothing tripped (raises are trips)
                await asyncio.shield(task)
        guards = speaker.output_guardrails
        if self.trip is None and guards and self._is_answer(message):
            context = GuardrailContext(
                "output",
                speaker.name,
                text=message.text,
                output=self._output_value(message),
                messages=self._messages,
            )
            self.trip = await check_guardrails(guards, context)
        if self.trip is not None:  # never shown, returned or stored as the answer
            message.content = []
            message.stop_reason = "error"
            message.error_message = self.trip.text()
        if (w := inner(event)) is not None:
            await w

    def _is_answer(self, message: AssistantMessage) -> bool:
        """Whether `message` would be the run's final answer (text, or the output tool)."""
        calls = message.tool_calls
        if not calls:
            return message.stop_reason == "stop"
        return self._output is not None and all(c.name == OUTPUT_TOOL_NAME for c in calls)

    def _output_value(self, message: AssistantMessage) -> Any:
        spec = self._output
        if spec is None:
            return None
        try:
            calls = message.tool_calls
            return spec.validate(calls[0].arguments) if calls else spec.validate_text(message.text)
        except Exception:  # not a valid value: the loop asks the model again
            return None


def _prompt_text(prompts: Sequence[AgentMessage]) -> str:
    parts: list[str] = []
    for message in prompts:
        if isinstance(message, UserMessage):
            content = message.content
            if isinstance(content, str):
                parts.append(content)
            else:
                parts.extend(b.text for b in content if isinstance(b, TextContent))
    return "\n".join(parts)
