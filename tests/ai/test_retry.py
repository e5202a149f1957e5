"""Retries shared by the HTTP providers (DESIGN §7: retries on 429/5xx honour
`max_retry_delay_ms`; abort honoured while waiting), key lookup and scrubbing."""

from __future__ import annotations

import asyncio
import email.utils
import random
import time
from typing import Any

import pytest

from tests.ai.servers import ReplayServer, free_port, json_reply, openai_chunks, sse_reply
from yiemagent.ai._retry import (
    AbortedError,
    RetryDecision,
    RetryDelayTooLongError,
    backoff_delay_ms,
    is_retryable_status,
    parse_retry_after_ms,
    run_with_retries,
)
from yiemagent.ai.providers._sdk_call import get_env_api_key, resolve_api_key, scrub
from yiemagent.ai.providers.anthropic_messages import stream_anthropic_messages
from yiemagent.ai.providers.openai_completions import stream_openai_completions
from yiemagent.errors import install_hint
from yiemagent.types.messages import AssistantMessage, UserMessage
from yiemagent.types.model import Context, Model, StreamOptions
from yiemagent.types.signal import AbortSignal

pytestmark = pytest.mark.timeout(120)  # the first test imports the SDK: seconds of CPU under load

RATE_LIMITED = {"error": {"message": "Rate limit reached", "type": "rate_limit_error"}}
UNAVAILABLE = {"error": {"message": "Service unavailable"}}


async def ask(server: ReplayServer, **options: object) -> AssistantMessage:
    model = Model(id="m", provider="vllm", api="openai-completions", base_url=server.url + "/v1")
    stream = stream_openai_completions(
        model,
        Context("", [UserMessage("hi")]),
        StreamOptions(api_key="k-123456", **options),  # type: ignore[arg-type]
    )
    return await stream.result()


async def test_429_asking_longer_than_max_retry_delay_fails_at_once(server: ReplayServer) -> None:
    server.enqueue(json_reply(429, RATE_LIMITED, headers={"retry-after": "120"}))
    started = time.monotonic()
    message = await ask(server)  # default limit 60 000 ms
    assert time.monotonic() - started < 30.0  # not 120 s (the first call imports the SDK)
    assert message.stop_reason == "error"
    text = message.error_message or ""
    assert "HTTP 429" in text and "120 s" in text and "max_retry_delay_ms=60000" in text
    assert len(server.requests) == 1


async def test_retry_after_ms_beyond_a_custom_limit(server: ReplayServer) -> None:
    server.enqueue(json_reply(429, RATE_LIMITED, headers={"retry-after-ms": "5000"}))
    message = await ask(server, max_retry_delay_ms=1000)
    assert message.stop_reason == "error"
    assert "max_retry_delay_ms=1000" in (message.error_message or "")
    assert len(server.requests) == 1


async def test_503_then_success_after_backoff(server: ReplayServer) -> None:
    server.enqueue(json_reply(503, UNAVAILABLE), sse_reply(openai_chunks({"content": "fine"})))
    message = await ask(server)
    assert message.stop_reason == "stop" and message.text == "fine"
    assert len(server.requests) == 2
    # first backoff: 500 ms ± 25 %, seen by the server between the two requests (the call's
    # own time also holds the SDK's import: 46 s in a CPU-starved run); < 10 s: a bound
    gap = server.requests[1].at - server.requests[0].at
    assert 0.3 < gap < 10.0


async def test_429_within_the_limit_waits_as_asked(server: ReplayServer) -> None:
    server.enqueue(
        json_reply(429, RATE_LIMITED, headers={"retry-after-ms": "300"}),
        sse_reply(openai_chunks({"content": "ok"})),
    )
    started = time.monotonic()
    message = await ask(server)
    assert message.stop_reason == "stop"
    assert time.monotonic() - started >= 0.3


async def test_attempts_run_out(server: ReplayServer) -> None:
    """The text says the call was retried, in the words a lost connection's gets."""
    server.enqueue(*[json_reply(500, UNAVAILABLE) for _ in range(6)])
    message = await ask(server, max_retry_delay_ms=1)
    assert message.stop_reason == "error"
    assert message.error_message == (
        "HTTP 500 from the server: Service unavailable; gave up after 4 attempts"
    )
    assert len(server.requests) == 4


