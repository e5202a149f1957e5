"""A stream request answered with status 200 and a body of a known length that holds no
events (DESIGN §8): a plain-text note of a proxy or a misconfigured server, an empty body.
The call ended "the stream ended without a finish reason (cut off?)", blaming the model and
losing what the server said; it now says what came, on every wire format, through the real
SDKs against a local server. Events under any label are still read as events."""

from __future__ import annotations

import asyncio
import json

import pytest

from tests.ai.servers import ReplayServer, Reply
from tests.ai.test_odd_wire_values import KEY, STREAMS, _model
from yiemagent.ai import stream
from yiemagent.types import Context, StreamOptions, UserMessage

pytestmark = pytest.mark.timeout(120)


async def answer(api: str, server: ReplayServer) -> tuple[str, str | None]:
    options = StreamOptions(api_key=KEY, max_retry_delay_ms=50)
    call = stream(_model(api, server), Context("", [UserMessage("hi")]), options)
    message = await asyncio.wait_for(call.result(), 60)
    return message.stop_reason, message.error_message


@pytest.mark.parametrize("api", sorted(STREAMS))
@pytest.mark.parametrize(
    ("content_type", "body", "said"),
    [
        (
            "text/plain; charset=utf-8",
            b"Request blocked by policy\n",
            "the server answered with text/plain, not an event stream: Request blocked by policy",
        ),
        (
            "text/event-stream",
            b"",
            "the server answered with an empty body, not an event stream",
        ),
        (None, b"", "the server answered with an empty body, not an event stream"),
        (
            "application/octet-stream",
            b"\x00\x01binary",
            "the server answered with application/octet-stream, not an event stream:",
        ),
    ],
    ids=["plain-text", "empty-event-stream", "empty-untyped", "binary"],
)
async def test_a_body_with_no_events_says_what_came(
    api: str, content_type: str | None, body: bytes, said: str
) -> None:
    headers = {} if content_type is None else {"content-type": content_type}
    with ReplayServer() as server:
        server.enqueue(Reply(status=200, headers=headers, body=body))
        stop_reason, error = await answer(api, server)
    assert stop_reason == "error"
    assert error is not None and said in error, error
    assert "\n" not in error


@pytest.mark.parametrize("api", sorted(STREAMS))
async def test_events_sent_as_plain_text_are_read_as_events(api: str) -> None:
    events = b"".join(event.encode() + b"\n\n" for event in STREAMS[api])
    with ReplayServer() as server:
        server.enqueue(Reply(status=200, headers={"content-type": "text/plain"}, body=events))
        stop_reason, error = await answer(api, server)
    assert stop_reason in ("stop", "toolUse"), error


async def test_a_whole_chat_completion_with_no_choices_says_so() -> None:
    """A server that ignored `stream: true` and answered a chat completion whose `choices`
    is empty (a gateway's filter, a broken proxy): the call ended "the stream ended without
    a finish reason (cut off?)"."""
    body = {"id": "x", "object": "chat.completion", "model": "m", "choices": []}
    with ReplayServer() as server:
        server.enqueue(Reply(status=200, body=json.dumps(body).encode()))
        stop_reason, error = await answer("openai-completions", server)
    assert stop_reason == "error"
    assert error is not None and error.endswith(
        'the server answered with a chat completion without choices: {"id": "x", '
        '"object": "chat.completion", "model": "m", "choices": []}'
    ), error
