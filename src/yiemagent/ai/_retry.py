"""The retry policy of the HTTP providers (DESIGN §7): which failures are retried, how long
to wait, and for how long at most.

A provider call is one or more *attempts*. An attempt that fails with a retryable failure
(HTTP 408, 409, 429, 5xx — Anthropic's 529 included — or a connection error) is retried
after an exponential backoff with jitter, or after the delay the server asks for in
`retry-after-ms` / `retry-after`, but only while nothing has been streamed yet (a retry
would duplicate content) and never for longer than `max_retry_delay_ms`: a server asking
for more ends the call at once with a clear error (`RetryDelayTooLongError`). An abort is
honoured while waiting and while streaming (`run_abortable`). The frame around the attempts
is `providers/_sdk_call.py`.
"""

from __future__ import annotations

import asyncio
import contextlib
import email.utils
import logging
import math
import random
import sys
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any, TypeVar

from yiemagent.errors import YiemAgentError
from yiemagent.types.signal import AbortSignal

__all__ = [
    "DEFAULT_MAX_ATTEMPTS",
    "DEFAULT_MAX_RETRY_DELAY_MS",
    "AbortedError",
    "RetryDecision",
    "RetryDelayTooLongError",
    "backoff_delay_ms",
    "is_retryable_status",
    "parse_retry_after_ms",
    "retry_note",
    "run_abortable",
    "run_with_retries",
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


class RetryDelayTooLongError(YiemAgentError):
    """The server asked to wait longer than `max_retry_delay_ms` before retrying."""


@dataclass(slots=True, frozen=True)
class RetryDecision:
    """How a failure may be retried: a short description (HTTP status or "connection error"),
    the server-requested delay (ms), if any, and whether it is a lost connection (its error
    text then also says when it was not retried because the answer had begun, `retry_note`)."""

    what: str
    retry_after_ms: float | None = None
    connection: bool = False


_RETRY_NOTE = "yiemagent_retry_note"
"""The attribute that carries `retry_note`'s text on the failure that ended a call (an
attribute: builtin `ConnectionError` cannot be weakly referenced)."""


def retry_note(exc: BaseException) -> str | None:
    """Whether the retryable failure that ended a call was retried: "gave up after N
    attempts" for any of them (an HTTP 5xx or 529, a lost connection, ...) once the attempts
    ran out, or, for a lost connection, "not retried: part of the answer had already
    arrived"; None for other failures."""
    note = getattr(exc, _RETRY_NOTE, None)
    return note if isinstance(note, str) else None


def _note_outcome(exc: BaseException, decision: RetryDecision, number: int, retried: bool) -> None:
    if retried and number > 1:
        note = f"gave up after {number} attempts"
    elif not retried and decision.connection:
        note = "not retried: part of the answer had already arrived"
    else:
        return
    with contextlib.suppress(AttributeError, TypeError):
        setattr(exc, _RETRY_NOTE, note)


def is_retryable_status(status: int) -> bool:
    """HTTP 408 (timeout), 409 (conflict: a lock or a busy resource), 429 (rate limit)
    and every 5xx (529 overloaded included): the statuses the official SDKs retry."""
    return status in (408, 409, 429) or 500 <= status <= 599


def parse_retry_after_ms(
    headers: Mapping[str, str] | None, *, now: float | None = None
) -> float | None:
    """The delay a response asks for (ms), from `retry-after-ms` or `retry-after`.

    `retry-after` may be seconds (possibly fractional) or an HTTP date. Returns None when
    absent or unparsable, a number that is no finite one ("inf", "nan", "1e999") included:
    a delay no server means, which without a cap (`max_retry_delay_ms=0`) would be waited
    for ever; never negative.
    """
    if not headers:
        return None
    lowered = {key.lower(): value for key, value in headers.items()}
    raw_ms = lowered.get("retry-after-ms")
    if raw_ms is not None:
        delay_ms = _finite(raw_ms, 1.0)
        if delay_ms is not None:
            return delay_ms
    raw = lowered.get("retry-after")
    if raw is None:
        return None
    seconds_ms = _finite(raw, 1000.0)
    if seconds_ms is not None:
        return seconds_ms
    try:
        when = email.utils.parsedate_to_datetime(raw)
    except (TypeError, ValueError):
        return None
    if when is None:
        return None
    current = time.time() if now is None else now
    return max(0.0, (when.timestamp() - current) * 1000.0)


def _finite(text: str, scale: float) -> float | None:
    """`text` as a number times `scale`, at least 0; None when it is no number or no finite
    one."""
    try:
        value = float(text) * scale
    except ValueError:
        return None
    return max(0.0, value) if math.isfinite(value) else None


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
            if decision is None:
                raise
            if number >= max_attempts or not may_retry():
                _note_outcome(exc, decision, number, retried=may_retry())
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
