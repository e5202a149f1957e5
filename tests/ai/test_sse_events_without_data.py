"""SSE events that hold no data are no events (the SSE standard: an empty data buffer
dispatches nothing), yet the `openai` SDK dispatches one on a blank line after `retry:` or
`id:` lines, or after a comment once an earlier event had an `id:`, and after an empty
`data:` keep-alive, and fails the whole answer on `json.loads("")`
(openai/openai-python#2722 and #2721: a gateway that numbers its chunks and pings every
15 s broke every answer longer than that; relays keep long answers alive with empty
`data:` frames, omnigent-ai/omnigent#1474). Such events are left out of the stream the SDK
reads. Through the real SDK, Chat Completions and Responses, against `ReplayServer` on
127.0.0.1."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator

import pytest
from hypothesis import given, strategies as st

from tests.ai.servers import ReplayServer, openai_chunks, sse_reply
from tests.ai.test_attachments import responses_done, responses_sse
from yiemagent.ai.providers._http_guard import events_with_data
from yiemagent.ai.providers.openai_completions import stream_openai_completions
from yiemagent.ai.providers.openai_responses import stream_openai_responses
from yiemagent.types.messages import AssistantMessage, UserMessage
from yiemagent.types.model import Context, Model, StreamOptions

pytestmark = pytest.mark.timeout(120)

KEY = "sk-test-0123456789abcdef"
WITHOUT_DATA = {
    "a ping after numbered chunks": ": ping",
    "a retry directive": "retry: 3000",
    "an id alone": "id: 99",
    "an empty data keep-alive": "data: ",
    "an empty data keep-alive without its space": "data:",
    "an event name alone": "event: ping",
}


def numbered(events: list[str]) -> list[str]:
    """Each event with an `id:` line before it, as a gateway that numbers its chunks."""
    return [f"id: {n}\n{event}" for n, event in enumerate(events, 1)]


async def chat(server: ReplayServer, events: list[str]) -> AssistantMessage:
    server.enqueue(sse_reply(events))
    model = Model(id="m", provider="vllm", api="openai-completions", base_url=server.url + "/v1")
    stream = stream_openai_completions(
        model, Context("", [UserMessage("hi")]), StreamOptions(api_key=KEY)
    )
    return await stream.result()


@pytest.mark.parametrize("case", sorted(WITHOUT_DATA))
async def test_chat_completions_go_on_past_an_event_without_data(
    server: ReplayServer, case: str
) -> None:
    chunks = numbered(openai_chunks({"content": "Hello"}, {"content": " there"}))
    events = [WITHOUT_DATA[case], chunks[0], WITHOUT_DATA[case], *chunks[1:]]
    message = await chat(server, events)
    assert (message.stop_reason, message.error_message) == ("stop", None)
    assert message.text == "Hello there"


async def test_a_data_line_split_over_two_lines_is_kept_whole(server: ReplayServer) -> None:
    """An event's data may come in several `data:` lines, joined by newlines: kept as
    sent, the JSON still reads."""
    body = {"id": "c", "object": "chat.completion.chunk", "created": 1, "model": "m"}
    choice = {"index": 0, "delta": {"content": "two lines"}, "finish_reason": "stop"}
    text = json.dumps({**body, "choices": [choice]}, indent=1)
    split = "\n".join("data: " + line for line in text.splitlines())
    message = await chat(server, [": ping", split, "data: [DONE]"])
    assert (message.stop_reason, message.text) == ("stop", "two lines")


async def test_the_responses_api_goes_on_past_events_without_data(server: ReplayServer) -> None:
    item = {"type": "message", "id": "msg_1", "role": "assistant", "content": []}
    events = responses_sse(
        {"type": "response.output_item.added", "output_index": 0, "item": item},
        {"type": "response.output_text.delta", "item_id": "msg_1", "delta": "ok"},
        responses_done(),
    )
    server.enqueue(sse_reply(["retry: 3000", *numbered(events[:2]), ": ping", "data: ", events[2]]))
    model = Model(
        id="gpt-4o-mini", provider="openai", api="openai-responses", base_url=server.url + "/v1"
    )
    stream = stream_openai_responses(
        model, Context("", [UserMessage("hi")]), StreamOptions(api_key=KEY)
    )
    message = await stream.result()
    assert (message.stop_reason, message.error_message, message.text) == ("stop", None, "ok")


_LINES = st.sampled_from(
    [
        "data: {}",
        "data:{}",
        "data: x",
        "data: ",
        "data:",
        ": ping",
        "id: 7",
        "retry: 10",
        "event: e",
    ]
)


@given(
    events=st.lists(st.lists(_LINES, min_size=1, max_size=3), max_size=6),
    newline=st.sampled_from(["\n", "\r\n"]),
    data=st.data(),
)
def test_only_events_with_data_pass_however_the_bytes_are_split(
    events: list[list[str]], newline: str, data: st.DataObject
) -> None:
    blocks = ["".join(line + newline for line in event) + newline for event in events]
    raw = "".join(blocks).encode()
    cuts = sorted(data.draw(st.lists(st.integers(0, len(raw)), max_size=6)))
    chunks = [raw[a:b] for a, b in zip([0, *cuts], [*cuts, len(raw)], strict=True)]

    async def source() -> AsyncIterator[bytes]:
        for chunk in chunks:
            yield chunk

    async def read() -> bytes:
        return b"".join([piece async for piece in events_with_data(source())])

    kept = [
        block
        for block, event in zip(blocks, events, strict=True)
        if any(line.startswith("data:") and line[5:].strip() for line in event)
    ]
    assert asyncio.run(read()) == "".join(kept).encode()
