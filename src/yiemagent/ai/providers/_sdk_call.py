"""The call of an SDK provider (DESIGN §7): the one streaming call both `anthropic-messages`
and `openai-completions` make, its frame, and the API keys it uses.

The two providers differ only in what an `SdkApi` holds: the SDK and its client class, the
key's variable, the request body, how the raw stream is opened, how its items become builder
calls (the assembler) and which in-stream errors are retried. `stream_sdk` does the rest, the
same for both:

- the call starts at once and returns its stream (`start_call`), and never raises: any
  failure ends the message (`run_guarded`), its text scrubbed of every key (`scrub`);
- the key is `StreamOptions.api_key`, else the provider's environment variable
  (`api_key_for_call`; a keyless local server gets a placeholder);
- the body passes `on_payload` and is made safe to encode; one SDK client is reused per
  event loop (`cached_client`), on the guarded HTTP transport (`_http_guard`);
- attempts are retried (`_retry.run_with_retries`) while nothing has been streamed; what an
  SDK's failure means is `_sdk_failures`'s business;
- the stream is read within the idle limit (`StreamOptions.idle_timeout_s`; the longer
  `reasoning_timeout_s` while a reasoning model shows only reasoning); an API whose
  response may ask for another request to go on (`SdkApi.continuation`) gets it, streamed
  into the same message; then the message is ended.

The SDK is imported at the first call, never before (`import yiemagent` loads no SDK).
"""

from __future__ import annotations

import asyncio
import importlib
import json
import logging
import os
import re
import urllib.parse
import weakref
from collections.abc import (
    AsyncIterator,
    Awaitable,
    Callable,
    Coroutine,
    Hashable,
    Iterable,
    Mapping,
    Sequence,
)
from dataclasses import dataclass
from types import ModuleType
from typing import Any, Final, Generic, Protocol, TypeVar

from yiemagent.ai._retry import (
    AbortedError,
    RetryDecision,
    RetryDelayTooLongError,
    retry_note,
    run_with_retries,
    transport_error_types,
)
from yiemagent.ai._sanitize import sanitize_surrogates
from yiemagent.ai.builder import MessageBuilder
from yiemagent.ai.providers._http_guard import (
    cut_stream_text,
    ended_with_done,
    guarded_http_client,
    stream_bytes_arrived,
)
from yiemagent.ai.providers._sdk_failures import (
    MAX_DETAIL_CHARS,
    body_error_text,
    describe_sdk_failure,
    json_body_text,
    stream_error_status,
)
from yiemagent.errors import YiemAgentError, exception_summary, install_hint
from yiemagent.types.callbacks import maybe_await
from yiemagent.types.model import (
    AssistantMessageEventStream,
    Context,
    Model,
    StreamOptions,
    silence_limit_s,
)

__all__ = [
    "ENV_KEYS",
    "NO_KEY",
    "IdleTimeoutError",
    "SdkApi",
    "SetupError",
    "StreamAssembler",
    "StreamFailed",
    "api_key_for_call",
    "env_key_names",
    "failure_type",
    "get_env_api_key",
    "jinja_hint",
    "key_hint",
    "open_raw_stream",
    "plain_failure_text",
    "resolve_api_key",
    "run_guarded",
    "scrub",
    "sdk_client",
    "start_call",
    "stream_sdk",
    "unreachable_hint",
]

