"""The frame of an HTTP provider call, shared by the providers (DESIGN §7): retries with
backoff, abort races, idle timeouts (R-5.8), SDK client reuse, and `start_call` /
`run_guarded`, which make sure a call returns its stream at once and never raises.

A provider call is one or more *attempts*. An attempt that fails with a retryable failure
(HTTP 408, 429, 5xx — Anthropic's 529 included — or a connection error) is retried after an
exponential backoff with jitter, or after the delay the server asks for in `retry-after-ms` /
`retry-after`, but only while nothing has been streamed yet (a retry would duplicate content)
and never for longer than `max_retry_delay_ms`: a server asking for more ends the call at once
with a clear error (`RetryDelayTooLongError`). An abort is honoured while waiting and while
streaming (`run_abortable`).
"""

from __future__ import annotations

import asyncio
import contextlib
import email.utils
import inspect
import json
import logging
import math
import random
import re
import sys
import time
import weakref
from collections.abc import AsyncIterator, Awaitable, Callable, Coroutine, Hashable, Mapping
from dataclasses import dataclass
from typing import Any, TypeVar

from yiemagent.ai.builder import MessageBuilder
from yiemagent.ai.env_keys import NO_KEY, resolve_api_key, scrub
from yiemagent.errors import YiemAgentError
from yiemagent.types.model import AssistantMessageEventStream, Model
from yiemagent.types.signal import AbortSignal

__all__ = [
    "DEFAULT_MAX_ATTEMPTS",
    "DEFAULT_MAX_RETRY_DELAY_MS",
    "AbortedError",
    "IdleTimeoutError",
    "RetryDecision",
    "RetryDelayTooLongError",
    "SetupError",
    "api_key_for_call",
    "apply_on_payload",
    "await_with_idle_timeout",
    "backoff_delay_ms",
    "body_error_text",
    "cached_client",
    "call_hook",
    "is_retryable_status",
    "iterate_with_idle_timeout",
    "parse_retry_after_ms",
    "plain_failure_text",
    "run_abortable",
    "run_guarded",
    "run_with_retries",
    "sdk_client",
    "start_call",
    "transport_error_types",
]

logger = logging.getLogger(__name__)

T = TypeVar("T")

DEFAULT_MAX_RETRY_DELAY_MS = 60_000
"""Longest wait before a retry when `StreamOptions.max_retry_delay_ms` is not set (ms)."""
DEFAULT_MAX_ATTEMPTS = 4
"""Attempts per call, the first one included."""
BASE_DELAY_MS = 500.0
"""First backoff (ms); doubles per attempt, ±25 % jitter."""


class AbortedError(YiemAgentError):
    """The call's `AbortSignal` fired; the provider ends the stream with reason "aborted"."""


class IdleTimeoutError(YiemAgentError):
    """No chunk arrived for the idle timeout (DESIGN R-5.8)."""


class RetryDelayTooLongError(YiemAgentError):
    """The server asked to wait longer than `max_retry_delay_ms` before retrying."""


class SetupError(YiemAgentError):
    """A problem found before any request was sent (no API key)."""


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
    api_key = resolve_api_key(model.provider, explicit)
    if api_key is None:
        if required:
            raise SetupError(
                f"no API key for provider {model.provider!r}: set {env_var} in the environment"
                " (in Python, api_key= also works)"
            )
        api_key = NO_KEY
    secrets.append(api_key)
    return api_key


@dataclass(slots=True, frozen=True)
class RetryDecision:
    """How a failure may be retried: a short description (HTTP status or "connection error")
    and the server-requested delay (ms), if any."""

    what: str
    retry_after_ms: float | None = None


_clients: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, dict[Hashable, Any]] = (
    weakref.WeakKeyDictionary()
)


def cached_client(key: Hashable, factory: Callable[[], T]) -> T:
    """The SDK client for `key` on the running event loop, made by `factory` on first use.

    Building an SDK client costs ~20 ms (its HTTP client and TLS context), too much per turn;
    its connection pool belongs to one event loop, so clients are kept per loop and dropped
    with it (DESIGN R-6.7: a new `asyncio.run` gets new clients).
    """
    per_loop = _clients.setdefault(asyncio.get_running_loop(), {})
    client = per_loop.get(key)
    if client is None:
        client = per_loop[key] = factory()
    return client


def sdk_client(sdk_class: Callable[..., T], model: Model, options: Any, api_key: str) -> T:
    """The cached client of an official SDK (`AsyncOpenAI`, `AsyncAnthropic`) for this model's
    base URL, key and headers; the SDK's own retries are off (`max_retries=0`): ours apply."""
    headers = {**(model.headers or {}), **(options.headers or {})}
    name = getattr(sdk_class, "__name__", repr(sdk_class))
    key = (name, model.base_url, api_key, tuple(sorted(headers.items())))
    return cached_client(
        key,
        lambda: sdk_class(
            api_key=api_key, base_url=model.base_url, max_retries=0, default_headers=headers or None
        ),
    )