async def test_anthropic_overloaded_until_attempts_run_out_says_so(server: ReplayServer) -> None:
    overloaded = {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}
    server.enqueue(*[json_reply(529, overloaded) for _ in range(4)])
    model = Model(id="c", provider="anthropic", api="anthropic-messages", base_url=server.url)
    message = await stream_anthropic_messages(
        model,
        Context("", [UserMessage("hi")]),
        StreamOptions(api_key="k-123456", max_retry_delay_ms=1),
    ).result()
    assert message.stop_reason == "error"
    text = message.error_message or ""
    assert "529" in text and "Overloaded" in text
    assert text.endswith("; gave up after 4 attempts"), text
    assert len(server.requests) == 4


async def test_429_for_an_exhausted_quota_is_not_retried(server: ReplayServer) -> None:
    # OpenAI answers a spent quota with 429 too; waiting does not refill it
    # (https://github.com/langchain-ai/langchainjs/issues/1929).
    quota = {
        "error": {
            "message": "You exceeded your current quota, please check your plan and billing.",
            "type": "insufficient_quota",
            "code": "insufficient_quota",
        }
    }
    server.enqueue(*[json_reply(429, quota) for _ in range(4)])
    message = await ask(server)
    assert message.stop_reason == "error"
    assert "HTTP 429" in (message.error_message or "")
    assert "exceeded your current quota" in (message.error_message or "")
    assert len(server.requests) == 1


async def test_a_server_saying_x_should_retry_is_obeyed_as_by_the_sdks(
    server: ReplayServer,
) -> None:
    # The official SDKs read `x-should-retry` before the status: "false" is final even for
    # a 5xx (the request already had its effect), "true" retries even a 4xx.
    server.enqueue(json_reply(500, UNAVAILABLE, {"x-should-retry": "false"}))
    message = await ask(server, max_retry_delay_ms=1)
    assert message.stop_reason == "error"
    assert message.error_message == "HTTP 500 from the server: Service unavailable"
    assert len(server.requests) == 1

    conflict = {"error": {"message": "try again", "type": "conflict"}}
    server.enqueue(
        json_reply(409, conflict, {"x-should-retry": "true", "retry-after-ms": "10"}),
        sse_reply(openai_chunks({"content": "fine"})),
    )
    message = await ask(server)
    assert message.stop_reason == "stop" and message.text == "fine"
    assert len(server.requests) == 3

    model = Model(id="c", provider="anthropic", api="anthropic-messages", base_url=server.url)
    overloaded = {"type": "error", "error": {"type": "api_error", "message": "boom"}}
    server.enqueue(json_reply(500, overloaded, {"x-should-retry": "false"}))
    message = await stream_anthropic_messages(
        model, Context("", [UserMessage("hi")]), StreamOptions(api_key="k-123456")
    ).result()
    assert message.stop_reason == "error" and "boom" in (message.error_message or "")
    assert len(server.requests) == 4


async def test_groq_tool_use_failed_is_sampled_again(server: ReplayServer) -> None:
    # Groq answers 400 when it cannot parse the call its model wrote; the next sample
    # usually parses (https://github.com/pydantic/pydantic-ai/pull/2774).
    failed = {
        "error": {
            "message": "Failed to call a function. Please adjust your prompt. "
            "See 'failed_generation' for more details.",
            "type": "invalid_request_error",
            "code": "tool_use_failed",
            "failed_generation": '<function=read={"path": "a.txt"}</function>',
        }
    }
    server.enqueue(json_reply(400, failed), sse_reply(openai_chunks({"content": "fine"})))
    message = await ask(server)
    assert message.stop_reason == "stop" and message.text == "fine"
    assert len(server.requests) == 2


async def test_groq_tool_use_failed_every_time_says_what_the_model_wrote(
    server: ReplayServer,
) -> None:
    failed = {
        "error": {
            "message": "Failed to call a function.",
            "code": "tool_use_failed",
            "failed_generation": 'web_search{"query": "x"}</function>',
        }
    }
    server.enqueue(*[json_reply(400, failed) for _ in range(4)])
    message = await ask(server, max_retry_delay_ms=1)
    assert message.stop_reason == "error"
    text = message.error_message or ""
    assert "HTTP 400" in text and 'web_search{"query": "x"}</function>' in text
    assert len(server.requests) == 4