logger = logging.getLogger(__name__)

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
    `_sdk_failures.sdk_retry_decision`, after the API's own in-stream errors)."""
    error_type: bool = False
    """Whether failure texts start with the API's error type ("overloaded_error: …")."""
    continuation: Callable[[StreamAssembler, dict[str, Any]], dict[str, Any] | None] | None = None
    """`(assembler, body)` after a response → the body of one more request whose response
    goes on in the same message (Anthropic's `pause_turn`), or None: the message is done."""
    whole: Callable[[Any], list[Any]] | None = None
    """`(the JSON of a response that came whole, not as an event stream)` → the streamed
    items it stands for: some servers ignore `stream: true`. None: such a response is an
    error saying so."""
    ended_with_done: Callable[[Any], None] | None = None
    """`(assembler)` after a stream whose bytes held `data: [DONE]`, the API's end marker
    (`_http_guard.ended_with_done`), before `finish`: the answer is whole even when the
    server gave no finish reason. None: the API has no such marker."""
    base_url_tails: tuple[str, ...] = ()
    """Endings taken off a base URL before the SDK appends its own path to it: the whole
    endpoint pasted as the base URL ("/chat/completions"), or the API's version root the
    SDK adds itself (Anthropic's "/v1"). Kept, they doubled in the request's URL (a 404)."""


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
        describe=lambda exc: (
            describe_sdk_failure(exc, importlib.import_module(api.sdk), error_type=api.error_type)
            + key_hint(exc, model.provider, opts.api_key, model.base_url)
            + jinja_hint(exc, model)
            + unreachable_hint(exc, importlib.import_module(api.sdk), model)
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
    # The SDK before the key: without the extra a key alone does not help, so the install
    # command is said first.
    sdk = importlib.import_module(api.sdk)
    api_key = api_key_for_call(
        model, options.api_key, secrets, required=api.key_required(model), env_var=api.env_var
    )
    body = await apply_on_payload(options.on_payload, api.build_body(model, context, options))
    body = sanitize_surrogates(body)
    client = sdk_client(
        getattr(sdk, api.client_class),
        model,
        options,
        api_key,
        http_client_class=sdk.DefaultAsyncHttpxClient,
        base_url=base_url_root(model.base_url, api.base_url_tails),
    )
    assembler = api.assembler(builder)

    def limit() -> float | None:
        return silence_limit_s(model, options, builder.message)

    async def attempt(_number: int) -> None:
        raw = await api.open_stream(client, body, limit())
        await _read_stream(raw, options, assembler.feed, api.whole, limit)
        if api.ended_with_done is not None and ended_with_done(raw.http_response):
            api.ended_with_done(assembler)

    while True:
        await run_with_retries(
            attempt,
            classify=lambda exc: api.classify(exc, sdk),
            may_retry=lambda: not assembler.streamed,
            signal=options.signal,
            max_retry_delay_ms=options.max_retry_delay_ms,
        )
        more = api.continuation(assembler, body) if api.continuation is not None else None
        if more is None:
            break
        body = more
    assembler.finish()


def sdk_client(
    sdk_class: Callable[..., T],
    model: Model,
    options: StreamOptions,
    api_key: str,
    *,
    http_client_class: type[Any] | None = None,
    base_url: str | None = None,
) -> T:
    """The cached client of an official SDK (`AsyncOpenAI`, `AsyncAnthropic`) for this model's
    base URL (or `base_url`, when given), key and headers; the SDK's own retries are off
    (`max_retries=0`): ours apply. With `http_client_class` (the SDK's
    `DefaultAsyncHttpxClient`) its HTTP client runs on the guarded transport (`_http_guard`:
    streamed bytes made valid UTF-8, a cut connection explained). At Azure OpenAI the key
    goes in the `api-key` header too, unless it is the Entra ID token (`AZURE_AD_TOKEN`),
    which goes only as the SDK's `Authorization: Bearer`."""
    headers = {**(model.headers or {}), **(options.headers or {})}
    name = getattr(sdk_class, "__name__", repr(sdk_class))
    base_url, query = _split_query(model.base_url if base_url is None else base_url)
    keyed = any(header.lower() == "api-key" for header in headers)
    azure = model.provider == "azure" or (base_url is not None and _is_azure(base_url))
    token = api_key == os.environ.get(AZURE_AD_TOKEN)  # the SDK sends it as the bearer
    if azure and not keyed and not token:
        headers["api-key"] = api_key
    key = (name, base_url, tuple(query.items()), api_key, tuple(sorted(headers.items())))

    def make() -> T:
        extra = (
            {}
            if http_client_class is None
            else {"http_client": guarded_http_client(http_client_class)}
        )
        return sdk_class(
            api_key=api_key,
            base_url=base_url,
            max_retries=0,
            default_headers=headers or None,
            default_query=query or None,
            **extra,
        )

    return cached_client(key, make)


def _split_query(base_url: str | None) -> tuple[str | None, dict[str, str]]:
    """`base_url` without its query string, and that query's parameters, which go on every
    request (`default_query`): Azure OpenAI's deployments take their `api-version` so. The
    SDKs append their path to the whole base URL, query included, which put it inside the
    query (`…/gpt-4o/?api-version=2024-10-21chat/completions`)."""
    if base_url is None or "?" not in base_url:
        return base_url, {}
    root, _, query = base_url.partition("?")
    return root, dict(urllib.parse.parse_qsl(query.split("#", 1)[0], keep_blank_values=True))


_AZURE_HOSTS = (".openai.azure.com", ".cognitiveservices.azure.com", ".services.ai.azure.com")


def _is_azure(base_url: str) -> bool:
    """Whether `base_url` is an Azure OpenAI resource's (its host, or a deployment's path
    `/openai/deployments/` behind any host), which takes an API key in its `api-key`
    header: a deployment's endpoint reads `Authorization: Bearer` as an Entra ID token
    and answers an API key there with 401."""
    parts = urllib.parse.urlsplit(base_url)
    host = (parts.hostname or "").lower()
    return host.endswith(_AZURE_HOSTS) or "/openai/deployments/" in parts.path + "/"


def base_url_root(base_url: str | None, tails: Sequence[str]) -> str | None:
    """`base_url` without the first of `tails` it ends with (a trailing "/" ignored), so
    that the path an SDK appends is not doubled: "http://host/v1/chat/completions" is
    "http://host/v1" for the Chat Completions SDK call."""
    if base_url is None:
        return None
    if "?" in base_url:  # the query stays for `_split_query`
        root, _, query = base_url.partition("?")
        return f"{base_url_root(root, tails)}?{query}"
    trimmed = base_url.rstrip("/")
    for tail in tails:
        if trimmed.endswith(tail) and len(trimmed) > len(tail):
            root = trimmed[: -len(tail)]
            if "://" in root and root.split("://", 1)[1]:  # a host is left
                logger.debug("base URL %s taken as %s", base_url, root)
                return root
    return base_url


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


async def _read_stream(
    raw: Any,
    options: StreamOptions,
    feed: Callable[[Any], None],
    whole: Callable[[Any], list[Any]] | None = None,
    limit: Callable[[], float | None] | None = None,
) -> None:
    """Read one SDK raw response: `StreamOptions.on_response` gets `{"status", "headers"}`,
    then each streamed item goes to `feed`, each within the idle limit (`limit()` before
    each item, default `options.idle_timeout_s`), and calls
    `options.keep_alive` (an item is progress even when it adds nothing to the message: a
    llama.cpp prompt-progress chunk, text held back while it may be a tool call); the SDK
    stream is closed however this ends. A JSON response of a known length (a server that
    ignored `stream: true`) is read whole and fed as the items `whole` makes of it; one
    that holds events after all goes to the SDK as any stream.

    Raises:
        ValueError: a JSON response, and no `whole` to read it; a whole body that holds no
            events (a proxy's login or error page or note sent with status 200, an empty
            body); an event whose data is JSON but no object (`data: null`): the events
            around it may be whole, but a stream that sends one is not to be trusted.
    """
    await call_hook(options.on_response, {"status": raw.status_code, "headers": dict(raw.headers)})
    content_type = str(raw.headers.get("content-type", "")).lower()
    if "json" in content_type and "content-length" in raw.headers:  # not a stream, mislabelled
        body = await await_with_idle_timeout(raw.http_response.aread(), options.idle_timeout_s)
        try:
            data = json.loads(body)
        except ValueError:
            data = None  # events after all: the SDK reads them from the body read
        if data is not None:
            if whole is None:
                raise ValueError(
                    "the server answered with one JSON body, not an event stream: "
                    + json_body_text(data)
                )
            for item in whole(data):
                feed(item)
            return
    if "content-length" in raw.headers and (
        "text/event-stream" not in content_type or raw.headers["content-length"] == "0"
    ):  # a proxy's page or note, an empty body: whole, so read to see whether it has events
        body = await await_with_idle_timeout(raw.http_response.aread(), options.idle_timeout_s)
        text = body.decode("utf-8", "replace")
        if not re.search(r"^data:", text, re.MULTILINE):  # else events after all, as above
            raise ValueError(_no_events(content_type, text))
    sdk_stream = await maybe_await(raw.parse())
    keep_alive = options.keep_alive
    items = iterate_with_idle_timeout(
        aiter(sdk_stream),
        options.idle_timeout_s if limit is None else limit,
        keep_alive=keep_alive,
    )
    try:
        async for item in items:
            if item is None or isinstance(item, str | int | float | list):
                # `data: null` (some relays send it mid-stream), a number, a string, a list
                raise ValueError(
                    "the server sent an event whose data is no JSON object: data: "
                    + json.dumps(item, ensure_ascii=False)[:MAX_DETAIL_CHARS]
                )
            feed(item)
            if keep_alive is not None:
                keep_alive()
    finally:
        await sdk_stream.close()


def _no_events(content_type: str, text: str) -> str:
    """What a whole body that holds no events is, for the error of a stream request: a
    web page (its title), an empty body, or the body's type and what it says."""
    if not text.strip():
        return "the server answered with an empty body, not an event stream"
    if "text/html" in content_type:
        return "the server answered with a web page, not an event stream: " + (
            body_error_text(text) or "an empty page"
        )
    kind = content_type.split(";")[0].strip() or "a body of no content type"
    return f"the server answered with {kind}, not an event stream: " + (
        body_error_text(text) or "nothing readable"
    )


# ── the frame of a call ──────────────────────────────────────────────────────


class IdleTimeoutError(YiemAgentError):
    """No chunk arrived for the idle timeout (`StreamOptions.idle_timeout_s`)."""


class SetupError(YiemAgentError):
    """A problem found before any request was sent (no API key)."""


class StreamFailed(YiemAgentError):
    """An API's failure event inside a stream (the Responses API's `response.failed`),
    raised by an assembler only while nothing has been streamed, so the call is retried
    like the HTTP status it stands for (`status_code`, which also gives its
    `ErrorEvent.error_type`). The text is the API's "code: message"."""

    def __init__(self, text: str, status_code: int) -> None:
        super().__init__(text)
        self.status_code = status_code


def api_key_for_call(
    model: Model,
    explicit: str | None,
    secrets: list[str | None],
    *,
    required: bool,
    env_var: str,
) -> str:
    """The key for one call: `explicit`, else the provider's environment variable; a keyless
    local server gets the `NO_KEY` placeholder. Both candidates join `secrets`, so every error
    text the call produces is scrubbed of them.

    Raises:
        SetupError: no key where the hosted API needs one (`required`).
    """
    secrets.append(explicit)
    api_key = resolve_api_key(model.provider, explicit, model.base_url)
    if api_key is None:
        if required:
            raise SetupError(
                f"no API key for provider {model.provider!r}: set"
                f" {key_variable(model, env_var)} in the environment"
                " (in Python, api_key= also works)"
            )
        api_key = NO_KEY
    secrets.append(api_key)
    return api_key


_clients: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, dict[Hashable, Any]] = (
    weakref.WeakKeyDictionary()
)


