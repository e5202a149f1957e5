"""Guardrails (DESIGN §17; `docs/teams.md`): checks an `Agent` runs on its prompt and on its
final answer, which stop the run when they trip.

A guardrail is a function `(GuardrailContext) -> GuardrailResult | bool | None`, plain or
async: `True` (or a result with `tripped=True`) trips it, `False`/`None` lets the run go on,
and one that raises counts as tripped with its error as the message. Plain guardrails run on a
worker thread, so a slow check never holds up the model call it runs beside.
`check_guardrails` runs a list of them at once and answers with the first trip in list order.
`RunGuards` applies them to one run: input guardrails beside the first model call (its
`message_end` waits for them; a trip aborts the call at once), output guardrails on a message
that would be the final answer, and a tripped message emptied into an error message before
anyone sees it end, so it is never returned or stored as the answer (an abort stops the wait,
and the unchecked message is emptied as aborted). Streamed text is not provisional: while
guardrails may still stop a message, its `message_start` and `message_update` events are
held, and only a message that passed has them passed on (in order, just before its
`message_end`); a stopped one shows listeners only its emptied `message_start` and
`message_end`. `TrippedInputs` keeps what an input guardrail refused out of later runs.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, TypeAlias

from yiemagent.errors import ConfigError, exception_summary
from yiemagent.tools import validate_arguments_against_schema
from yiemagent.types import (
    AbortSignal,
    AgentEvent,
    AgentMessage,
    AssistantMessage,
    MessageEndEvent,
    MessageStartEvent,
    OutputSpec,
    TextContent,
    UserMessage,
)
from yiemagent.types.alias_doc import describe_alias
from yiemagent.types.callbacks import adopt_task, is_async_callable

__all__ = [
    "GUARDRAIL_DETAIL",
    "Guardrail",
    "GuardrailContext",
    "GuardrailResult",
    "RunGuards",
    "Trip",
    "TrippedInputs",
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
describe_alias(
    __name__,
    "Guardrail",
    """A guardrail function, plain or async.""",
)


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
    """Run `guardrails` concurrently on `context`: the first trip as they finish (among
    those that finished together, the first in list order), or None once all passed. A
    trip does not wait for the others: they are cancelled (a plain one's thread is left
    to finish, its verdict unused)."""
    if not guardrails:
        return None
    tasks = [asyncio.ensure_future(_verdict(g, context)) for g in guardrails]
    for task in tasks:
        adopt_task(task)
    try:
        pending: set[asyncio.Future[tuple[bool, str]]] = set(tasks)
        while pending:
            done, pending = await asyncio.wait(pending, return_when=asyncio.FIRST_COMPLETED)
            for guard, task in zip(guardrails, tasks, strict=True):
                if task in done and (verdict := task.result())[0]:
                    return Trip(context.kind, guardrail_name(guard), verdict[1])
        return None
    finally:
        for task in tasks:
            task.cancel()


async def _verdict(guardrail: Guardrail, context: GuardrailContext) -> tuple[bool, str]:
    """`(tripped, message)`; never raises but for the run's own cancellation, since a check
    that failed must not count as passed (fail closed)."""
    try:
        if is_async_callable(guardrail):
            value = await guardrail(context)  # type: ignore[misc]
        else:
            value = await asyncio.to_thread(guardrail, context)
            if isinstance(value, Awaitable):
                value = await value
        return _read(value)
    except asyncio.CancelledError as exc:
        task = asyncio.current_task()
        if task is not None and task.cancelling():
            raise  # the run stopped the check: no verdict
        return True, exception_summary(exc)  # its own work was cancelled: no pass, fail closed
    except (KeyboardInterrupt, GeneratorExit):
        raise
    except BaseException as exc:  # a guardrail that raises counts as tripped (SystemExit too)
        return True, exception_summary(exc)


def _read(value: Any) -> tuple[bool, str]:
    """A guardrail's return value as `(tripped, message)`; raises when `tripped` cannot be
    read as a truth value."""
    if value is None:
        return False, ""
    if isinstance(value, GuardrailResult):
        return bool(value.tripped), str(value.message)
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
        """Start the input guardrails on `prompts` (a trip aborts the run's signal); a
        check still running goes on, and the next message waits for both."""
        if not guards:
            return
        context = GuardrailContext(
            "input", agent, input=_prompt_text(prompts), messages=self._messages
        )
        self._input = asyncio.create_task(_after(self._input, check_guardrails(guards, context)))
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

    def holds(self, speaker: Any) -> bool:
        """Whether the events of an assistant message `speaker` starts now wait for
        `checked`: input guardrails still check the prompt, one tripped, or `speaker` has
        output guardrails (whether the message is a final answer is known at its end)."""
        return self.trip is not None or self._input is not None or bool(speaker.output_guardrails)

    async def checked(
        self,
        event: MessageEndEvent,
        inner: Callable[[AgentEvent], Awaitable[None] | None],
        speaker: Any,
        held: Sequence[AgentEvent],
    ) -> None:
        """Pass `event` to `inner` once the guardrails are done with its message: the input
        ones (first message), the speaker's output ones (a final answer). A message that
        passed has its `held` start and updates passed first, in order; a tripped message
        loses its content and becomes an error message saying what tripped, and only a new
        `message_start` of it goes before its end: no listener sees what was streamed."""
        message = event.message
        assert isinstance(message, AssistantMessage)
        task, self._input = self._input, None
        checked = True
        if task is not None:
            checked, _ = await self._unless_aborted(asyncio.shield(task))
        guards = speaker.output_guardrails
        if checked and self.trip is None and guards and self._is_answer(message):
            context = GuardrailContext(
                "output",
                speaker.name,
                text=message.text,
                output=self._output_value(message),
                messages=self._messages,
            )
            checked, trip = await self._unless_aborted(check_guardrails(guards, context))
            self.trip = self.trip or trip
        if (self.trip is not None or not checked) and self._output is not None:
            for call in message.tool_calls:  # the output tool will not run
                self._output.forget(call.id)
            self._output.forget(None)  # nor will the run read the answer text
        if self.trip is not None:  # never shown, returned or stored as the answer
            message.content = []
            message.stop_reason = "error"
            message.error_message = self.trip.text()
            message.details = {
                **message.details,
                GUARDRAIL_DETAIL: {"kind": self.trip.kind, "guardrail": self.trip.guardrail},
            }
            held = [MessageStartEvent(message)]
        elif not checked:  # aborted before its guardrails spoke: not an answer either
            message.content = []
            message.stop_reason = "aborted"
            message.error_message = "the run was aborted before its guardrails checked the answer"
            held = [MessageStartEvent(message)]
        for shown in (*held, event):
            if (w := inner(shown)) is not None:
                await w

    async def _unless_aborted(self, work: Awaitable[Trip | None]) -> tuple[bool, Trip | None]:
        """`(True, what work gave)` once `work` is done (a failure gives None: raising
        guardrails are trips already), or `(False, None)` when the run is aborted first
        (a trip aborts it too: then `trip` is set)."""
        job = asyncio.ensure_future(work)
        aborted = asyncio.ensure_future(self._signal.wait())
        try:
            await asyncio.wait((job, aborted), return_when=asyncio.FIRST_COMPLETED)
        finally:
            aborted.cancel()
        if not job.done():
            job.cancel()  # the output guardrails; the input ones are shielded (`stop` ends them)
            return self.trip is not None, None
        if job.cancelled() or job.exception() is not None:
            return True, None
        return True, job.result()

    def _is_answer(self, message: AssistantMessage) -> bool:
        """Whether `message` would be the run's final answer (text, or the output tool)."""
        calls = message.tool_calls
        if not calls:
            return message.stop_reason == "stop"
        # the spec's own name: `OutputSpec(T, name="submit")` answers through `submit`
        return self._output is not None and all(c.name == self._output.name for c in calls)

    def _output_value(self, message: AssistantMessage) -> Any:
        spec = self._output
        if spec is None:
            return None
        if not message.tool_calls:
            try:  # kept for the run, which reads the answer next: the function runs once
                return spec.validate_text(message.text, keep=True)
            except Exception:  # not a valid value: the loop asks the model again
                return None
        for call in message.tool_calls:  # the first valid one is the output, as in the loop
            try:  # repaired as the output tool's call will be, and its value kept for it:
                # an output function runs once per call
                args = validate_arguments_against_schema(
                    spec.schema, call.arguments, tool_name=spec.name
                )
                return spec.validate_call(call.id, args, keep=True)
            except Exception:
                continue
        return None


async def _after(
    earlier: asyncio.Task[Trip | None] | None, check: Awaitable[Trip | None]
) -> Trip | None:
    """`earlier`'s trip if it had one (its own callback acted on it), else `check`'s."""
    first = await earlier if earlier is not None else None
    return first if first is not None else await check


GUARDRAIL_DETAIL = "guardrail"
"""The key of `AssistantMessage.details` on a message a guardrail stopped:
`{"kind": "input" | "output", "guardrail": name}`."""


class TrippedInputs:
    """The user messages an input guardrail stopped, found in a transcript as it grows
    (each message looked at once): the prompts, steering and follow-ups right before an
    assistant message marked `GUARDRAIL_DETAIL` of kind "input", with that message. A run
    starts from the transcript without them, so what was refused never reaches a model
    later, alone or under a harmless next prompt ("explain the above"). Event-loop thread
    only; the transcript (and a stored session) keeps them."""

    __slots__ = ("_drop", "_first", "_last", "_seen")

    def __init__(self) -> None:
        self._drop: set[int] = set()
        self._first: AgentMessage | None = None
        self._last: AgentMessage | None = None
        self._seen = 0

    def view(self, messages: list[AgentMessage]) -> list[AgentMessage]:
        """`messages` without the refused input (a new list), or `messages` itself when
        there is none."""
        seen = self._seen
        if seen > len(messages) or (
            seen and (messages[0] is not self._first or messages[seen - 1] is not self._last)
        ):  # not the transcript looked at so far: look again
            self._drop, seen = set(), 0
        for index in range(seen, len(messages)):
            message = messages[index]
            if not isinstance(message, AssistantMessage):
                continue
            trip = message.details.get(GUARDRAIL_DETAIL)
            if isinstance(trip, dict) and trip.get("kind") == "input":
                self._drop.add(index)
                before = index - 1
                while before >= 0 and isinstance(messages[before], UserMessage):
                    self._drop.add(before)
                    before -= 1
        self._seen = len(messages)
        self._first = messages[0] if messages else None
        self._last = messages[-1] if messages else None
        if not self._drop:
            return messages
        return [m for index, m in enumerate(messages) if index not in self._drop]


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
