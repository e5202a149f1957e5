"""The scripted faux provider: replays queued responses through the real event protocol
(DESIGN §7). It is what the tests and benchmarks run on.

`FauxModel(responses, *, chunk_size=4, delay_s=0.0, model_id="faux")` queues responses
for its model `fm.model` (that id, api "faux"); each call of
`fm.stream_fn(model, context, options)` records the `Context` in `fm.contexts`, takes the
next response and streams it: `start`, text/thinking in deltas of `chunk_size` characters,
each tool call's arguments as JSON text in `chunk_size` fragments, then `done` (or `error` for
a scripted stop reason "error"/"aborted"). A response is an `AssistantMessage`, a `str` (a
text answer), a `FauxStall`, or a function `(context) -> AssistantMessage | str` (plain or
async). With no response left the call ends with stop reason "error" and
"No more faux responses queued". The output message is new (the scripted one is never
mutated) with api/provider "faux", the called model's id and the scripted usage.

Timing: with `delay_s == 0` a response is pushed in one go when `stream_fn` is called (no
task, no awaits: the benchmark hot path), so an abort is only seen before it starts and
every event's `partial` is already the whole message. With `delay_s > 0` (or an async
response function, or a stall) a task streams it, sleeping `delay_s` after every chunk; an
abort of `options.signal` during a sleep, between chunks or while a response function runs
ends the message with an `error` event, reason and stop reason "aborted". Use a delay to test
aborts mid-stream.

The responses are built with `faux_text`, `faux_thinking`, `faux_tool_call` and
`faux_message`, and the fault presets `faux_malformed_tool_call`, `faux_empty_arguments_call`,
`faux_duplicate_id_calls`, `faux_text_then_tool_call`, `faux_truncated_tool_call`,
`faux_stall` and `faux_error_mid_stream` (each returns a response to queue).
"""

from __future__ import annotations

import asyncio
import inspect
import json
import logging
import uuid
import weakref
from collections import deque
from collections.abc import Awaitable, Callable, Iterable, Iterator
from dataclasses import dataclass, replace
from typing import Any, Literal, TypeAlias

from yiemagent.ai.builder import MessageBuilder, parse_partial_json
from yiemagent.errors import ConfigError
from yiemagent.types.messages import (
    AssistantContent,
    AssistantMessage,
    Cost,
    StopReason,
    TextContent,
    ThinkingContent,
    ToolCall,
    Usage,
)
from yiemagent.types.model import AssistantMessageEventStream, Context, Model, StreamOptions
from yiemagent.types.signal import AbortSignal

__all__ = [
    "FauxModel",
    "FauxResponse",
    "FauxStall",
    "faux_duplicate_id_calls",
    "faux_empty_arguments_call",
    "faux_error_mid_stream",
    "faux_malformed_tool_call",
    "faux_message",
    "faux_stall",
    "faux_text",
    "faux_text_then_tool_call",
    "faux_thinking",
    "faux_tool_call",
    "faux_truncated_tool_call",
]

logger = logging.getLogger(__name__)

NO_MORE_RESPONSES = "No more faux responses queued"

_ENCODE = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False).encode


@dataclass(slots=True, frozen=True)
class FauxStall:
    """A response that stops sending after `after_chunks` chunks (see `faux_stall`)."""

    message: AssistantMessage
    after_chunks: int


FauxResponse: TypeAlias = (
    AssistantMessage
    | str
    | FauxStall
    | Callable[[Context], "AssistantMessage | str | Awaitable[AssistantMessage | str]"]
)
"""What a `FauxModel` replays."""