def cached_client(key: Hashable, factory: Callable[[], T]) -> T:
    """The SDK client for `key` on the running event loop, made by `factory` on first use.

    Building an SDK client (its HTTP client and TLS context) is too slow to repeat every
    turn; its connection pool belongs to one event loop, so clients are kept per loop and
    dropped with it (a new `asyncio.run` gets new clients).
    """
    per_loop = _clients.setdefault(asyncio.get_running_loop(), {})
    client = per_loop.get(key)
    if client is None:
        client = per_loop[key] = factory()
    return client


def _idle_error(idle_timeout_s: float | None) -> IdleTimeoutError:
    return IdleTimeoutError(
        f"the provider sent nothing for {idle_timeout_s:g} s (stream idle timeout)"
    )


async def await_with_idle_timeout(awaitable: Awaitable[T], idle_timeout_s: float | None) -> T:
    """`await awaitable`, raising `IdleTimeoutError` after `idle_timeout_s` seconds (the wait
    for the response headers counts as idle time; no limit when None)."""
    try:
        async with asyncio.timeout(idle_timeout_s):
            return await awaitable
    except TimeoutError as exc:
        raise _idle_error(idle_timeout_s) from exc


async def iterate_with_idle_timeout(
    source: AsyncIterator[T],
    idle_timeout: float | Callable[[], float | None] | None,
    *,
    keep_alive: Callable[[], None] | None = None,
) -> AsyncIterator[T]:
    """Yield from `source`, raising `IdleTimeoutError` when `idle_timeout` seconds (or, a
    function, the seconds it returns before each item) pass without an item or a chunk of
    the stream's bytes (no limit when None): bytes that make no item yet, such as SSE
    comment lines a server sends to keep the connection open while its model thinks,
    restart the wait and call `keep_alive` (the caller's own watchdog)."""
    loop = asyncio.get_running_loop()
    while True:
        idle_timeout_s = idle_timeout() if callable(idle_timeout) else idle_timeout
        try:
            if idle_timeout_s is None:
                item = await anext(source)
            else:
                async with asyncio.timeout(idle_timeout_s) as timer:

                    def arrived(seconds: float = idle_timeout_s) -> None:
                        timer.reschedule(loop.time() + seconds)
                        if keep_alive is not None:
                            keep_alive()

                    watching = stream_bytes_arrived.set(arrived)
                    try:
                        item = await anext(source)
                    finally:
                        stream_bytes_arrived.reset(watching)
        except StopAsyncIteration:
            return
        except TimeoutError as exc:
            raise _idle_error(idle_timeout_s) from exc
        yield item


