"""One model call of the agent loop (DESIGN R-5.2, R-5.8, R-5.9; seed 002 §3).

`stream_assistant_response` runs `transform_context` → `convert_to_llm` → the provider's
stream, turning provider events into `message_start` / `message_update` / `message_end`.
It never raises: a failing hook, a provider that raises instead of ending its stream in
error, or a provider that goes silent for `stream_idle_timeout_s` gives an assistant message
with stop reason "error" that says why. Silent means neither an event nor a call of the
`StreamOptions.keep_alive` the call hands the provider (one rule for every provider: one busy
without output, such as the embedded model reading its prompt, says so itself). The loop in
`agent_loop` calls it once per turn.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Literal

from yiemagent.loop.convert import IncrementalConverter, default_convert_to_llm
from yiemagent.loop.deadline import Deadline
from yiemagent.types import (
    AbortSignal,
    AgentContext,
    AgentLoopConfig,
    AssistantMessage,
    AssistantMessageEvent,
    AssistantMessageEventStream,
    Context,
    DoneEvent,
    ErrorEvent,
    Message,
    MessageEndEvent,
    MessageStartEvent,
    MessageUpdateEvent,
    StreamFn,
    StreamOptions,
    Usage,
    now_ms,
)
from yiemagent.types.callbacks import Emit, EventSink, guarded_sink, maybe_await
from yiemagent.types.messages import ensure_unique_tool_call_ids
from yiemagent.types.model import PROVIDER_OPTIONS
from yiemagent.types.observe import ChatSpan, RunSpan

__all__ = ["assistant_message", "stream_assistant_response"]

logger = logging.getLogger(__name__)


async def stream_assistant_response(
    context: AgentContext,
    config: AgentLoopConfig,
    signal: AbortSignal | None = None,
    emit: EventSink | None = None,
    stream_fn: StreamFn | None = None,
    *,
    converter: IncrementalConverter | None = None,
    trace: RunSpan | None = None,
) -> AssistantMessage:
    """One model call (R-5.2): transform and convert the transcript, stream the answer.

    Emits `message_start` on the first provider event, `message_update` with the partial
    message for each later one, and `message_end` with the final message, whose empty or
    repeated tool-call ids have been made unique (R-4.1). Never raises: a failure (a hook, a
    provider bug, R-5.9) or a stream idle for `stream_idle_timeout_s` (R-5.8: no event and no
    `options.keep_alive()` call from the provider for that long) gives a message
    with stop reason "error" saying why; after an abort, a provider that does not end its
    stream within `deadline.ABORT_GRACE_S` gives one with stop reason "aborted" (R-5.7).
    Does not append the message to `context` (the loop does).

    Args:
        context: the transcript and tools.
        config: the model, the hooks and the provider options.
        signal: the run's signal; None: no abort.
        emit: the event sink, plain or async (its exceptions are logged, R-5.1b); None: none.
        stream_fn: the provider stream function; default `yiemagent.ai.stream`.
        converter: the run's incremental `convert_to_llm` (the loop's); None: convert the
            whole transcript.
        trace: the run's span (DESIGN §13): the call gets a `chat` span; None: untraced.

    The final message's `duration_ms` is set (ms since its `timestamp`).
    """
    emit = guarded_sink(emit)
    if signal is None:
        signal = AbortSignal()
    deadline = Deadline(
        config.stream_idle_timeout_s, signal, armed=False, reason="the model stream went idle"
    )
    shown = _Shown()
    chat: ChatSpan | None = None
    try:
        llm_context = await _llm_context(context, config, signal, converter)
        options = await _stream_options(config, deadline)
        if trace is not None:
            chat = trace.chat(config.model, llm_context, options)
        message = await _read_stream(
            stream_fn or _default_stream_fn(),
            config,
            llm_context,
            options,
            emit,
            deadline,
            shown,
            chat,
        )
    except asyncio.CancelledError:
        fired = deadline.fired
        if fired is None or deadline.uncancel() > 0:
            if chat is not None:  # the run's task was cancelled: the span still ends
                text = "The run's task was cancelled"
                chat.end(_failed_message(config, shown.partial, text, "aborted"), "cancelled")
            raise
        if fired == "aborted" or signal.aborted:
            message = _failed_message(config, shown.partial, "The run was aborted", "aborted")
        else:
            text = f"The model stream sent nothing for {deadline.timeout_s:g} s"
            message = _failed_message(config, shown.partial, text)
    except Exception as exc:
        logger.exception("model call failed")
        message = _failed_message(config, shown.partial, f"{type(exc).__name__}: {exc}")
    finally:
        deadline.close()
    # empty or repeated tool-call ids are made unique before anyone sees the final
    # message, so message_end, the session store and the tool events all carry the same ids
    try:
        ensure_unique_tool_call_ids(message)
    except Exception:  # a malformed message: the batch answers what it can
        logger.exception("could not check the tool-call ids of the model's message")
    if message.duration_ms is None:
        message.duration_ms = max(0, now_ms() - message.timestamp)
    if chat is not None:
        chat.end(message, shown.error_type)
    if shown.partial is None:
        await emit(MessageStartEvent(message))
    await emit(MessageEndEvent(message))
    return message


async def _llm_context(
    context: AgentContext,
    config: AgentLoopConfig,
    signal: AbortSignal,
    convert: IncrementalConverter | None,
) -> Context:
    """R-5.2: `transform_context`, then `convert_to_llm`, as the provider's `Context`."""
    messages = context.messages
    if config.transform_context is not None:
        # a copy: a transform that prunes or appends in place must not edit the transcript
        messages = await maybe_await(config.transform_context(list(messages), signal))
        if messages is None:
            raise TypeError("transform_context returned None; return the list of messages")
    llm_messages: list[Message]
    if config.convert_to_llm is None or config.convert_to_llm is default_convert_to_llm:
        llm_messages = convert(messages) if convert else default_convert_to_llm(messages)
    else:
        converted = await maybe_await(config.convert_to_llm(messages))
        if converted is None:
            raise TypeError("convert_to_llm returned None; return the list of messages")
        llm_messages = list(converted)
    return Context(context.system_prompt, llm_messages, list(context.tools))


