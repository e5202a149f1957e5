"""`FallbackModel`: several models tried in order when a provider fails (DESIGN §13).

`FallbackModel([a, b, …])` is a `Model` (api "fallback") that any loop or `Agent` takes in
place of one model. Each call goes to `a` first. When `a` fails *before any content was
streamed* with a provider failure — the server could not be reached or reset the
connection, answered 5xx or 429 (as a status, or as an error event opening its stream)
after the provider's own retries, refused the key (401, 403), does not have the model
(404: a retired model, or one the key may not use) or there was no key — the same
request goes to `b`, and so on. The relayed stream then carries a `fallback` event
(`FallbackEvent`: which model failed and why), which the loop shows as a
`message_update`, so the failures are in the run's events; the final message is the
answering model's own (its `provider` and `model` say which one answered).

A model that takes the request and then sends nothing is failing too: the relay watches
each model's silence itself (`silence_limit_s`: the call's `idle_timeout_s`, or its
`reasoning_timeout_s` while a reasoning model shows only reasoning). While a model is
within its limit the relay tells the caller's watchdog that it is alive
(`StreamOptions.keep_alive`: the agent loop's `stream_idle_timeout_s` would otherwise end
the whole call first); once a model has been silent that long, its call is aborted and the
next model is tried (error type "timeout"). So each model gets its own silence limit.

Nothing falls through when the failure is not the provider's: an abort, a 4xx request
error (400, 422: the next model would be sent the same bad request), a failure after
content was streamed (the consumer has seen it; a retry elsewhere would repeat it), or the
last model failing. Those end the stream as the failing model ended it; when models before
it failed, its error message then goes on to name each of them and why.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncGenerator, Sequence
from dataclasses import dataclass, fields, replace
from typing import Literal

from yiemagent.ai._registry import get_stream_fn
from yiemagent.errors import ConfigError, exception_summary
from yiemagent.types.callbacks import maybe_await
from yiemagent.types.messages import AssistantMessage
from yiemagent.types.model import (
    AssistantMessageEvent,
    AssistantMessageEventStream,
    AssistantStartEvent,
    Context,
    DoneEvent,
    ErrorEvent,
    FallbackEvent,
    Model,
    StreamOptions,
    silence_limit_s,
)
from yiemagent.types.signal import AbortSignal

__all__ = ["FALLBACK_API", "FallbackModel", "falls_through", "stream_fallback"]

logger = logging.getLogger(__name__)

FALLBACK_API = "fallback"
"""The `Model.api` of a `FallbackModel`."""

_PROVIDER_FAILURES = frozenset(
    {"connection", "timeout", "retry_delay", "no_api_key", "no_sdk", "401", "403"}
)


def falls_through(event: ErrorEvent) -> bool:
    """Whether a failed call may be retried on the next model: reason "error" with a
    provider failure class (`ErrorEvent.error_type`): connection, timeout, a too-long retry
    delay, no API key, the provider's SDK not installed, 401/403, 404 (the model or
    address, not the request, is unknown there), 408, 429 or 5xx."""
    kind = event.error_type
    if event.reason != "error" or kind is None:
        return False
    if kind in _PROVIDER_FAILURES:
        return True
    return kind.isdigit() and (kind in ("404", "408", "429") or 500 <= int(kind) <= 599)


@dataclass(slots=True, frozen=True, init=False)
class FallbackModel(Model):
    """Models tried in order on provider failures; a `Model` itself.

    Its `id`, `provider` and prices are the first model's (so spans and limits name what
    was asked for); `api` is "fallback"; `models` the models in order. Its context window
    is the smallest of theirs (a request that fits it fits each), and it is a reasoning
    model (`reasoning`) when any of them is: a reasoning level is then not ignored, and
    the run waits out a silent reasoning model's thinking whichever answers, while each
    model's own call keeps its own limit (a model that cannot think is still held to the
    idle limit).

    Args:
        models: Two or more `Model`s (one is allowed); nested `FallbackModel`s are flattened.

    Raises:
        ConfigError: no model, or an item that is not a `Model`.
    """

    models: tuple[Model, ...] = ()

    def __init__(self, models: Sequence[Model]) -> None:
        if isinstance(models, Model):
            raise ConfigError("FallbackModel takes a list of models, e.g. FallbackModel([a, b])")
        flat: list[Model] = []
        for model in models:
            if not isinstance(model, Model):
                raise ConfigError(f"FallbackModel: {model!r} is not a Model")
            flat.extend(model.models if isinstance(model, FallbackModel) else (model,))
        if not flat:
            raise ConfigError("FallbackModel needs at least one model")
        first = flat[0]
        for f in fields(Model):
            object.__setattr__(self, f.name, getattr(first, f.name))
        object.__setattr__(self, "api", FALLBACK_API)
        object.__setattr__(self, "name", " | ".join(f"{m.provider}/{m.id}" for m in flat))
        object.__setattr__(self, "context_window", min(m.context_window for m in flat))
        object.__setattr__(self, "reasoning", any(m.reasoning for m in flat))
        object.__setattr__(self, "models", tuple(flat))


def stream_fallback(
    model: Model, context: Context, options: StreamOptions | None = None
) -> AssistantMessageEventStream:
    """The "fallback" entry of the provider map: relay the first model that answers.

    Returns at once; never raises (a model that is not a `FallbackModel`, or no running
    event loop, ends the stream with an error event).
    """
    out = AssistantMessageEventStream()
    if not isinstance(model, FallbackModel):
        _fail(out, model, f"api {FALLBACK_API!r} needs a FallbackModel, not {model!r}")
        return out
    try:
        loop = asyncio.get_running_loop()
    except RuntimeError as exc:
        _fail(out, model, f"FallbackModel needs a running event loop: {exc}")
        return out
    task = loop.create_task(_relay(model, context, options or StreamOptions(), out))
    _tasks.add(task)
    task.add_done_callback(_tasks.discard)
    return out


_tasks: set[asyncio.Task[None]] = set()


def _fail(
    out: AssistantMessageEventStream,
    model: Model,
    text: str,
    started: bool = False,
    reason: Literal["error", "aborted"] = "error",
) -> None:
    from yiemagent.ai.builder import MessageBuilder

    builder = MessageBuilder(model, out)
    if not started:
        builder.start()
    builder.fail(reason, text)


@dataclass(slots=True)
class _Heard:
    """When one model's call last showed life: an event, or its provider's `keep_alive`
    (bytes without an event, a model loading), in `loop.time()` seconds."""

    at: float


def _options_for(
    model: Model, first: Model, options: StreamOptions, signal: AbortSignal, heard: _Heard
) -> StreamOptions:
    """`options` for one model's call: aborted by `signal` (the model's own: the relay
    aborts it when the model stays silent), its provider's `keep_alive` noted in `heard`
    and passed on. The loop resolved the key for the first model's provider: another
    provider's model looks its own key up (its environment variable) instead of being
    sent that one."""
    loop = asyncio.get_running_loop()
    outer = options.keep_alive

    def keep_alive() -> None:
        heard.at = loop.time()
        if outer is not None:
            outer()

    key = options.api_key if model.provider == first.provider else None
    return replace(options, api_key=key, signal=signal, keep_alive=keep_alive)


async def _open(
    model: Model, context: Context, options: StreamOptions
) -> AssistantMessageEventStream:
    return await maybe_await(get_stream_fn(model.api)(model, context, options))


async def _relay(
    fallback: FallbackModel,
    context: Context,
    options: StreamOptions,
    out: AssistantMessageEventStream,
) -> None:
    first = fallback.models[0]
    failed: ErrorEvent | None = None
    failed_model: Model | None = None
    earlier: list[str] = []
    started = False
    last = len(fallback.models) - 1
    try:
        for index, model in enumerate(fallback.models):
            signal = options.signal.child() if options.signal is not None else AbortSignal()
            heard = _Heard(asyncio.get_running_loop().time())
            own = _options_for(model, first, options, signal, heard)
            inner = await _open(model, context, own)
            streamed = False
            watched = _watched(inner, model, options, signal, heard)
            async with contextlib.aclosing(watched) as events:
                async for event in events:
                    if isinstance(event, AssistantStartEvent):
                        if not started:
                            started = True
                            out.push(event)
                        elif failed is not None and failed_model is not None:
                            out.push(_moved_on(failed_model, failed, event))
                        continue
                    if isinstance(event, ErrorEvent):
                        if streamed or index == last or not falls_through(event):
                            out.push(_after(event, earlier))
                            return
                        logger.info(
                            "%s/%s failed (%s): %s; trying %s/%s",
                            model.provider,
                            model.id,
                            event.error_type,
                            event.error.error_message,
                            fallback.models[index + 1].provider,
                            fallback.models[index + 1].id,
                        )
                        failed, failed_model = event, model
                        earlier.append(
                            f"{model.provider}/{model.id}: {event.error.error_message or 'failed'}"
                        )
                        break
                    streamed = True
                    out.push(event)
                    if isinstance(event, DoneEvent):
                        return
                else:  # the inner stream ended without done/error: end ours with its result
                    _push_final(out, await inner.result())
                    return
            if options.signal is not None and options.signal.aborted:
                assert failed is not None
                out.push(failed)
                return
    except Exception as exc:  # a provider that raised instead of ending its stream
        logger.exception("FallbackModel relay failed")
        _fail(out, fallback, exception_summary(exc), started)
    finally:
        if not out.done:  # cancelled: the stream still ends
            _fail(out, fallback, "the request was cancelled", started, "aborted")


async def _watched(
    inner: AssistantMessageEventStream,
    model: Model,
    options: StreamOptions,
    signal: AbortSignal,
    heard: _Heard,
) -> AsyncGenerator[AssistantMessageEvent, None]:
    """The events of `model`'s call `inner`, until it ends or shows no life (`heard`: an
    event or its provider's `keep_alive`) for its limit (`silence_limit_s`, read again after
    each event): then its `signal` is aborted and an error event of type "timeout" ends it.
    While waiting within the limit, `options.keep_alive` is called every third of it, so
    the caller's watchdog of the same limit leaves the deciding to the relay."""
    loop = asyncio.get_running_loop()
    events = aiter(inner)
    partial: AssistantMessage | None = None
    try:
        while True:
            limit = silence_limit_s(model, options, partial)
            step = asyncio.ensure_future(anext(events))
            while limit is not None and not step.done():
                left = limit - (loop.time() - heard.at)
                if left <= 0:
                    step.cancel()
                    yield _silent(model, partial, limit)
                    return
                await asyncio.wait({step}, timeout=min(left, limit / 3))
                if not step.done() and options.keep_alive is not None:
                    options.keep_alive()
            try:
                event = await step
            except StopAsyncIteration:
                return
            heard.at = loop.time()
            partial = getattr(event, "partial", partial)
            yield event
    finally:
        signal.detach()


