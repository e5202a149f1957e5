"""`FallbackModel` against real local HTTP servers on 127.0.0.1 (DESIGN §13): the next model
answers when the first refuses connections, answers 5xx/429 after its retries, 401 or 404; a
failure after content was streamed, a 4xx request error and an abort do not fall through."""

from __future__ import annotations

import asyncio
import contextlib
import socket
import threading
from collections.abc import Iterator

import pytest

from tests.ai.servers import ReplayServer, free_port, json_reply, openai_chunks, sse_reply
from yiemagent.ai import FallbackEvent, FallbackModel, stream
from yiemagent.errors import ConfigError
from yiemagent.loop import agent_loop
from yiemagent.types import (
    AgentContext,
    AgentLoopConfig,
    MessageUpdateEvent,
    UserMessage,
)
from yiemagent.types.model import Context, Model, StreamOptions
from yiemagent.types.signal import AbortSignal

pytestmark = pytest.mark.timeout(60)

UNAVAILABLE = {"error": {"message": "Service unavailable"}}


def model_at(url: str, id: str) -> Model:
    return Model(id=id, provider="vllm", api="openai-completions", base_url=url + "/v1")


def options(**kwargs: object) -> StreamOptions:
    # 1 ms between retries keeps the provider's own retries quick
    return StreamOptions(api_key="k", max_retry_delay_ms=1, **kwargs)  # type: ignore[arg-type]


async def collect(model: Model, opts: StreamOptions | None = None) -> tuple[list[object], object]:
    response = stream(model, Context("", [UserMessage("hi")]), opts or options())
    events = [event async for event in response]
    return events, await response.result()


@pytest.fixture
def second() -> Iterator[ReplayServer]:
    with ReplayServer() as replay:
        yield replay


async def test_connection_refused_falls_through_to_the_second_server(
    second: ReplayServer,
) -> None:
    dead = f"http://127.0.0.1:{free_port()}"  # nothing listens there
    second.enqueue(sse_reply(openai_chunks({"content": "from b"})))
    events, message = await collect(FallbackModel([model_at(dead, "a"), model_at(second.url, "b")]))
    assert message.stop_reason == "stop" and message.text == "from b"  # type: ignore[attr-defined]
    assert message.model == "b" and message.provider == "vllm"  # type: ignore[attr-defined]
    fallbacks = [e for e in events if isinstance(e, FallbackEvent)]
    assert len(fallbacks) == 1
    assert fallbacks[0].failed_model == "a" and fallbacks[0].error_type == "connection"
    assert "connection error" in fallbacks[0].error_message
    assert [e.type for e in events].count("start") == 1  # type: ignore[attr-defined]
    assert len(second.requests) == 1


async def test_500s_after_retries_fall_through(server: ReplayServer, second: ReplayServer) -> None:
    server.enqueue(*[json_reply(500, UNAVAILABLE) for _ in range(4)])
    second.enqueue(sse_reply(openai_chunks({"content": "b answers"})))
    events, message = await collect(
        FallbackModel([model_at(server.url, "a"), model_at(second.url, "b")])
    )
    assert message.text == "b answers" and message.model == "b"  # type: ignore[attr-defined]
    assert len(server.requests) == 4  # the first model's own retries ran out first
    (fallback,) = [e for e in events if isinstance(e, FallbackEvent)]
    assert fallback.error_type == "500" and "HTTP 500" in fallback.error_message


async def test_when_every_model_fails_the_error_names_each_failure(
    server: ReplayServer, second: ReplayServer
) -> None:
    server.enqueue(*[json_reply(500, {"error": {"message": "first is down"}}) for _ in range(4)])
    second.enqueue(json_reply(401, {"error": {"message": "bad key for the second"}}))
    _, message = await collect(
        FallbackModel([model_at(server.url, "a"), model_at(second.url, "b")])
    )
    assert message.stop_reason == "error" and message.model == "b"  # type: ignore[attr-defined]
    text = message.error_message or ""  # type: ignore[attr-defined]
    assert text.startswith("HTTP 401") and "bad key for the second" in text  # the last failure
    assert "vllm/a" in text and "first is down" in text  # and the one before it


async def test_429_and_401_fall_through_but_400_does_not(
    server: ReplayServer, second: ReplayServer
) -> None:
    limited = {"error": {"message": "slow down", "type": "rate_limit_error"}}
    server.enqueue(*[json_reply(429, limited) for _ in range(4)])
    second.enqueue(sse_reply(openai_chunks({"content": "ok"})))
    _, message = await collect(
        FallbackModel([model_at(server.url, "a"), model_at(second.url, "b")])
    )
    assert message.model == "b"  # type: ignore[attr-defined]

    server.enqueue(json_reply(401, {"error": {"message": "bad key"}}))
    second.enqueue(sse_reply(openai_chunks({"content": "ok"})))
    _, message = await collect(
        FallbackModel([model_at(server.url, "a"), model_at(second.url, "b")])
    )
    assert message.model == "b"  # type: ignore[attr-defined]

    before = len(second.requests)
    server.enqueue(json_reply(400, {"error": {"message": "messages: field required"}}))
    events, message = await collect(
        FallbackModel([model_at(server.url, "a"), model_at(second.url, "b")])
    )
    assert message.stop_reason == "error" and message.model == "a"  # type: ignore[attr-defined]
    assert "HTTP 400" in (message.error_message or "")  # type: ignore[attr-defined]
    assert len(second.requests) == before  # never asked
    assert not any(isinstance(e, FallbackEvent) for e in events)