def is_retryable_status(status: int) -> bool:
    """HTTP 408 (timeout), 429 (rate limit) and every 5xx (529 overloaded included)."""
    return status in (408, 429) or 500 <= status <= 599


def parse_retry_after_ms(
    headers: Mapping[str, str] | None, *, now: float | None = None
) -> float | None:
    """The delay a response asks for (ms), from `retry-after-ms` or `retry-after`.

    `retry-after` may be seconds (possibly fractional) or an HTTP date. Returns None when
    absent or unparsable; never negative.
    """
    if not headers:
        return None
    lowered = {key.lower(): value for key, value in headers.items()}
    raw_ms = lowered.get("retry-after-ms")
    if raw_ms is not None:
        try:
            return max(0.0, float(raw_ms))
        except ValueError:
            pass
    raw = lowered.get("retry-after")
    if raw is None:
        return None
    try:
        return max(0.0, float(raw) * 1000.0)
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(raw)
    except (TypeError, ValueError):
        return None
    if when is None:
        return None
    current = time.time() if now is None else now
    return max(0.0, (when.timestamp() - current) * 1000.0)


def transport_error_types() -> tuple[type[BaseException], ...]:
    """The HTTP client's transport errors (connection reset mid-stream and the like).

    The SDKs wrap errors of the request itself, not those raised while a stream is read.
    """
    types: list[type[BaseException]] = [ConnectionError]
    for module_name in ("httpx2", "httpx"):
        module = sys.modules.get(module_name)
        error = getattr(module, "TransportError", None) if module is not None else None
        if isinstance(error, type) and issubclass(error, BaseException):
            types.append(error)
    return tuple(types)


def backoff_delay_ms(attempt: int, *, rng: random.Random | None = None) -> float:
    """Exponential backoff with ±25 % jitter for the retry after attempt `attempt` (1-based)."""
    base = BASE_DELAY_MS * (2 ** (attempt - 1))
    jitter = (rng or random).uniform(0.75, 1.25)
    return float(base * jitter)


async def run_abortable(awaitable: Awaitable[T], signal: AbortSignal | None) -> T:
    """Await `awaitable`, cancelling it when `signal` aborts first.

    Raises:
        AbortedError: the signal fired (also when it was already aborted); the inner task
            has been cancelled and awaited, so its `finally` blocks (closing an SDK stream)
            have run.
    """
    if signal is None:
        return await awaitable
    if signal.aborted:
        if asyncio.iscoroutine(awaitable):
            awaitable.close()
        raise AbortedError(signal.reason or "aborted")
    work: asyncio.Future[T] = asyncio.ensure_future(awaitable)
    aborted: asyncio.Future[Any] = asyncio.ensure_future(signal.wait())
    try:
        await asyncio.wait([work, aborted], return_when=asyncio.FIRST_COMPLETED)
    except BaseException:
        work.cancel()
        aborted.cancel()
        raise
    if work.done():
        aborted.cancel()
        return work.result()
    work.cancel()
    with contextlib.suppress(BaseException):  # the cancelled work's outcome no longer matters
        await work
    raise AbortedError(signal.reason or "aborted")


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
    source: AsyncIterator[T], idle_timeout_s: float | None
) -> AsyncIterator[T]:
    """Yield from `source`, raising `IdleTimeoutError` when one item takes longer than
    `idle_timeout_s` seconds (no limit when None)."""
    while True:
        try:
            if idle_timeout_s is None:
                item = await anext(source)
            else:
                async with asyncio.timeout(idle_timeout_s):
                    item = await anext(source)
        except StopAsyncIteration:
            return
        except TimeoutError as exc:
            raise _idle_error(idle_timeout_s) from exc
        yield item