async def test_abort_while_waiting_to_retry(server: ReplayServer) -> None:
    server.enqueue(json_reply(429, RATE_LIMITED, headers={"retry-after": "30"}))
    signal = AbortSignal()
    asking = asyncio.ensure_future(ask(server, signal=signal))
    for _ in range(3000):  # the first attempt has been answered 429: now waiting 30 s
        if server.requests:
            break
        await asyncio.sleep(0.01)
    await asyncio.sleep(0.2)
    started = time.monotonic()
    signal.abort()
    message = await asking
    assert message.stop_reason == "aborted"
    assert time.monotonic() - started < 5.0  # not the 30 s the server asked for
    assert len(server.requests) == 1


async def test_anthropic_429_beyond_limit(server: ReplayServer) -> None:
    server.enqueue(
        json_reply(429, {"type": "error", "error": RATE_LIMITED["error"]}, {"retry-after": "90"})
    )
    model = Model(id="c", provider="anthropic", api="anthropic-messages", base_url=server.url)
    message = await stream_anthropic_messages(
        model, Context("", [UserMessage("hi")]), StreamOptions(api_key="k-123456")
    ).result()
    assert message.stop_reason == "error"
    assert "90 s" in (message.error_message or "")
    assert len(server.requests) == 1


@pytest.mark.parametrize("api", ["openai-completions", "anthropic-messages"])
async def test_a_connection_refused_on_this_machine_is_said_at_once(
    api: str, caplog: pytest.LogCaptureFixture
) -> None:
    """Nothing listens at a port of 127.0.0.1: waiting does not change that, so the call
    is not retried (it was, four times over some 8 s, before it said anything)."""
    port = free_port()
    url = f"http://127.0.0.1:{port}/v1"
    model = Model(id="m", provider="vllm", api=api, base_url=url)  # type: ignore[arg-type]
    streamer = (
        stream_openai_completions if api == "openai-completions" else stream_anthropic_messages
    )
    with caplog.at_level("INFO", logger="yiemagent"):
        message = await streamer(
            model, Context("", [UserMessage("hi")]), StreamOptions(api_key="k-123456")
        ).result()
    assert message.stop_reason == "error"
    path = "chat/completions" if api == "openai-completions" else "messages"
    assert message.error_message == (
        f"connection error reaching {url}/{path}: connection refused, nothing listens at "
        f"127.0.0.1:{port}"
    )
    assert not [r for r in caplog.records if "retrying" in r.getMessage()]


@pytest.mark.parametrize(
    ("url", "retried"),
    [
        ("http://192.0.2.7:8000/v1", True),  # another machine: its server may be restarting
        ("http://127.0.0.1:8000/v1", False),
        ("http://localhost:8000/v1", False),
        ("http://[::1]:8000/v1", False),
    ],
)
def test_only_a_refusal_by_this_machine_is_not_retried(url: str, retried: bool) -> None:
    import httpx2 as httpx
    import openai

    from yiemagent.ai.providers._sdk_failures import sdk_retry_decision

    request = httpx.Request("POST", url + "/chat/completions")
    try:
        try:
            raise ConnectionRefusedError(111, "Connect call failed")
        except ConnectionRefusedError as refused:
            raise openai.APIConnectionError(request=request) from refused
    except openai.APIConnectionError as exc:
        decision = sdk_retry_decision(exc, openai)
    assert (decision is not None) is retried


def test_yiem_run_against_no_local_server_is_one_line_at_once(
    capsys: pytest.CaptureFixture[str],
) -> None:
    from yiemagent.cli.main import main

    port = free_port()
    url = f"http://127.0.0.1:{port}/v1"
    assert main(["run", "hi", "--model", "openai-compatible/m", "--base-url", url]) == 1
    out, err = capsys.readouterr()
    assert out == "" and err.strip().splitlines() == [
        f"yiem: error: the run failed: connection error reaching {url}/chat/completions: "
        f"connection refused, nothing listens at 127.0.0.1:{port}; is the server running, "
        "and listening at that address?"
    ]


# ── the helper itself ───────────────────────────────────────────────────────


async def test_no_retry_once_content_was_streamed() -> None:
    calls = 0

    async def attempt(_n: int) -> None:
        nonlocal calls
        calls += 1
        raise ConnectionError("reset")

    with pytest.raises(ConnectionError):
        await run_with_retries(
            attempt,
            classify=lambda _e: RetryDecision("connection error"),
            may_retry=lambda: False,
            signal=None,
        )
    assert calls == 1


