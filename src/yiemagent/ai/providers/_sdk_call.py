"""The one streaming call both SDK providers make (DESIGN §7).

`anthropic-messages` and `openai-completions` differ only in what an `SdkApi` holds: the SDK
and its client class, the key's variable, the request body, how the raw stream is opened,
how its items become builder calls (the assembler) and which in-stream errors are retried.
`stream_sdk` does the rest, the same for both: start the call (`call.start_call`: the stream
returns at once and always ends), resolve the key, build the body (`on_payload`, surrogates
made safe), reuse the cached client, run the attempts with retries (`retry.py`) while
nothing has been streamed, read the stream within the idle limit, end the message,
and describe a failure (`sdk_failures.py`). The SDK is imported at the first call, never
before (`import yiemagent` loads no SDK).
"""

from __future__ import annotations

import importlib
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from types import ModuleType
from typing import Any, Generic, Protocol, TypeVar

from yiemagent.ai._sanitize import sanitize_surrogates
from yiemagent.ai.builder import MessageBuilder
from yiemagent.ai.providers._call import (
    api_key_for_call,
    apply_on_payload,
    await_with_idle_timeout,
    cached_client,
    call_hook,
    iterate_with_idle_timeout,
    start_call,
)
from yiemagent.ai.providers._http_guard import guarded_http_client
from yiemagent.ai.providers._sdk_failures import describe_sdk_failure
from yiemagent.ai.retry import RetryDecision, run_with_retries
from yiemagent.types.callbacks import maybe_await
from yiemagent.types.model import AssistantMessageEventStream, Context, Model, StreamOptions

__all__ = ["SdkApi", "StreamAssembler", "open_raw_stream", "sdk_client", "stream_sdk"]

T = TypeVar("T")
C = TypeVar("C")


class StreamAssembler(Protocol):
    """Turns one SDK stream's items into `MessageBuilder` calls (one per call, not shared)."""

    @property
    def streamed(self) -> bool:
        """Whether content has reached the message (then a retry would repeat it)."""
        ...

    def feed(self, item: Any) -> None:
        """Take one streamed item (an SDK event or chunk)."""
        ...

    def finish(self) -> None:
        """End the message after the last item (the stop reason, or the stream's fault)."""
        ...


@dataclass(frozen=True, slots=True)
class SdkApi(Generic[C]):
    """What one SDK provider supplies to `stream_sdk`; `C` is its async client class."""

    name: str
    """The wire API (`Model.api`), as in error texts: "openai-completions"."""
    sdk: str
    """The SDK's module, imported at the first call: "openai", "anthropic"."""
    client_class: str
    """The async client class in that module: "AsyncOpenAI"."""
    env_var: str
    """The API key's environment variable, named when the key is missing."""
    key_required: Callable[[Model], bool]
    """Whether this model's server needs a key (a hosted API; a local server does not)."""
    build_body: Callable[[Model, Context, StreamOptions], dict[str, Any]]
    """The request body, before `StreamOptions.on_payload`."""
    assembler: Callable[[MessageBuilder], StreamAssembler]
    """A new assembler for one call's message."""
    open_stream: Callable[[C, dict[str, Any], float | None], Awaitable[Any]]
    """`(client, body, idle_timeout_s)` → the SDK's raw streaming response (one attempt;
    usually `open_raw_stream` on the client's endpoint)."""
    classify: Callable[[BaseException, ModuleType], RetryDecision | None]
    """`(failure, sdk module)` → a `RetryDecision` when it is retried, else None (usually
    `sdk_failures.sdk_retry_decision`, after the API's own in-stream errors)."""
    error_type: bool = False
    """Whether failure texts start with the API's error type ("overloaded_error: …")."""


def stream_sdk(
    api: SdkApi[Any], model: Model, context: Context, options: StreamOptions | None = None
) -> AssistantMessageEventStream:
    """Stream one call of `api` (the body of each SDK provider's `StreamFn`).

    Returns:
        The event stream, at once; it always ends with `done` or `error` (or `error` with
        reason "aborted"), never raises: HTTP status in the text, every key scrubbed.
    """
    opts = options or StreamOptions()
    return start_call(
        model,
        lambda builder, secrets: _run(api, model, context, opts, builder, secrets),
        describe=lambda exc: describe_sdk_failure(
            exc, importlib.import_module(api.sdk), error_type=api.error_type
        ),
        name=api.name,
    )