async def run_with_retries(
    attempt: Callable[[int], Awaitable[T]],
    *,
    classify: Callable[[BaseException], RetryDecision | None],
    may_retry: Callable[[], bool],
    signal: AbortSignal | None,
    max_retry_delay_ms: int | None = None,
    max_attempts: int = DEFAULT_MAX_ATTEMPTS,
) -> T:
    """Run `attempt(n)` (n = 1, 2, …) until it succeeds or may not be retried.

    Args:
        attempt: One try; raises on failure. Run through `run_abortable`.
        classify: A `RetryDecision` for a retryable failure, None for a final one.
        may_retry: False once content has been streamed (a retry would repeat it).
        signal: Aborts the attempt and the wait between attempts.
        max_retry_delay_ms: Longest wait (ms); a longer server-requested delay raises
            `RetryDelayTooLongError` at once. Default `DEFAULT_MAX_RETRY_DELAY_MS`; `0`
            means no cap (as in pi: wait as long as the server asks).
        max_attempts: Attempts in all, the first included.

    Raises:
        AbortedError: aborted while trying or waiting.
        RetryDelayTooLongError: the server asked for too long a wait.
        BaseException: the last attempt's failure when it is final or attempts ran out.
    """
    limit_ms: float = (
        DEFAULT_MAX_RETRY_DELAY_MS if max_retry_delay_ms is None else max_retry_delay_ms
    )
    if limit_ms == 0:
        limit_ms = math.inf
    number = 1
    while True:
        try:
            return await run_abortable(attempt(number), signal)
        except (AbortedError, asyncio.CancelledError):
            raise
        except Exception as exc:
            decision = classify(exc)
            if decision is None or number >= max_attempts or not may_retry():
                raise
            if decision.retry_after_ms is not None:
                if decision.retry_after_ms > limit_ms:
                    raise RetryDelayTooLongError(
                        f"{decision.what}: the server asked to retry after "
                        f"{decision.retry_after_ms / 1000:g} s, longer than the allowed "
                        f"max_retry_delay_ms={limit_ms:g} ({exc})"
                    ) from exc
                delay_ms = decision.retry_after_ms
            else:
                delay_ms = min(backoff_delay_ms(number), limit_ms)
            logger.info(
                "retrying after %s (attempt %d of %d) in %.0f ms",
                decision.what,
                number,
                max_attempts,
                delay_ms,
            )
            await run_abortable(asyncio.sleep(delay_ms / 1000.0), signal)
            number += 1


# ── the frame of one provider call ──────────────────────────────────────────


async def call_hook(hook: Callable[[Any], Any] | None, value: Any) -> Any:
    """`hook(value)`, awaited when it returns an awaitable; None without a hook."""
    if hook is None:
        return None
    result = hook(value)
    if inspect.isawaitable(result):
        result = await result
    return result


async def apply_on_payload(
    hook: Callable[[dict[str, Any]], Any] | None, body: dict[str, Any]
) -> dict[str, Any]:
    """The request body after `StreamOptions.on_payload` (a returned dict replaces it)."""
    replaced = await call_hook(hook, body)
    return replaced if isinstance(replaced, dict) else body


_TITLE = re.compile(r"<title[^>]*>(.*?)</title>", re.IGNORECASE | re.DOTALL)
_TAG = re.compile(r"<[^>]+>")
MAX_DETAIL_CHARS = 500
"""Longest server-sent error text kept in an error message."""


def body_error_text(body: object) -> str | None:
    """The error text a server sent as a body that is not the API's JSON error: plain text,
    an HTML page (its title, else its text), `{"error": "..."}` (Ollama), `{"detail": ...}`;
    whitespace collapsed, at most `MAX_DETAIL_CHARS`. None when there is none."""
    if isinstance(body, dict):
        value = body.get("error")
        if not isinstance(value, str):
            value = body.get("detail") or body.get("message")
        if value is None:
            return None
        text = value if isinstance(value, str) else str(value)
    elif isinstance(body, str):
        text = body
        if "<" in text and ">" in text:
            title = _TITLE.search(text)
            text = title.group(1) if title else _TAG.sub(" ", text)
    else:
        return None
    text = " ".join(text.split())
    if len(text) > MAX_DETAIL_CHARS:
        text = text[:MAX_DETAIL_CHARS] + "…"
    return text or None


def plain_failure_text(exc: BaseException) -> str | None:
    """The error text of a failure that is not the SDK's own, None for others."""
    if isinstance(exc, SetupError | IdleTimeoutError | RetryDelayTooLongError):
        return str(exc)
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
    scrubbed. A cancelled task ends the message as aborted, then re-raises."""
    try:
        await work
    except AbortedError:
        builder.fail("aborted", "the request was aborted")
    except asyncio.CancelledError:
        builder.fail("aborted", "the request was cancelled")
        raise
    except Exception as exc:
        text = scrub(_describe_safely(describe, exc), secrets)
        logger.info("%s failed: %s", label, text)
        builder.fail("error", text)


def _describe_safely(describe: Callable[[BaseException], str], exc: Exception) -> str:
    """`describe(exc)`, or a plain text when the describer fails too: it must never keep the
    message from ending (the stream would then wait for the idle watchdog, DESIGN §8)."""
    if isinstance(exc, ModuleNotFoundError) and exc.name in ("openai", "anthropic"):
        # The SDKs are imported at the first call (DESIGN §2): a missing extra shows here,
        # and the describer, which imports the SDK too, would fail the same way.
        return (
            f"the {exc.name} SDK is not installed: pip install 'yiemagent[{exc.name}]' "
            f"(from a checkout: .venv/bin/pip install -e '.[{exc.name}]')"
        )
    plain = plain_failure_text(exc)
    if plain is not None:
        # Our own errors need no SDK: the describer imports it first, so a missing key
        # without the extra would otherwise show as a describer failure.
        return plain
    try:
        return describe(exc)
    except Exception as inner:
        logger.warning("describing %r failed: %r", exc, inner)
        return f"{type(exc).__name__}: {exc}"


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
