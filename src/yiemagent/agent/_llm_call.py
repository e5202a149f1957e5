"""The `Agent`'s model calls: `prepare_context` and the seeds' `llm_call` as a `StreamFn`
(DESIGN §6).

`llm_call_stream_fn` wraps a plain (non-streaming) `llm_call` as a provider stream function,
so a run through `llm_call` shares the whole loop (events, hooks, parallel tools);
`agent_stream_fn` picks what an `Agent` hands to the loop.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from typing import Any, Literal, TypeAlias

from yiemagent.agent._openai_format import (
    ParsedResponse,
    format_openai_messages,
    parse_llm_response,
)
from yiemagent.errors import exception_summary
from yiemagent.types import (
    AgentContext,
    AgentMessage,
    AgentState,
    AssistantMessageEventStream,
    Context,
    Model,
    StreamFn,
    StreamOptions,
)
from yiemagent.types.callbacks import adopt_task, is_async_callable, maybe_await

__all__ = [
    "FormatMessages",
    "LlmCall",
    "PrepareContext",
    "agent_stream_fn",
    "llm_call_stream_fn",
    "prepared_context",
]

logger = logging.getLogger(__name__)

LlmCall: TypeAlias = Callable[[dict[str, Any]], Any]
"""`llm_call(formatted) -> AssistantMessage | dict` (plain or async): the seeds' llmCall."""
PrepareContext: TypeAlias = Callable[[AgentState], "AgentContext | Awaitable[AgentContext]"]
"""`prepare_context(state) -> AgentContext` before each model call."""
FormatMessages: TypeAlias = Callable[[AgentContext], "dict[str, Any] | Awaitable[dict[str, Any]]"]
"""`format_messages(context) -> dict` handed to `llm_call`."""
AsyncStreamFn: TypeAlias = Callable[
    [Model, Context, StreamOptions | None], Awaitable[AssistantMessageEventStream]
]


async def prepared_context(
    prepare_context: PrepareContext | None, model: Model, context: Context
) -> Context:
    """Apply `prepare_context` to a provider context.

    The hook receives an `AgentState` snapshot of what the model is about to see (the
    messages after `convert_to_llm`, this turn's tools) and returns the `AgentContext` to
    send. No copy of the history is made. The tools it returns are the ones this model
    call offers (`offer_only`): a call of a tool it left out is answered as an unknown tool.

    Raises:
        TypeError: the hook returned something other than a context.
    """
    if prepare_context is None:
        return context
    state = AgentState(
        system_prompt=context.system_prompt,
        model=model,
        tools=list(context.tools or []),
        messages=list(context.messages),
        active_run=True,
    )
    prepared = await maybe_await(prepare_context(state))
    if not isinstance(prepared, AgentContext | Context):
        raise TypeError(
            f"prepare_context returned {type(prepared).__name__}; return an AgentContext"
        )
    from yiemagent.loop import offer_only

    messages: list[Any] = list(prepared.messages)
    tools = list(prepared.tools or [])
    offer_only(tools)
    return Context(prepared.system_prompt, messages, tools)


def agent_stream_fn(
    stream_fn: StreamFn | None,
    llm_call: LlmCall | None,
    prepare_context: PrepareContext | None,
    format_messages: FormatMessages | None,
) -> StreamFn | None:
    """What an `Agent` hands the loop: the `llm_call` adapter, or `stream_fn` (default the
    provider dispatch `yiemagent.ai.stream`) behind `prepare_context` when one is given."""
    if llm_call is not None:
        return llm_call_stream_fn(
            llm_call, prepare_context=prepare_context, format_messages=format_messages
        )
    if prepare_context is None:
        return stream_fn
    hook = prepare_context

    async def with_prepared_context(
        model: Model, context: Context, options: StreamOptions | None = None
    ) -> AssistantMessageEventStream:
        inner: StreamFn
        if stream_fn is None:
            from yiemagent.ai import stream as inner
        else:
            inner = stream_fn
        ready = await prepared_context(hook, model, context)
        result: AssistantMessageEventStream = await maybe_await(inner(model, ready, options))
        return result

    return with_prepared_context


async def _call_llm(llm_call: LlmCall, formatted: dict[str, Any]) -> Any:
    if is_async_callable(llm_call):
        return await llm_call(formatted)
    # A plain llm_call (usually a blocking HTTP request) runs on a worker thread.
    return await maybe_await(await asyncio.to_thread(llm_call, formatted))


