"""The frame of one provider call, shared by the HTTP providers (DESIGN §7): the call
starts at once and returns its stream (`start_call`), never raises (`run_guarded`), reads its
key (`api_key_for_call`, scrubbed from every error text), reuses one SDK client per event loop
(`cached_client`), and honours idle limits. The streaming call both SDK providers
share is `sdk_call.py`; when to retry is `retry.py`'s business; what an SDK's failure means,
`sdk_failures.py`'s.
"""

from __future__ import annotations

import asyncio
import json
import logging
import weakref
from collections.abc import AsyncIterator, Awaitable, Callable, Coroutine, Hashable
from typing import Any, TypeVar

from yiemagent.ai.builder import MessageBuilder
from yiemagent.ai.providers._env_keys import NO_KEY, resolve_api_key, scrub
from yiemagent.ai.providers._http_guard import cut_stream_text
from yiemagent.ai.retry import (
    AbortedError,
    RetryDelayTooLongError,
    retry_note,
    transport_error_types,
)
from yiemagent.errors import YiemAgentError
from yiemagent.types.callbacks import maybe_await
from yiemagent.types.model import AssistantMessageEventStream, Model

__all__ = [
    "IdleTimeoutError",
    "SetupError",
    "api_key_for_call",
    "apply_on_payload",
    "await_with_idle_timeout",
    "cached_client",
    "call_hook",
    "failure_type",
    "iterate_with_idle_timeout",
    "plain_failure_text",
    "run_guarded",
    "start_call",
]

logger = logging.getLogger(__name__)

T = TypeVar("T")


class IdleTimeoutError(YiemAgentError):
    """No chunk arrived for the idle timeout (`StreamOptions.idle_timeout_s`)."""


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
    if isinstance(exc, SetupError | IdleTimeoutError | RetryDelayTooLongError):
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
    SDK status error (`"503"`), `"connection"`, `"timeout"`, `"retry_delay"`,
    `"no_api_key"`; None for anything else (a bug, a malformed response)."""
    status = getattr(exc, "status_code", None)
    if isinstance(status, int) and not isinstance(status, bool):
        return str(status)
    if isinstance(exc, SetupError):
        return "no_api_key"
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