async def test_too_long_delay_raises_without_waiting() -> None:
    async def attempt(_n: int) -> None:
        raise ValueError("429")

    with pytest.raises(RetryDelayTooLongError, match="10 s"):
        await run_with_retries(
            attempt,
            classify=lambda _e: RetryDecision("HTTP 429", 10_000),
            may_retry=lambda: True,
            signal=None,
            max_retry_delay_ms=5_000,
        )


async def test_zero_max_retry_delay_means_no_cap() -> None:
    """As in pi: max_retry_delay_ms=0 waits as long as the server asks."""
    calls = 0

    async def attempt(_n: int) -> str:
        nonlocal calls
        calls += 1
        if calls == 1:
            raise ValueError("429")
        return "ok"

    started = time.monotonic()
    result = await run_with_retries(
        attempt,
        classify=lambda _e: RetryDecision("HTTP 429", 200),
        may_retry=lambda: True,
        signal=None,
        max_retry_delay_ms=0,
    )
    assert result == "ok" and calls == 2
    assert time.monotonic() - started >= 0.19


async def test_abort_during_an_attempt_cancels_it() -> None:
    signal = AbortSignal()
    cancelled = asyncio.Event()

    async def attempt(_n: int) -> None:
        try:
            await asyncio.sleep(30)
        except asyncio.CancelledError:
            cancelled.set()
            raise

    asyncio.get_running_loop().call_later(0.05, signal.abort, "stop")
    with pytest.raises(AbortedError, match="stop"):
        await run_with_retries(
            attempt, classify=lambda _e: None, may_retry=lambda: True, signal=signal
        )
    assert cancelled.is_set()


def test_parse_retry_after() -> None:
    assert parse_retry_after_ms({"Retry-After": "2"}) == 2000
    assert parse_retry_after_ms({"retry-after": "0.5"}) == 500
    assert parse_retry_after_ms({"retry-after-ms": "250", "retry-after": "9"}) == 250
    assert parse_retry_after_ms({"retry-after": "soon"}) is None
    assert parse_retry_after_ms({}) is None and parse_retry_after_ms(None) is None
    now = time.time()
    date = email.utils.formatdate(now + 30, usegmt=True)
    assert parse_retry_after_ms({"retry-after": date}, now=now) == pytest.approx(30_000, abs=1000)
    past = email.utils.formatdate(now - 30, usegmt=True)
    assert parse_retry_after_ms({"retry-after": past}, now=now) == 0


def test_backoff_grows_with_jitter() -> None:
    rng = random.Random(1)
    for attempt, base in ((1, 500), (2, 1000), (3, 2000)):
        delays = [backoff_delay_ms(attempt, rng=rng) for _ in range(50)]
        assert all(0.75 * base <= d <= 1.25 * base for d in delays)
        assert len(set(delays)) > 1


def test_retryable_statuses() -> None:
    # the official SDKs' set: 408, 409 (a lock or a busy resource), 429 and every 5xx
    statuses = (400, 401, 404, 408, 409, 422, 429, 500, 503, 529)
    assert [s for s in statuses if is_retryable_status(s)] == [408, 409, 429, 500, 503, 529]


async def test_409_conflict_is_retried_as_the_sdks_do(server: ReplayServer) -> None:
    busy = {"error": {"message": "a run is active on this session", "type": "conflict"}}
    server.enqueue(json_reply(409, busy), sse_reply(openai_chunks({"content": "fine"})))
    message = await ask(server)
    assert message.stop_reason == "stop" and message.text == "fine"
    assert len(server.requests) == 2


def test_keys_from_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "from-env")
    monkeypatch.setenv("MYHOST_API_KEY", "custom")
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    assert get_env_api_key("anthropic") == "from-env"
    assert get_env_api_key("myhost") == "custom"
    assert get_env_api_key("openai") is None
    assert resolve_api_key("anthropic", "explicit") == "explicit"
    assert resolve_api_key("anthropic", None) == "from-env"


def test_scrub() -> None:
    assert scrub("bad key abcd-1234 given", ["abcd-1234"]) == "bad key *** given"
    assert "sk-proj-" not in scrub("Incorrect API key provided: sk-proj-AbCdEf0123456789")
    assert scrub("Authorization: Bearer tok.en-123456789") == "Authorization: Bearer ***"
    assert scrub("short x stays", ["x"]) == "short x stays"