def _silent(model: Model, partial: AssistantMessage | None, limit: float) -> ErrorEvent:
    """The failure of a model that sent nothing for `limit` seconds; its message keeps what
    it had streamed (`partial`)."""
    text = f"{model.provider}/{model.id} sent nothing for {limit:g} s"
    message = partial or AssistantMessage(
        [], api=model.api, provider=model.provider, model=model.id
    )
    message.stop_reason = "error"
    message.error_message = text
    return ErrorEvent("error", message, error_type="timeout")


def _after(event: ErrorEvent, earlier: Sequence[str]) -> ErrorEvent:
    """The last model's failure, its message naming the failures of the models tried
    before it (`"<provider>/<id>: <error>"` each), so the error says that every model
    failed and why, not only the last one."""
    if not earlier or event.reason != "error":
        return event
    message = event.error
    own = message.error_message or "failed"
    message.error_message = f"{own} (the models tried before failed too: {'; '.join(earlier)})"
    return event


def _moved_on(model: Model, failed: ErrorEvent, start: AssistantStartEvent) -> FallbackEvent:
    return FallbackEvent(
        failed_provider=model.provider,
        failed_model=model.id,
        error_message=failed.error.error_message or "failed",
        error_type=failed.error_type,
        partial=start.partial,
    )


def _push_final(out: AssistantMessageEventStream, message: object) -> None:
    from yiemagent.types.messages import AssistantMessage

    assert isinstance(message, AssistantMessage)
    event: AssistantMessageEvent
    if message.stop_reason in ("error", "aborted"):
        event = ErrorEvent(message.stop_reason, message)
    else:
        event = DoneEvent(message.stop_reason, message)  # type: ignore[arg-type]
    out.push(event)