async def call_hook(hook: Callable[[Any], Any] | None, value: Any) -> Any:
    """`hook(value)`, awaited when it returns an awaitable; None without a hook."""
    if hook is None:
        return None
    return await maybe_await(hook(value))


async def apply_on_payload(
    hook: Callable[[dict[str, Any]], Any] | None, body: dict[str, Any]
) -> dict[str, Any]:
    """The request body after `StreamOptions.on_payload` (a returned dict replaces it)."""
    replaced = await call_hook(hook, body)
    return replaced if isinstance(replaced, dict) else body


def plain_failure_text(exc: BaseException) -> str | None:
    """The error text of a failure that is not the SDK's own, None for others."""
    if isinstance(exc, SetupError | IdleTimeoutError | RetryDelayTooLongError | StreamFailed):
        return str(exc)
    cut = cut_stream_text(exc)
    if cut is None and exc.__cause__ is not None:  # the SDK wrapped the transport's error
        cut = cut_stream_text(exc.__cause__)
    if cut is not None:
        return cut
    if isinstance(exc, TimeoutError):
        return "timed out waiting for the server"
    if isinstance(exc, json.JSONDecodeError):
        return f"the server sent a stream event that is not valid JSON: {exc} in {exc.doc[:200]!r}"
    return None


async def run_guarded(
    builder: MessageBuilder,
    work: Awaitable[None],
    *,
    describe: Callable[[BaseException], str],
    secrets: list[str | None],
    label: str,
) -> None:
    """Await a provider call's `work`, ending the message on any failure (providers never
    raise): an abort → "aborted"; anything else → "error" with `describe(exc)`, every secret
    scrubbed. A cancelled task ends the message as aborted, then re-raises; so does any other
    `BaseException` (KeyboardInterrupt, SystemExit, a test runner's timeout), which would
    otherwise stay inside the call's task and leave the stream open for ever."""
    try:
        await work
    except AbortedError:
        builder.fail("aborted", "the request was aborted")
    except asyncio.CancelledError:
        builder.fail("aborted", "the request was cancelled")
        raise
    except BaseException as exc:
        if not isinstance(exc, Exception):
            builder.fail("aborted", f"the request was interrupted ({type(exc).__name__})")
            raise
        text = _describe_safely(describe, exc)
        note = retry_note(exc)
        text = scrub(f"{text}; {note}" if note else text, secrets)
        logger.info("%s failed: %s", label, text)
        builder.fail("error", text, error_type=failure_type(exc))


