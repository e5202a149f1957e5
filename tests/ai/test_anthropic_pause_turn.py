"""anthropic-messages and `stop_reason: "pause_turn"`: the API paused a long turn of its
server tools (web search, ...). Per Anthropic's "Handling stop reasons": send the assistant
content back as it is to continue the turn. The provider does so within the one model call,
so the loop gets one message for the whole turn; a turn paused again and again ends in
error instead of going on forever."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.ai.servers import ReplayServer, sse_reply
from tests.ai.test_anthropic_compat import KEY, claude, sse, text_blocks
from yiemagent.ai.providers.anthropic_messages import stream_anthropic_messages
from yiemagent.types.messages import TextContent, UserMessage
from yiemagent.types.model import Context, StreamOptions

pytestmark = pytest.mark.timeout(120)

SEARCH_RESULT = {
    "type": "web_search_tool_result",
    "tool_use_id": "srvtoolu_1",
    "content": [
        {
            "type": "web_search_result",
            "url": "https://example.com/q",
            "title": "Quantum news",
            "encrypted_content": "EqQBCioIARgBIiQ",
            "page_age": None,
        }
    ],
}


def paused_turn() -> list[tuple[str, dict[str, Any]]]:
    """Text, a server tool call streamed in pieces, its result, and text with a citation."""
    server_call = {
        "type": "server_tool_use",
        "id": "srvtoolu_1",
        "name": "web_search",
        "input": {},
    }
    citation = {
        "type": "web_search_result_location",
        "url": "https://example.com/q",
        "title": "Quantum news",
        "encrypted_index": "Eo8BCioIAhgB",
        "cited_text": "qubits",
    }

    def delta(index: int, data: dict[str, Any]) -> tuple[str, dict[str, Any]]:
        return ("content_block_delta", {"index": index, "delta": data})

    return [
        ("content_block_start", {"index": 0, "content_block": {"type": "text", "text": ""}}),
        delta(0, {"type": "text_delta", "text": "Let me "}),
        delta(0, {"type": "text_delta", "text": "search. "}),
        ("content_block_stop", {"index": 0}),
        ("content_block_start", {"index": 1, "content_block": server_call}),
        delta(1, {"type": "input_json_delta", "partial_json": '{"query": "qu'}),
        delta(1, {"type": "input_json_delta", "partial_json": 'antum"}'}),
        ("content_block_stop", {"index": 1}),
        ("content_block_start", {"index": 2, "content_block": SEARCH_RESULT}),
        ("content_block_stop", {"index": 2}),
        (
            "content_block_start",
            {"index": 3, "content_block": {"type": "text", "text": "", "citations": []}},
        ),
        delta(3, {"type": "citations_delta", "citation": citation}),
        delta(3, {"type": "text_delta", "text": "Qubits. "}),
        ("content_block_stop", {"index": 3}),
    ]


async def call(server: ReplayServer) -> Any:
    stream = stream_anthropic_messages(
        claude(server), Context("sys", [UserMessage("news?")]), StreamOptions(api_key=KEY)
    )
    return await stream.result()


async def test_a_paused_turn_is_continued_with_its_content_sent_back_as_is(
    server: ReplayServer,
) -> None:
    server.enqueue(sse_reply(sse(*paused_turn(), stop="pause_turn")))
    server.enqueue(
        sse_reply(
            sse(
                *text_blocks("All done."),
                start_usage={"input_tokens": 30, "output_tokens": 1},
                delta_usage={"output_tokens": 7},
            )
        )
    )

    message = await call(server)

    assert message.stop_reason == "stop", message.error_message
    assert message.text == "Let me search. Qubits. All done."
    assert all(isinstance(block, TextContent) for block in message.content)
    assert (message.usage.input, message.usage.output) == (40, 12)  # both requests
    first, second = (request.body for request in server.requests)
    assert second["messages"][:-1] == first["messages"]
    assert second["messages"][-1] == {
        "role": "assistant",
        "content": [
            {"type": "text", "text": "Let me search. "},
            {
                "type": "server_tool_use",
                "id": "srvtoolu_1",
                "name": "web_search",
                "input": {"query": "quantum"},
            },
            SEARCH_RESULT,
            {
                "type": "text",
                "text": "Qubits. ",
                "citations": [json.loads(json.dumps(paused_turn()[-3][1]["delta"]["citation"]))],
            },
        ],
    }
    assert {k: v for k, v in second.items() if k != "messages"} == {
        k: v for k, v in first.items() if k != "messages"
    }


async def test_a_turn_paused_twice_sends_back_both_responses_as_one_assistant_turn(
    server: ReplayServer,
) -> None:
    server.enqueue(sse_reply(sse(*text_blocks("one. "), stop="pause_turn")))
    server.enqueue(sse_reply(sse(*text_blocks("two. "), stop="pause_turn")))
    server.enqueue(sse_reply(sse(*text_blocks("three."))))

    message = await call(server)

    assert message.stop_reason == "stop" and message.text == "one. two. three."
    third = server.requests[2].body["messages"]
    assert third[-1] == {
        "role": "assistant",
        "content": [{"type": "text", "text": "one. "}, {"type": "text", "text": "two. "}],
    }
    assert third[-2]["role"] == "user"


async def test_a_turn_paused_again_and_again_ends_in_error(server: ReplayServer) -> None:
    for _ in range(30):
        server.enqueue(sse_reply(sse(*text_blocks("more. "), stop="pause_turn")))

    message = await call(server)

    assert message.stop_reason == "error"
    assert "pause_turn" in (message.error_message or "")
    assert 2 < len(server.requests) < 30
