"""Stream faults on both wire APIs, replayed by a local server through the real SDKs (DESIGN
§7, §8; issue 12 item 5): an invalid UTF-8 byte in a streamed answer is replaced and the
answer kept; a connection cut mid-stream says so — after how many bytes, which URL, and
whether it was retried."""

from __future__ import annotations

import asyncio
import contextlib
import socket
import struct
import threading
from collections.abc import Iterator, Sequence
from typing import Any

import pytest
from hypothesis import given, strategies as st

from tests.ai.servers import ReplayServer, Reply, load_sse, openai_chunks
from yiemagent.ai._retry import RetryDecision, retry_note, run_with_retries
from yiemagent.ai.providers._http_guard import repair_utf8
from yiemagent.ai.providers.anthropic_messages import stream_anthropic_messages
from yiemagent.ai.providers.openai_completions import stream_openai_completions
from yiemagent.types.messages import AssistantMessage, UserMessage
from yiemagent.types.model import Context, ErrorEvent, Model, StreamOptions

pytestmark = pytest.mark.timeout(60)

KEY = "sk-test-0123456789abcdefghij"


def openai_model(server: ReplayServer) -> Model:
    return Model(id="m", provider="vllm", api="openai-completions", base_url=server.url + "/v1")


def claude(server: ReplayServer) -> Model:
    return Model(
        id="claude-test-1",
        provider="anthropic",
        api="anthropic-messages",
        base_url=server.url,
        max_tokens=1024,
    )


ERROR_TYPES: list[str | None] = []
"""`ErrorEvent.error_type` of each failed answer, in order."""


async def answer(api: str, server: ReplayServer) -> AssistantMessage:
    context = Context("Be brief.", [UserMessage("hi")])
    options = StreamOptions(api_key=KEY, max_retry_delay_ms=50)
    if api == "openai":
        stream = stream_openai_completions(openai_model(server), context, options)
    else:
        stream = stream_anthropic_messages(claude(server), context, options)
    async for event in stream:
        if isinstance(event, ErrorEvent):
            ERROR_TYPES.append(event.error_type)
    return await stream.result()


def with_bad_byte(api: str) -> list[str | bytes]:
    """A two-part text answer whose second part holds the byte 0xff inside its JSON string."""
    if api == "openai":
        events: list[str | bytes] = list(
            openai_chunks({"role": "assistant", "content": "Hello "}, {"content": "BAD"})
        )
    else:
        events = list(load_sse("anthropic_text.sse"))
        events[3] = str(events[3]).replace(" there.", "BAD")
    index = next(i for i, e in enumerate(events) if "BAD" in str(e))
    events[index] = str(events[index]).encode().replace(b"BAD", b"w\xffrld")
    return events


def first_part(api: str) -> Sequence[str | bytes]:
    """The events of an answer up to its first text delta (the rest never comes)."""
    if api == "openai":
        return list(openai_chunks({"role": "assistant", "content": "Hello "}))[:1]
    return list(load_sse("anthropic_text.sse"))[:3]


@pytest.mark.parametrize("api", ["openai", "anthropic"])
async def test_an_invalid_utf8_byte_is_replaced_and_the_answer_kept(
    server: ReplayServer, api: str
) -> None:
    server.enqueue(Reply(events=with_bad_byte(api)))
    message = await answer(api, server)
    assert message.stop_reason == "stop", message.error_message
    assert message.text.endswith("w\ufffdrld")
    assert message.text.startswith("Hello")


def sent_bytes(events: Sequence[str | bytes]) -> int:
    """What the replay server writes for `events` (each followed by a blank line)."""
    return sum(len(e if isinstance(e, bytes) else e.encode()) + 2 for e in events)


@pytest.mark.parametrize("api", ["openai", "anthropic"])
async def test_a_reset_mid_stream_says_what_happened(server: ReplayServer, api: str) -> None:
    events = first_part(api)
    server.enqueue(Reply(events=events, delay_s=0.05, reset=True))
    message = await answer(api, server)
    assert message.stop_reason == "error"
    assert ERROR_TYPES[-1] == "connection"  # a fallback model moves on
    path = "/v1/chat/completions" if api == "openai" else "/v1/messages"
    assert message.error_message == (
        "connection error: the server closed the connection mid-stream after "
        f"{sent_bytes(events)} bytes ({server.url}{path}); "
        "not retried: part of the answer had already arrived"
    )
    assert message.text.startswith("Hello")  # what arrived is kept
    assert len(server.requests) == 1


@pytest.mark.parametrize("api", ["openai", "anthropic"])
async def test_a_reset_before_any_content_is_retried(server: ReplayServer, api: str) -> None:
    good: list[str | bytes] = (
        list(openai_chunks({"role": "assistant", "content": "fine"}))
        if api == "openai"
        else list(load_sse("anthropic_text.sse"))
    )
    server.enqueue(Reply(events=[], reset=True), Reply(events=good))
    message = await answer(api, server)
    assert message.stop_reason == "stop", message.error_message
    assert len(server.requests) == 2