def _replay(model: Model, parsed: ParsedResponse, stream: AssistantMessageEventStream) -> None:
    """Push the answer through `MessageBuilder`: the same events a streaming provider sends."""
    from yiemagent.ai.builder import MessageBuilder

    builder = MessageBuilder(model, stream)
    message = builder.message
    message.api = parsed.api or message.api
    message.provider = parsed.provider or message.provider
    message.model = parsed.model or message.model
    builder.start()
    for part in parsed.parts:
        if part.kind == "text":
            builder.text_delta(part.text)
        elif part.kind == "thinking":
            builder.thinking_delta(part.text, part.signature)
        else:
            builder.tool_call_start(part.id, part.name)
            builder.tool_call_delta(part.arguments)
        builder.end_block()
    if parsed.usage is not None:
        builder.set_usage(parsed.usage)
    stop = parsed.stop_reason
    failure = parsed.error_message or f"llm_call returned stop reason {stop!r}"
    if stop == "error":
        builder.fail("error", failure)
    elif stop == "aborted":
        builder.fail("aborted", failure)
    else:
        builder.done_by_content("length" if stop == "length" else "stop")


def _failed(
    model: Model, reason: Literal["error", "aborted"], text: str
) -> AssistantMessageEventStream:
    from yiemagent.ai.builder import MessageBuilder

    stream = AssistantMessageEventStream()
    builder = MessageBuilder(model, stream)
    builder.start()
    builder.fail(reason, text)
    return stream


async def _call_unless_aborted(
    llm_call: LlmCall, formatted: dict[str, Any], options: StreamOptions | None
) -> tuple[bool, Any]:
    """`(True, answer)`, or `(False, None)` when the run was aborted first."""
    signal = options.signal if options is not None else None
    call = asyncio.ensure_future(_call_llm(llm_call, formatted))
    adopt_task(call)  # an async llm_call is the run's code
    if signal is None:
        return True, await call
    aborted = asyncio.ensure_future(signal.wait())
    try:
        await asyncio.wait({call, aborted}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        aborted.cancel()
        if not call.done():
            call.cancel()  # a plain llm_call's thread finishes alone; its answer is dropped
    if not call.done() or call.cancelled():
        return False, None
    return True, call.result()


def llm_call_stream_fn(
    llm_call: LlmCall,
    *,
    prepare_context: PrepareContext | None = None,
    format_messages: FormatMessages | None = None,
) -> AsyncStreamFn:
    """A `StreamFn` that answers through a non-streaming `llm_call`.

    Per model call: the provider transcript repair, `prepare_context(state)`,
    `format_messages(context)` (default `format_openai_messages`), `llm_call(formatted)` (an
    async one is awaited, a plain one runs on a worker thread), then its answer (any shape
    `parse_llm_response` accepts) replayed through `MessageBuilder` as text/thinking/tool-call
    events. String tool-call arguments go through the builder like streamed ones: valid JSON
    gives that object; otherwise the raw text stays in the call's `partial_json` and the tool
    pipeline answers the model "arguments are not valid JSON" with that text.

    Never raises: a failure of any step ends the stream with stop reason "error" and the
    exception text; an abort of the run ends it with "aborted" at once.
    """
    fmt = format_messages or format_openai_messages

    async def stream_fn(
        model: Model, context: Context, options: StreamOptions | None = None
    ) -> AssistantMessageEventStream:
        if options is not None and options.signal is not None and options.signal.aborted:
            return _failed(model, "aborted", "Operation aborted")
        try:
            from yiemagent.ai.transform import transform_messages

            offered = [tool.name for tool in context.tools or ()]
            messages = transform_messages(context.messages, model, tool_names=offered)
            repaired = Context(context.system_prompt, messages, context.tools)
            ready = await prepared_context(prepare_context, model, repaired)
            history: list[AgentMessage] = list(ready.messages)
            agent_context = AgentContext(ready.system_prompt, history, list(ready.tools or []))
            formatted = await maybe_await(fmt(agent_context))
            answered, response = await _call_unless_aborted(llm_call, formatted, options)
            if not answered:
                return _failed(model, "aborted", "Operation aborted")
            parsed = parse_llm_response(response)
        except Exception as exc:  # a provider never raises
            said = f"llm_call failed: {exception_summary(exc)}"
            logger.warning("%s", said)
            return _failed(model, "error", said)
        stream = AssistantMessageEventStream()
        _replay(model, parsed, stream)
        return stream

    return stream_fn