class FauxModel:
    """A scripted model: `.model` (api "faux"), `.stream_fn`, `.contexts`, `.call_count`.

    Responses are consumed in order, one per `stream_fn` call; `add(*responses)` queues more.
    `yiemagent.ai.stream(fm.model, ...)` also reaches the most recent `FauxModel` created
    with that model id.
    """

    def __init__(
        self,
        responses: Iterable[FauxResponse] = (),
        *,
        chunk_size: int = 4,
        delay_s: float = 0.0,
        model_id: str = "faux",
    ) -> None:
        if chunk_size < 1:
            raise ConfigError(f"chunk_size must be >= 1, got {chunk_size}")
        if delay_s < 0:
            raise ConfigError(f"delay_s must be >= 0, got {delay_s}")
        self.model = Model(id=model_id, provider="faux", api="faux", name="Faux")
        self.chunk_size = chunk_size
        self.delay_s = delay_s
        self.contexts: list[Context] = []
        """Each `Context` received, in call order."""
        self.call_count = 0
        self._responses: deque[FauxResponse] = deque(responses)
        self._tasks: set[asyncio.Task[None]] = set()
        _register(self)

    def add(self, *responses: FauxResponse) -> None:
        """Queue more responses."""
        self._responses.extend(responses)

    @property
    def pending(self) -> int:
        """Responses still queued."""
        return len(self._responses)

    def stream_fn(
        self, model: Model, context: Context, options: StreamOptions | None = None
    ) -> AssistantMessageEventStream:
        """Stream the next response for `context` (a `StreamFn`; returns at once, never
        raises: every failure ends the stream with an `error` event)."""
        self.call_count += 1
        self.contexts.append(context)
        stream = AssistantMessageEventStream()
        out_model = model if model.api == "faux" else replace(model, api="faux", provider="faux")
        builder = MessageBuilder(out_model, stream)
        signal = options.signal if options is not None else None
        queued = self._responses.popleft() if self._responses else None
        response: Any = queued
        try:
            if queued is None:
                builder.start()
                builder.fail("error", NO_MORE_RESPONSES)
                return stream
            if callable(queued) and not isinstance(queued, AssistantMessage):
                response = queued(context)
            if self.delay_s == 0 and isinstance(response, (AssistantMessage, str)):
                self._play_now(builder, as_message(response), signal)
                return stream
            loop = asyncio.get_running_loop()
        except Exception as exc:
            logger.exception("faux response raised")
            _fail_safely(builder, f"Faux response raised: {exc!r}")
            return stream
        task = loop.create_task(self._play_later(builder, response, signal))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return stream

    def _play_now(
        self, builder: MessageBuilder, message: AssistantMessage, signal: AbortSignal | None
    ) -> None:
        builder.start()
        if signal is not None and signal.aborted:
            _abort(builder, signal)
            return
        for _ in _replay(builder, message, self.chunk_size):
            if signal is not None and signal.aborted:
                _abort(builder, signal)
                return
        _finish(builder, message)

    async def _play_later(
        self, builder: MessageBuilder, response: Any, signal: AbortSignal | None
    ) -> None:
        aborted: asyncio.Future[None] | None = None
        remove: Callable[[], None] = _noop
        try:
            if signal is not None:
                aborted, remove = _abort_future(signal)
            builder.start()
            if inspect.isawaitable(response):
                response = await _race(response, aborted)
                if response is _ABORTED:
                    _abort(builder, signal)
                    return
            stall_after: int | None = None
            if isinstance(response, FauxStall):
                stall_after = response.after_chunks
                response = response.message
            message = as_message(response)
            chunks = _replay(builder, message, self.chunk_size) if stall_after != 0 else ()
            for count, _ in enumerate(chunks, 1):
                if self.delay_s > 0:
                    await _race(asyncio.sleep(self.delay_s), aborted)
                if signal is not None and signal.aborted:
                    _abort(builder, signal)
                    return
                if stall_after is not None and count >= stall_after:
                    break
            if stall_after is not None:
                await _race(asyncio.get_running_loop().create_future(), aborted)
                _abort(builder, signal)
                return
            _finish(builder, message)
        except asyncio.CancelledError:
            _fail_safely(builder, "Faux stream was cancelled", "aborted")
            raise
        except Exception as exc:
            logger.exception("faux response raised")
            _fail_safely(builder, f"Faux response raised: {exc!r}")
        finally:
            remove()


# ── replay ───────────────────────────────────────────────────────────────────


def _chunks(text: str, size: int) -> Iterable[str]:
    if len(text) <= size:
        return (text,) if text else ()
    return [text[start : start + size] for start in range(0, len(text), size)]


