"""An event whose data is JSON but no object: `data: null`, which some OpenAI-compatible
relays send mid-stream, or a number or a list. The SDKs hand it on as `None` (or the
value), and the call ended in "AttributeError: 'NoneType' object has no attribute
'choices'" (Chat Completions, Anthropic) or went on as if nothing came (Responses). No
server documents such an event, so the call ends in one error that says what came.
Through each real SDK against `ReplayServer` on 127.0.0.1."""

from __future__ import annotations

import asyncio

import pytest

from tests.ai.servers import ReplayServer, sse_reply
from tests.ai.test_odd_wire_values import KEY, STREAMS, _model
from yiemagent.ai import stream
from yiemagent.types import Context, StreamOptions, UserMessage

pytestmark = pytest.mark.timeout(120)


@pytest.mark.parametrize("api", sorted(STREAMS))
@pytest.mark.parametrize("data", ["null", "42", '["x"]', '"text"'])
async def test_the_call_ends_in_an_error_that_says_what_came(
    server: ReplayServer, api: str, data: str
) -> None:
    events = [str(event) for event in STREAMS[api]]
    first = next(i for i, event in enumerate(events) if "data: {" in event)
    named = "event: message_delta\n" if api == "anthropic-messages" else ""
    events.insert(first + 1, f"{named}data: {data}")
    server.enqueue(sse_reply(events))
    options = StreamOptions(api_key=KEY, max_retry_delay_ms=50)
    call = stream(_model(api, server), Context("", [UserMessage("hi")]), options)
    message = await asyncio.wait_for(call.result(), 60)
    assert message.stop_reason == "error"
    assert message.error_message == (
        f"ValueError: the server sent an event whose data is no JSON object: data: {data}"
    )