def failure_type(exc: BaseException) -> str | None:
    """The failure's class for `ErrorEvent.error_type`: the HTTP status of an
    SDK status error (`"503"`) or the one an error event inside a streamed answer stands
    for (`stream_error_status`), `"connection"`, `"timeout"`, `"retry_delay"`,
    `"no_api_key"`, `"no_sdk"` (the provider's SDK extra is not installed); None for
    anything else (a bug, a malformed response)."""
    status = getattr(exc, "status_code", None)
    if isinstance(status, int) and not isinstance(status, bool) and status != 200:
        return str(status)
    if (in_stream := stream_error_status(getattr(exc, "body", None))) is not None:
        return str(in_stream)
    if isinstance(exc, SetupError):
        return "no_api_key"
    if isinstance(exc, ModuleNotFoundError) and exc.name in ("openai", "anthropic"):
        return "no_sdk"
    if isinstance(exc, RetryDelayTooLongError):
        return "retry_delay"
    if isinstance(exc, IdleTimeoutError | TimeoutError):
        return "timeout"
    names = {cls.__name__ for cls in type(exc).__mro__}
    if "APITimeoutError" in names:
        return "timeout"
    if "APIConnectionError" in names or isinstance(exc, transport_error_types()):
        return "connection"
    return None


def _describe_safely(describe: Callable[[BaseException], str], exc: Exception) -> str:
    """`describe(exc)`, or a plain text when the describer fails too: it must never keep the
    message from ending (the stream would then wait for the idle watchdog)."""
    if isinstance(exc, ModuleNotFoundError) and exc.name in ("openai", "anthropic"):
        # The SDKs are imported at the first call: a missing extra shows here,
        # and the describer, which imports the SDK too, would fail the same way.
        return f"the {exc.name} SDK is not installed: {install_hint(exc.name)}"
    plain = plain_failure_text(exc)
    if plain is not None:
        # Our own errors need no SDK: the describer imports it first, so a missing key
        # without the extra would otherwise show as a describer failure.
        return plain
    try:
        return describe(exc)
    except Exception as inner:
        logger.warning("describing %s failed: %s", type(exc).__name__, exception_summary(inner))
        return exception_summary(exc)