async def _run(
    api: SdkApi[Any],
    model: Model,
    context: Context,
    options: StreamOptions,
    builder: MessageBuilder,
    secrets: list[str | None],
) -> None:
    api_key = api_key_for_call(
        model, options.api_key, secrets, required=api.key_required(model), env_var=api.env_var
    )
    body = await apply_on_payload(options.on_payload, api.build_body(model, context, options))
    body = sanitize_surrogates(body)
    sdk = importlib.import_module(api.sdk)  # after the key: a missing key is said first
    client = sdk_client(
        getattr(sdk, api.client_class),
        model,
        options,
        api_key,
        http_client_class=sdk.DefaultAsyncHttpxClient,
    )
    assembler = api.assembler(builder)

    async def attempt(_number: int) -> None:
        raw = await api.open_stream(client, body, options.idle_timeout_s)
        await _read_stream(raw, options, assembler.feed)

    await run_with_retries(
        attempt,
        classify=lambda exc: api.classify(exc, sdk),
        may_retry=lambda: not assembler.streamed,
        signal=options.signal,
        max_retry_delay_ms=options.max_retry_delay_ms,
    )
    assembler.finish()


def sdk_client(
    sdk_class: Callable[..., T],
    model: Model,
    options: StreamOptions,
    api_key: str,
    *,
    http_client_class: type[Any] | None = None,
) -> T:
    """The cached client of an official SDK (`AsyncOpenAI`, `AsyncAnthropic`) for this model's
    base URL, key and headers; the SDK's own retries are off (`max_retries=0`): ours apply.
    With `http_client_class` (the SDK's `DefaultAsyncHttpxClient`) its HTTP client runs on
    the guarded transport (`http_guard`: streamed bytes made valid UTF-8, a cut connection
    explained)."""
    headers = {**(model.headers or {}), **(options.headers or {})}
    name = getattr(sdk_class, "__name__", repr(sdk_class))
    key = (name, model.base_url, api_key, tuple(sorted(headers.items())))

    def make() -> T:
        extra = (
            {}
            if http_client_class is None
            else {"http_client": guarded_http_client(http_client_class)}
        )
        return sdk_class(
            api_key=api_key,
            base_url=model.base_url,
            max_retries=0,
            default_headers=headers or None,
            **extra,
        )

    return cached_client(key, make)


async def open_raw_stream(
    create: Callable[..., Awaitable[Any]],
    body: dict[str, Any],
    named: Sequence[str],
    idle_timeout_s: float | None,
) -> Any:
    """`create(<named fields of body>, stream=True, extra_body=<the rest>)`: an SDK's
    `with_raw_response.create`, given the fields its signature requires by name and every
    other field as they are (so the SDK neither checks nor drops them); the wait for the
    response headers counts as idle time (`IdleTimeoutError` after `idle_timeout_s`)."""
    fields = {name: body[name] for name in named}
    rest = {k: v for k, v in body.items() if k not in fields and k != "stream"}
    return await await_with_idle_timeout(
        create(**fields, stream=True, extra_body=rest), idle_timeout_s
    )


async def _read_stream(raw: Any, options: StreamOptions, feed: Callable[[Any], None]) -> None:
    """Read one SDK raw response: `StreamOptions.on_response` gets `{"status", "headers"}`,
    then each streamed item goes to `feed`, each within the idle limit; the SDK
    stream is closed however this ends."""
    await call_hook(options.on_response, {"status": raw.status_code, "headers": dict(raw.headers)})
    sdk_stream = await maybe_await(raw.parse())
    try:
        async for item in iterate_with_idle_timeout(aiter(sdk_stream), options.idle_timeout_s):
            feed(item)
    finally:
        await sdk_stream.close()