async def test_a_reset_after_the_start_event_but_before_content_is_retried(
    server: ReplayServer,
) -> None:
    """Anthropic's `message_start` carries no content: bytes arrived, a retry repeats nothing."""
    good = list(load_sse("anthropic_text.sse"))
    server.enqueue(Reply(events=good[:1], reset=True), Reply(events=good))
    message = await answer("anthropic", server)
    assert message.stop_reason == "stop", message.error_message
    assert len(server.requests) == 2


@pytest.mark.parametrize("api", ["openai", "anthropic"])
async def test_resets_on_every_attempt_say_it_gave_up(server: ReplayServer, api: str) -> None:
    server.enqueue(*(Reply(events=[], reset=True) for _ in range(4)))
    message = await answer(api, server)
    text = message.error_message or ""
    assert message.stop_reason == "error"
    assert text.startswith(
        "connection error: the server closed the connection mid-stream after 0 bytes"
    )
    assert text.endswith("; gave up after 4 attempts"), text
    assert len(server.requests) == 4


@contextlib.contextmanager
def resets_before_answering() -> Iterator[tuple[str, list[int]]]:
    """A listener that reads each request and resets the connection without a response."""
    listener = socket.create_server(("127.0.0.1", 0))
    listener.settimeout(0.05)
    stop = threading.Event()
    served: list[int] = []

    def serve() -> None:
        while not stop.is_set():
            try:
                conn, _ = listener.accept()
            except TimeoutError:
                continue
            with conn:
                conn.settimeout(5)
                with contextlib.suppress(OSError):
                    conn.recv(65536)
                served.append(1)
                conn.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{listener.getsockname()[1]}", served
    finally:
        stop.set()
        thread.join(5)
        listener.close()


async def test_a_reset_before_answering_is_retried_then_explained() -> None:
    with resets_before_answering() as (url, served):
        model = Model(id="m", provider="vllm", api="openai-completions", base_url=url + "/v1")
        context = Context("", [UserMessage("hi")])
        options = StreamOptions(api_key=KEY, max_retry_delay_ms=50)
        message = await stream_openai_completions(model, context, options).result()
    assert message.stop_reason == "error"
    assert message.error_message == (
        "connection error: the server closed the connection before answering "
        f"({url}/v1/chat/completions); gave up after 4 attempts"
    )
    assert len(served) == 4


async def _joined(chunks: list[bytes]) -> bytes:
    async def source() -> Any:
        for chunk in chunks:
            yield chunk

    return b"".join([part async for part in repair_utf8(source())])


@given(st.lists(st.binary(max_size=12), max_size=8))
def test_repair_utf8_equals_decoding_the_whole(chunks: list[bytes]) -> None:
    whole = b"".join(chunks)
    assert asyncio.run(_joined(chunks)) == whole.decode("utf-8", "replace").encode("utf-8")


@given(st.text(max_size=40), st.data())
def test_repair_utf8_keeps_valid_text_split_anywhere(text: str, data: st.DataObject) -> None:
    raw = text.encode("utf-8")
    cuts = sorted(data.draw(st.lists(st.integers(0, len(raw)), max_size=5)))
    chunks = [raw[a:b] for a, b in zip([0, *cuts], [*cuts, len(raw)], strict=True)]
    assert asyncio.run(_joined(chunks)) == raw


@pytest.mark.parametrize("streamed", [False, True])
async def test_a_builtin_connection_error_carries_its_retry_note(streamed: bool) -> None:
    """The note is an attribute: a builtin `ConnectionError` cannot be weakly referenced."""
    failures: list[ConnectionError] = []

    async def attempt(_n: int) -> None:
        failures.append(ConnectionError("reset"))
        raise failures[-1]

    with pytest.raises(ConnectionError) as caught:
        await run_with_retries(
            attempt,
            classify=lambda _e: RetryDecision("connection error", 0, connection=True),
            may_retry=lambda: not streamed,
            signal=None,
            max_attempts=3,
        )
    expected = (
        "not retried: part of the answer had already arrived"
        if streamed
        else "gave up after 3 attempts"
    )
    assert retry_note(caught.value) == expected
    assert len(failures) == (1 if streamed else 3)


async def test_other_retryable_failures_say_they_gave_up_as_a_connection_does() -> None:
    """An HTTP 503 whose attempts ran out gets the note a lost connection gets; one not
    retried because the answer had begun gets none (that note is a lost connection's)."""

    async def attempt(_n: int) -> None:
        raise ValueError("503")

    for may_retry, note in ((True, "gave up after 2 attempts"), (False, None)):
        with pytest.raises(ValueError) as caught:
            await run_with_retries(
                attempt,
                classify=lambda _e: RetryDecision("HTTP 503", 0),
                may_retry=lambda retry=may_retry: retry,
                signal=None,
                max_attempts=2,
            )
        assert retry_note(caught.value) == note