_tasks: set[asyncio.Task[None]] = set()
"""Running provider calls (the event loop keeps only weak references to tasks)."""


def start_call(
    model: Model,
    work: Callable[[MessageBuilder, list[str | None]], Coroutine[Any, Any, None]],
    *,
    describe: Callable[[BaseException], str],
    name: str,
) -> AssistantMessageEventStream:
    """Start a provider call on the running event loop and return its stream at once.

    `work(builder, secrets)` streams into the builder and appends every key it uses to
    `secrets` (scrubbed from error texts). The call runs under `run_guarded`, so the stream
    always ends; without a running loop it ends at once with an error (never raises).
    """
    stream = AssistantMessageEventStream()
    builder = MessageBuilder(model, stream)
    try:
        loop = asyncio.get_running_loop()
    except RuntimeError as exc:
        builder.start()
        builder.fail("error", f"{name} needs a running event loop: {exc}")
        return stream

    async def main() -> None:
        builder.start()
        secrets: list[str | None] = []
        label = f"{name} call to {model.id}"
        await run_guarded(
            builder, work(builder, secrets), describe=describe, secrets=secrets, label=label
        )

    task = loop.create_task(main())
    _tasks.add(task)
    task.add_done_callback(_tasks.discard)
    return stream


# ── API keys ─────────────────────────────────────────────────────────────────