def _replay(builder: MessageBuilder, message: AssistantMessage, size: int) -> Iterator[None]:
    """Push `message`'s content as deltas, yielding after each chunk."""
    for block in message.content:
        if isinstance(block, TextContent):
            if not block.text:
                builder.text_delta("")
            for piece in _chunks(block.text, size):
                builder.text_delta(piece)
                yield
        elif isinstance(block, ThinkingContent):
            builder.thinking_delta("", block.signature)
            for piece in _chunks(block.thinking, size):
                builder.thinking_delta(piece)
                yield
        elif isinstance(block, ToolCall):
            builder.tool_call_start(block.id, block.name)
            raw = block.partial_json
            if raw is None:
                raw = _ENCODE(block.arguments)
            for piece in _chunks(raw, size):
                builder.tool_call_delta(piece)
                yield
        builder.end_block()


def _finish(builder: MessageBuilder, message: AssistantMessage) -> None:
    u, c = message.usage, message.usage.cost
    cost = Cost(c.input, c.output, c.cache_read, c.cache_write, c.total)
    usage = Usage(u.input, u.output, u.cache_read, u.cache_write, u.total_tokens, cost)
    usage.reasoning = u.reasoning
    builder.set_usage(usage)
    reason = message.stop_reason
    if reason == "error" or reason == "aborted":
        builder.fail(reason, message.error_message or f"Faux response ended with {reason}")
    elif reason == "length" or reason == "toolUse":
        builder.done(reason)
    else:
        builder.done("stop")


def _abort(builder: MessageBuilder, signal: AbortSignal | None) -> None:
    reason = signal.reason if signal is not None else None
    builder.fail("aborted", f"Request was aborted: {reason}" if reason else "Request was aborted")


def _fail_safely(
    builder: MessageBuilder, text: str, reason: Literal["error", "aborted"] = "error"
) -> None:
    try:
        builder.fail(reason, text)
    except Exception:  # the stream must end whatever happened
        logger.exception("faux provider could not fail cleanly")
        builder._stream.end(builder.message)


class _Aborted:
    pass


_ABORTED = _Aborted()


def _noop() -> None:
    return None


def _abort_future(signal: AbortSignal) -> tuple[asyncio.Future[None], Callable[[], None]]:
    loop = asyncio.get_running_loop()
    future: asyncio.Future[None] = loop.create_future()

    def settle() -> None:
        if not future.done():
            future.set_result(None)

    def on_abort(_reason: str | None) -> None:
        if not loop.is_closed():
            loop.call_soon_threadsafe(settle)

    return future, signal.add_listener(on_abort)


async def _race(awaitable: Awaitable[Any], aborted: asyncio.Future[None] | None) -> Any:
    """`await awaitable`, or `_ABORTED` as soon as `aborted` resolves (the other is cancelled)."""
    if aborted is None:
        return await awaitable
    work = asyncio.ensure_future(awaitable)
    await asyncio.wait((work, aborted), return_when=asyncio.FIRST_COMPLETED)
    if work.done():
        return work.result()
    work.cancel()
    return _ABORTED


# ── routing `yiemagent.ai.stream(fm.model, ...)` to its FauxModel ─────────────

_LATEST: dict[str, Any] = {}


def _register(fm: FauxModel) -> None:
    _LATEST[fm.model.id] = weakref.ref(fm)


def stream_faux(
    model: Model, context: Context, options: StreamOptions | None = None
) -> AssistantMessageEventStream:
    """The "faux" entry of the provider map: the latest `FauxModel` with `model.id`."""
    ref = _LATEST.get(model.id)
    fm: FauxModel | None = ref() if ref is not None else None
    if fm is None:
        stream = AssistantMessageEventStream()
        builder = MessageBuilder(model, stream)
        builder.start()
        builder.fail("error", f"No FauxModel with id {model.id!r}; pass stream_fn=fm.stream_fn")
        return stream
    return fm.stream_fn(model, context, options)


# ── building responses ───────────────────────────────────────────────────────


def _new_id() -> str:
    return f"call_{uuid.uuid4().hex[:16]}"


def faux_text(text: str) -> TextContent:
    """A text block."""
    return TextContent(text)


def faux_thinking(text: str, signature: str | None = None) -> ThinkingContent:
    """A thinking block."""
    return ThinkingContent(text, signature)


