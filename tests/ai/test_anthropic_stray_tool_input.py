"""An Anthropic-compatible server that streams tool input (`input_json_delta`) for a content
block it never started as a `tool_use` block, through the real `anthropic` SDK from a local
replay server (DESIGN §8): the call ends in one error that says so, and no other call's
arguments take the stray input."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.ai.servers import ReplayServer, sse_reply
from yiemagent.ai.providers.anthropic_messages import stream_anthropic_messages
from yiemagent.types import Context, Model, StreamOptions, UserMessage

pytestmark = pytest.mark.timeout(120)  # the first test imports the SDK: seconds of CPU under load


def event(name: str, data: dict[str, Any]) -> str:
    return f"event: {name}\ndata: {json.dumps(data)}"


START = event(
    "message_start",
    {"type": "message_start", "message": {
        "id": "msg_1", "type": "message", "role": "assistant", "model": "claude-x",
        "content": [], "stop_reason": None, "stop_sequence": None,
        "usage": {"input_tokens": 5, "output_tokens": 1},
    }},
)  # fmt: skip
END = [
    event("message_delta", {"type": "message_delta", "delta": {"stop_reason": "tool_use"},
                            "usage": {"output_tokens": 9}}),
    event("message_stop", {"type": "message_stop"}),
]  # fmt: skip


def tool_use(index: int, id: str, name: str) -> str:
    block = {"type": "tool_use", "id": id, "name": name, "input": {}}
    start = {"type": "content_block_start", "index": index, "content_block": block}
    return event("content_block_start", start)


def text(index: int) -> str:
    block = {"type": "text", "text": ""}
    return event("content_block_start", {"type": "content_block_start", "index": index,
                                         "content_block": block})  # fmt: skip


def tool_input(index: int, partial_json: str) -> str:
    delta = {"type": "input_json_delta", "partial_json": partial_json}
    return event("content_block_delta", {"type": "content_block_delta", "index": index,
                                         "delta": delta})  # fmt: skip


def stop(index: int) -> str:
    return event("content_block_stop", {"type": "content_block_stop", "index": index})


@pytest.mark.parametrize(
    ("events", "stray"),
    [
        ([tool_input(3, '{"b": 2}'), stop(3)], 3),  # no block open
        ([text(0), tool_input(0, '{"b": 2}'), stop(0)], 0),  # into a text block
        ([tool_use(0, "t1", "f"), tool_input(0, '{"a": '), tool_input(5, '"junk"'),
          tool_input(0, "1}"), stop(0)], 5),  # while another call streams
    ],
    ids=["unstarted", "text-block", "beside-a-call"],
)  # fmt: skip
async def test_tool_input_for_a_block_never_started_as_a_call_is_one_clear_error(
    server: ReplayServer, events: list[str], stray: int
) -> None:
    """It used to end in "RuntimeError: tool_call_delta without an open tool call", or, beside
    an open call, to be spliced into that call's arguments (`{"a":"junk"1}`)."""
    server.enqueue(sse_reply([START, *events, *END]))
    model = Model(id="claude-x", provider="anthropic", api="anthropic-messages",
                  base_url=server.url)  # fmt: skip
    context = Context("", [UserMessage("hi")])
    options = StreamOptions(api_key="sk-ant-test-0123456789abcdef")
    message = await stream_anthropic_messages(model, context, options).result()
    assert message.stop_reason == "error"
    assert message.error_message == (
        f"ValueError: the server sent tool input (input_json_delta) for content block {stray}, "
        "which it did not start as a tool_use block"
    )
    assert all("junk" not in (c.partial_json or "") for c in message.tool_calls)