AZURE_AD_TOKEN: Final = "AZURE_OPENAI_AD_TOKEN"
"""An Entra ID token for Azure OpenAI, read when no key is set (as the `openai` SDK's
`AzureOpenAI` reads it) and sent as `Authorization: Bearer`, not as `api-key`."""


ENV_KEYS: Mapping[str, tuple[str, ...]] = {
    "openai": ("OPENAI_API_KEY",),
    "anthropic": ("ANTHROPIC_API_KEY",),
    "openrouter": ("OPENROUTER_API_KEY",),
    "groq": ("GROQ_API_KEY",),
    "mistral": ("MISTRAL_API_KEY",),
    "deepseek": ("DEEPSEEK_API_KEY",),
    "xai": ("XAI_API_KEY",),
    "together": ("TOGETHER_API_KEY",),
    "fireworks": ("FIREWORKS_API_KEY",),
    "cerebras": ("CEREBRAS_API_KEY",),
    "google": ("GEMINI_API_KEY", "GOOGLE_API_KEY"),
    "ollama": ("OLLAMA_API_KEY",),
    "vllm": ("VLLM_API_KEY",),
    "llamacpp": ("LLAMACPP_API_KEY",),
    "azure": ("AZURE_OPENAI_API_KEY", AZURE_AD_TOKEN),
}
"""Provider name → environment variables tried in order."""

NO_KEY = "no-key"
"""Placeholder sent to servers that need no key (local llama.cpp, vLLM, Ollama): the SDKs
refuse to build a client without one."""

# Shapes of common secrets, scrubbed even when we do not know the exact key (a key the
# server echoes back, a key in a base URL's query).
_SECRET_PATTERNS = re.compile(
    r"(sk-[A-Za-z0-9_\-]{8,}|sk-ant-[A-Za-z0-9_\-]{8,}|(?<=Bearer )[A-Za-z0-9._\-]{8,}"
    r"|(?<=[?&]key=)[^&\s]+?(?=&|:?\s|:?$)|(?<=[?&]api_key=)[^&\s]+?(?=&|:?\s|:?$))"
)
# The password of a URL's user info (http://user:PASSWORD@host/v1, a proxy's basic auth).
_URL_PASSWORD = re.compile(r"(?<=://)([^/@\s:]*):[^/@\s]+@")


def env_key_names(provider: str, base_url: str | None = None) -> tuple[str, ...]:
    """The environment variables `provider`'s key is read from, in order: `ENV_KEYS`'s, else
    `<PROVIDER>_API_KEY` (upper case, `-` → `_`; "openai-compatible" →
    `OPENAI_COMPATIBLE_API_KEY`). An Azure OpenAI `base_url` (`_is_azure`) is read
    from `AZURE_OPENAI_API_KEY` first, where the `openai` SDK's `AzureOpenAI` reads it,
    and from `AZURE_AD_TOKEN` last, when no key is set."""
    names = ENV_KEYS.get(provider) or (provider.upper().replace("-", "_") + "_API_KEY",)
    azure = ENV_KEYS["azure"]
    if base_url is not None and _is_azure(base_url) and names != azure:
        return (azure[0], *names, AZURE_AD_TOKEN)
    return names