async def _stream_options(config: AgentLoopConfig, deadline: Deadline) -> StreamOptions:
    """The provider options of `config` for one call watched by `deadline`: its signal, its
    idle limit and its `keep_alive` (R-5.8); the API key is resolved per call (R-5.2)."""
    api_key = None
    if config.get_api_key is not None:
        api_key = await maybe_await(config.get_api_key(config.model.provider))
    provider = {name: getattr(config, name) for name in PROVIDER_OPTIONS}
    provider["api_key"] = api_key or config.api_key
    spec = config.output_type
    return StreamOptions(
        signal=deadline.signal,
        idle_timeout_s=deadline.timeout_s,
        keep_alive=deadline.keep_alive if deadline.timeout_s is not None else None,
        output_schema=None if spec is None else spec.native_schema(config.model),
        **provider,
    )


def _default_stream_fn() -> StreamFn:
    from yiemagent.ai import stream

    return stream


@dataclass(slots=True)
class _Shown:
    partial: AssistantMessage | None = None
    """The partial message announced by `message_start`, once the provider has started."""
    error_type: str | None = None
    """The provider's failure class when the call ended in error (`ErrorEvent`)."""


async def _read_stream(
    stream_fn: StreamFn,
    config: AgentLoopConfig,
    llm_context: Context,
    options: StreamOptions,
    emit: Emit,
    deadline: Deadline,
    shown: _Shown,
    chat: ChatSpan | None,
) -> AssistantMessage:
    """Call the provider and turn its events into message events; returns the final message.
    The provider call starts inside the chat span's context, so its HTTP spans nest in it."""
    deadline.arm()
    response: AssistantMessageEventStream
    if chat is None:
        response = await maybe_await(stream_fn(config.model, llm_context, options))
    else:
        with chat.activate():
            response = await maybe_await(stream_fn(config.model, llm_context, options))
    events = aiter(response)
    while True:
        deadline.arm()
        try:
            event: AssistantMessageEvent = await anext(events)
        except StopAsyncIteration:
            break
        deadline.disarm()
        if isinstance(event, DoneEvent):
            await _close(events)
            return event.message
        if isinstance(event, ErrorEvent):
            await _close(events)
            shown.error_type = event.error_type
            return event.error
        if shown.partial is None:
            shown.partial = event.partial
            await emit(MessageStartEvent(event.partial))
        if event.type != "start":
            await emit(MessageUpdateEvent(event.partial, event))
    deadline.disarm()
    return await response.result()


async def _close(events: AsyncIterator[AssistantMessageEvent]) -> None:
    """Close the event iterator now: left open, an async generator is finalised later through
    a round trip of the event loop (and its self-pipe), which costs more than the turn."""
    aclose = getattr(events, "aclose", None)
    if aclose is not None:
        await aclose()


def _failed_message(
    config: AgentLoopConfig,
    partial: AssistantMessage | None,
    error_message: str,
    stop_reason: Literal["error", "aborted"] = "error",
) -> AssistantMessage:
    """An error message keeping what had arrived; a new object, since the provider may still
    touch its partial after an abort."""
    message = assistant_message(config, stop_reason, error_message)
    if partial is not None:
        message.content = list(partial.content)
        message.usage = partial.usage
        message.timestamp = partial.timestamp
    return message


def assistant_message(
    config: AgentLoopConfig, stop_reason: Literal["error", "aborted"], error_message: str
) -> AssistantMessage:
    """An empty assistant message of `config.model` that ended with `stop_reason`."""
    model = config.model
    return AssistantMessage(
        api=model.api,
        provider=model.provider,
        model=model.id,
        usage=Usage(),
        stop_reason=stop_reason,
        error_message=error_message,
    )