def faux_tool_call(
    name: str, arguments: dict[str, Any] | None = None, id: str | None = None
) -> ToolCall:
    """A tool call; `id=None` gets a unique id."""
    return ToolCall(id=_new_id() if id is None else id, name=name, arguments=dict(arguments or {}))


def faux_message(
    *content: AssistantContent | str,
    stop_reason: StopReason | None = None,
    usage: Usage | None = None,
    error_message: str | None = None,
) -> AssistantMessage:
    """An assistant message of `content` (a `str` is a text block); stop reason defaults to
    "toolUse" when it holds a tool call, else "stop"."""
    blocks: list[AssistantContent] = [TextContent(c) if isinstance(c, str) else c for c in content]
    if stop_reason is None:
        stop_reason = "toolUse" if any(isinstance(b, ToolCall) for b in blocks) else "stop"
    return AssistantMessage(
        content=blocks,
        api="faux",
        provider="faux",
        model="faux",
        usage=usage if usage is not None else Usage(),
        stop_reason=stop_reason,
        error_message=error_message,
    )


def _streamed_call(name: str, raw: str, id: str | None) -> ToolCall:
    """A call whose streamed argument text `raw` did not parse as a JSON object, as a
    provider leaves it: `arguments` the best partial parse, `partial_json` the text."""
    return ToolCall(
        id=_new_id() if id is None else id,
        name=name,
        arguments=parse_partial_json(raw),
        partial_json=raw,
    )


def faux_malformed_tool_call(name: str, raw_json: str, id: str | None = None) -> AssistantMessage:
    """A call whose argument text `raw_json` is not a JSON object (stop reason "toolUse"): as
    a provider leaves it, `arguments` is the best partial parse (a dict) and `partial_json`
    the raw text."""
    return faux_message(_streamed_call(name, raw_json, id))


def faux_empty_arguments_call(name: str, id: str | None = None) -> AssistantMessage:
    """A call that streams no argument text at all (`arguments == {}`)."""
    call = ToolCall(id=_new_id() if id is None else id, name=name, arguments={}, partial_json="")
    return faux_message(call)


def faux_duplicate_id_calls(
    name: str, arguments_list: Iterable[dict[str, Any]], *, id: str = "call_dup"
) -> AssistantMessage:
    """Several calls of `name` that all carry `id` (`""` for empty ids), which the loop must
    make unique."""
    return faux_message(*(faux_tool_call(name, args, id=id) for args in arguments_list))


def faux_text_then_tool_call(
    text: str, name: str, arguments: dict[str, Any] | None = None, id: str | None = None
) -> AssistantMessage:
    """Text followed by a tool call in the same message."""
    return faux_message(faux_text(text), faux_tool_call(name, arguments, id))


def faux_truncated_tool_call(
    name: str, arguments: dict[str, Any], *, keep: float = 0.5, id: str | None = None
) -> AssistantMessage:
    """A call whose argument JSON is cut after `keep` (0..1) of its characters, stop reason
    "length" (the output token limit hit mid-call: the loop must not run it)."""
    raw = json.dumps(arguments)
    cut = raw[: max(1, min(len(raw) - 1, int(len(raw) * keep)))]
    return faux_message(_streamed_call(name, cut, id), stop_reason="length")


def faux_stall(after_chunks: int = 1, response: AssistantMessage | str | None = None) -> FauxStall:
    """Stream `after_chunks` chunks of `response` (default a short text), then nothing until
    the consumer aborts or its idle timeout ends the stream."""
    message = as_message("This response stalls and never ends." if response is None else response)
    return FauxStall(message, after_chunks)


def faux_error_mid_stream(text_before: str, error_message: str) -> AssistantMessage:
    """Text, then the stream ends with an `error` event carrying `error_message`."""
    return faux_message(faux_text(text_before), stop_reason="error", error_message=error_message)


def as_message(response: object) -> AssistantMessage:
    """A response as a message: a `str` becomes a one-text answer.

    Raises:
        TypeError: neither an `AssistantMessage` nor a `str`.
    """
    if isinstance(response, AssistantMessage):
        return response
    if isinstance(response, str):
        return faux_message(faux_text(response))
    raise TypeError(
        f"a faux response must be an AssistantMessage, a str or a function returning one, "
        f"got {type(response).__name__}"
    )