def key_variable(model: Model, env_var: str) -> str:
    """The variable to name when `model` has no key: its API's `env_var`, or at an Azure
    OpenAI base URL (`_is_azure`) the first one read there (`AZURE_OPENAI_API_KEY`)."""
    if model.base_url is not None and _is_azure(model.base_url):
        return env_key_names(model.provider, model.base_url)[0]
    return env_var


def get_env_api_key(provider: str, base_url: str | None = None) -> str | None:
    """The API key for `provider` (at `base_url`) from its environment variable(s)
    (`env_key_names`), or None."""
    for name in env_key_names(provider, base_url):
        value = os.environ.get(name)
        if value:
            return value
    return None


def key_hint(
    exc: BaseException, provider: str, explicit: str | None, base_url: str | None = None
) -> str:
    """What to add to the text of a failure the server answered with HTTP 401 (a missing or
    refused key) when the key was not given in the call (`explicit`): the environment
    variable it came from, or, when none was sent, the one to set. "" otherwise.

    Why: "HTTP 401 from the server: Invalid API Key" left a user of an OpenAI-compatible
    server guessing the variable (`OPENAI_COMPATIBLE_API_KEY`, not `OPENAI_API_KEY`). Names
    only, never the key.
    """
    if explicit or getattr(exc, "status_code", None) != 401:
        return ""
    names = env_key_names(provider, base_url)
    found = next((name for name in names if os.environ.get(name)), None)
    if found is not None:
        return f" (the key sent was {found})"
    return f" (no key was sent: set {names[0]} in the environment, or api_key= in Python)"


def jinja_hint(exc: BaseException, model: Model) -> str:
    """What to add when llama.cpp's server refused `tools` ("tools param requires --jinja
    flag": started without `--jinja`) a model driven with native tool calls: the two ways
    out. "" otherwise (the `openai-text-calls` API already falls back by itself)."""
    if model.api != "openai-completions" or getattr(exc, "status_code", None) is None:
        return ""
    if "requires --jinja" not in str(getattr(exc, "message", "")) + str(getattr(exc, "body", "")):
        return ""
    return (
        " (start llama.cpp's server with --jinja, or read the calls the model writes as text:"
        ' tool_calls="text", yiem\'s --tool-calls text)'
    )


def unreachable_hint(exc: BaseException, sdk: ModuleType, model: Model) -> str:
    """What to add when no connection to a local server's model (`ollama/…`,
    `openai-compatible/…`) could be made (not a timeout): the server is most likely not
    running, and the SDK's "Connection error." does not say so. "" otherwise.

    Ollama's says how to start it and which variable names another address (`OLLAMA_HOST`,
    read by `get_model`)."""
    if not isinstance(exc, sdk.APIConnectionError) or isinstance(exc, sdk.APITimeoutError):
        return ""
    if model.provider == "ollama":
        return (
            "; is Ollama running? Start it with `ollama serve`,"
            " or set OLLAMA_HOST to the host:port it listens on"
        )
    if model.provider == "openai-compatible":
        return "; is the server running, and listening at that address?"
    return ""


def resolve_api_key(provider: str, explicit: str | None, base_url: str | None = None) -> str | None:
    """`explicit` when given and non-empty, else the environment's key (`env_key_names`),
    else None."""
    return explicit or get_env_api_key(provider, base_url)


def scrub(text: str, secrets: Iterable[str | None] = ()) -> str:
    """`text` with every given secret and anything shaped like an API key replaced by `***`.

    Args:
        text: Any text that may leave the provider (error messages, log lines).
        secrets: The exact keys in use; values shorter than 4 characters or None are ignored
            (a placeholder such as "x" would otherwise garble the text).
    """
    for secret in secrets:
        if secret and len(secret) >= 4 and secret != NO_KEY:
            text = text.replace(secret, "***")
    return _URL_PASSWORD.sub(r"\1:***@", _SECRET_PATTERNS.sub("***", text))