async def test_a_model_the_server_does_not_have_falls_through(
    server: ReplayServer, second: ReplayServer
) -> None:
    """A 404 is about the model or the address, not the request: a retired model (or one
    this key may not use) hands the call to the next model."""
    gone = {
        "error": {
            "message": "The model `a` does not exist or you do not have access to it.",
            "type": "invalid_request_error",
            "code": "model_not_found",
        }
    }
    server.enqueue(json_reply(404, gone))
    second.enqueue(sse_reply(openai_chunks({"content": "b answers"})))
    events, message = await collect(
        FallbackModel([model_at(server.url, "a"), model_at(second.url, "b")])
    )
    assert message.text == "b answers" and message.model == "b"  # type: ignore[attr-defined]
    assert len(server.requests) == 1  # not retried on the first
    (fallback,) = [e for e in events if isinstance(e, FallbackEvent)]
    assert fallback.error_type == "404" and "does not exist" in fallback.error_message


@contextlib.contextmanager
def dies_mid_stream() -> Iterator[str]:
    """A raw HTTP server that streams one content chunk of a chunked body, then closes the
    connection without ending the body: the client sees the content, then a transport error
    (an incomplete chunked read), deterministically (a FIN keeps the data before it)."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen()
    stop = threading.Event()

    def serve() -> None:
        listener.settimeout(0.1)
        while not stop.is_set():
            try:
                conn, _ = listener.accept()
            except OSError:
                continue
            with conn:
                conn.settimeout(5)
                data = b""
                while b"\r\n\r\n" not in data:
                    data += conn.recv(65536)
                head, _, rest = data.partition(b"\r\n\r\n")
                length = next(
                    int(line.split(b":")[1])
                    for line in head.split(b"\r\n")
                    if line.lower().startswith(b"content-length")
                )
                while len(rest) < length:
                    rest += conn.recv(65536)
                event = openai_chunks({"content": "partial answ"})[0].encode() + b"\n\n"
                conn.sendall(
                    b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n"
                    b"transfer-encoding: chunked\r\n\r\n"
                    + f"{len(event):x}\r\n".encode()
                    + event
                    + b"\r\n"
                )
                stop.wait(0.2)
                conn.shutdown(socket.SHUT_RDWR)  # dies: no final 0-chunk, no [DONE]

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        host, port = listener.getsockname()
        yield f"http://{host}:{port}"
    finally:
        stop.set()
        thread.join(5)
        listener.close()


async def test_death_after_content_is_an_error_without_fallback(second: ReplayServer) -> None:
    second.enqueue(sse_reply(openai_chunks({"content": "never"})))
    with dies_mid_stream() as url:
        events, message = await collect(
            FallbackModel([model_at(url, "a"), model_at(second.url, "b")])
        )
    assert message.stop_reason == "error" and message.model == "a"  # type: ignore[attr-defined]
    assert message.text == "partial answ"  # type: ignore[attr-defined]
    assert "connection error" in (message.error_message or "")  # type: ignore[attr-defined]
    assert not second.requests
    assert not any(isinstance(e, FallbackEvent) for e in events)


async def test_abort_does_not_fall_through(server: ReplayServer, second: ReplayServer) -> None:
    server.enqueue(json_reply(429, {"error": {"message": "wait"}}, headers={"retry-after": "30"}))
    signal = AbortSignal()
    asyncio.get_running_loop().call_later(0.3, signal.abort)
    opts = StreamOptions(api_key="k", signal=signal)  # default 60 s retry limit: it waits
    _, message = await collect(
        FallbackModel([model_at(server.url, "a"), model_at(second.url, "b")]), opts
    )
    assert message.stop_reason == "aborted"  # type: ignore[attr-defined]
    assert not second.requests


async def test_the_loop_shows_the_fallback_in_its_events(second: ReplayServer) -> None:
    dead = f"http://127.0.0.1:{free_port()}"
    second.enqueue(sse_reply(openai_chunks({"content": "loop answer"})))
    model = FallbackModel([model_at(dead, "a"), model_at(second.url, "b")])
    config = AgentLoopConfig(model=model, api_key="k", max_retry_delay_ms=1)
    events = [e async for e in agent_loop([UserMessage("hi")], AgentContext(), config)]
    updates = [e for e in events if isinstance(e, MessageUpdateEvent)]
    assert any(e.assistant_message_event.type == "fallback" for e in updates)
    end = events[-1]
    assert end.type == "agent_end" and end.reason == "stop"  # type: ignore[union-attr]
    final = end.messages[-1]  # type: ignore[union-attr]
    assert final.model == "b" and final.text == "loop answer"


async def test_agent_takes_a_list_of_models(second: ReplayServer) -> None:
    from yiemagent import Agent

    dead = f"http://127.0.0.1:{free_port()}"
    second.enqueue(sse_reply(openai_chunks({"content": "agent answer"})))
    agent = Agent(model=[model_at(dead, "a"), model_at(second.url, "b")], max_retry_delay_ms=1)
    assert isinstance(agent.state.model, FallbackModel)
    reply = await agent.prompt("hi")
    assert reply.text == "agent answer" and reply.model == "b"


def test_fallback_model_is_a_model_named_after_its_first() -> None:
    a = Model(id="a", provider="p", api="openai-completions", context_window=8000)
    b = Model(id="b", provider="q", api="anthropic-messages", context_window=4000)
    nested = FallbackModel([a, FallbackModel([b])])
    assert nested.models == (a, b)
    assert nested.id == "a" and nested.provider == "p" and nested.api == "fallback"
    assert nested.context_window == 4000
    with pytest.raises(ConfigError):
        FallbackModel([])
    with pytest.raises(ConfigError):
        FallbackModel(a)  # type: ignore[arg-type]