async def test_a_missing_sdk_ends_the_call_at_once_with_the_install_command() -> None:
    """Without the extra, the SDK import failed in the call *and* in the error describer, so
    the stream never ended: 120 s to the idle watchdog, then a traceback."""
    from yiemagent.ai.providers._sdk_call import start_call

    model = Model(id="m", provider="openai", api="openai-completions", base_url="http://x")

    async def work(builder: object, secrets: list[str | None]) -> None:
        raise ModuleNotFoundError("No module named 'openai'", name="openai")

    def describe(exc: BaseException) -> str:
        raise ModuleNotFoundError("No module named 'openai'", name="openai")

    stream = start_call(model, work, describe=describe, name="openai-completions")
    message = await asyncio.wait_for(stream.result(), 5)
    assert message.stop_reason == "error"
    assert "pip install -e '.[openai]'" in (message.error_message or "")  # from the checkout


async def test_a_describer_that_raises_still_ends_the_call() -> None:
    from yiemagent.ai.providers._sdk_call import start_call

    model = Model(id="m", provider="openai", api="openai-completions", base_url="http://x")

    async def work(builder: object, secrets: list[str | None]) -> None:
        raise ValueError("the real problem")

    def describe(exc: BaseException) -> str:
        raise RuntimeError("describer bug")

    stream = start_call(model, work, describe=describe, name="openai-completions")
    message = await asyncio.wait_for(stream.result(), 5)
    assert message.stop_reason == "error"
    assert message.error_message == "ValueError: the real problem"


class _Interrupt(BaseException):
    """Like KeyboardInterrupt or a test runner's timeout: not an `Exception`."""


async def test_an_interrupt_inside_the_call_still_ends_the_stream_then_propagates() -> None:
    """A BaseException raised inside a provider call (pytest-timeout's, while the SDK
    was importing on a starved machine) stayed in the call's task and the stream never
    ended: `result()` hung for ever. Now the message ends "aborted" and the exception goes
    on (it is the task's)."""
    from yiemagent.ai import stream

    def on_payload(body: dict[str, Any]) -> None:
        raise _Interrupt("stop")

    model = Model(
        id="m", provider="vllm", api="openai-completions", base_url="http://127.0.0.1:9/v1"
    )
    events = stream(
        model, Context("sys", [UserMessage("hi")]), StreamOptions(on_payload=on_payload)
    )
    message = await asyncio.wait_for(events.result(), 10)
    assert message.stop_reason == "aborted"
    assert message.error_message == "the request was interrupted (_Interrupt)"


async def test_a_missing_key_without_the_sdk_is_one_plain_line_naming_the_sdk(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """`yiem run … --model openai/gpt-4o-mini` with neither the key nor the extra printed a
    `describing SetupError(…) failed: ModuleNotFoundError(…)` warning, then the error with a
    `SetupError:` prefix: the describer imported the SDK before looking at our own errors.
    The missing SDK is said, not the key: a key alone would not help."""
    import sys

    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.setitem(sys.modules, "openai", None)  # `import openai` → ModuleNotFoundError
    model = Model(
        id="gpt-4o-mini", provider="openai", api="openai-completions", base_url="https://x/v1"
    )
    context = Context(messages=[UserMessage(content="hi")])
    with caplog.at_level("WARNING"):
        stream = stream_openai_completions(model, context, StreamOptions())
        message = await asyncio.wait_for(stream.result(), 5)
    assert message.stop_reason == "error"
    assert message.error_message == f"the openai SDK is not installed: {install_hint('openai')}"
    assert not [r for r in caplog.records if r.levelname == "WARNING"]


@pytest.mark.parametrize("value", ["inf", "-inf", "nan", "1e999", "Infinity"])
def test_a_delay_that_is_no_finite_number_is_no_delay_asked(value: str) -> None:
    assert parse_retry_after_ms({"retry-after": value}) is None
    assert parse_retry_after_ms({"retry-after-ms": value}) is None
    assert parse_retry_after_ms({"retry-after-ms": value, "retry-after": "2"}) == 2000


async def test_an_infinite_retry_after_without_a_cap_backs_off_instead_of_waiting_for_ever(
    server: ReplayServer,
) -> None:
    """With max_retry_delay_ms=0 (no cap) a 429 saying `retry-after: inf` was waited for:
    for ever."""
    server.enqueue(
        json_reply(429, RATE_LIMITED, headers={"retry-after": "inf"}),
        sse_reply(openai_chunks({"role": "assistant", "content": "hello"})),
    )
    message = await asyncio.wait_for(ask(server, max_retry_delay_ms=0), 60)
    assert message.stop_reason == "stop" and message.text == "hello", message.error_message
    assert server.settled_request_count() == 2
