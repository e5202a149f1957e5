"""The Messages API finds an earlier cache entry only within 20 blocks before a
breakpoint (DESIGN §21, Anthropic's prompt caching: "automatic prefix checking"). A turn
that adds more than 20 blocks (a batch of parallel tool calls and their results) left the
prefix the previous request cached out of reach, and the whole conversation was written to
the cache again, at 1.25 times the input price. Each request now marks again where the
previous one's latest turn ended (the fourth breakpoint): that prefix is read whatever the
turn added. Through an Agent and the `anthropic` SDK against a server on 127.0.0.1."""

from __future__ import annotations

import itertools
import json
from collections.abc import Iterator
from typing import Any

import pytest

from tests.ai.servers import ReplayServer, sse_reply
from yiemagent import Agent, AgentTool
from yiemagent.ai import get_model

pytestmark = pytest.mark.timeout(120)

CALLS = 25


def many_calls() -> list[str]:
    """Claude calling `lookup` 25 times in one turn."""
    events: list[dict[str, Any]] = [
        {
            "type": "message_start",
            "message": {
                "id": "msg_1",
                "type": "message",
                "role": "assistant",
                "model": "claude-sonnet-4-5",
                "content": [],
                "stop_reason": None,
                "usage": {"input_tokens": 10, "output_tokens": 1},
            },
        }
    ]
    for n in range(CALLS):
        block = {"type": "tool_use", "id": f"toolu_{n:02d}", "name": "lookup", "input": {}}
        events += [
            {"type": "content_block_start", "index": n, "content_block": block},
            {
                "type": "content_block_delta",
                "index": n,
                "delta": {"type": "input_json_delta", "partial_json": json.dumps({"n": n})},
            },
            {"type": "content_block_stop", "index": n},
        ]
    events += [
        {
            "type": "message_delta",
            "delta": {"stop_reason": "tool_use"},
            "usage": {"output_tokens": 9},
        },
        {"type": "message_stop"},
    ]
    return [f"event: {e['type']}\ndata: {json.dumps(e)}" for e in events]


def marked(body: dict[str, Any]) -> list[tuple[int, int]]:
    """Where the request's message breakpoints are: (message, block) positions."""
    return [
        (m, b)
        for m, message in enumerate(body["messages"])
        for b, block in enumerate(message["content"])
        if "cache_control" in block
    ]


@pytest.fixture
def server() -> Iterator[ReplayServer]:
    with ReplayServer() as replay:
        yield replay


async def test_each_request_marks_again_where_the_previous_one_ended(
    server: ReplayServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test-0123456789")
    server.enqueue(
        sse_reply(many_calls()),
        sse_reply("anthropic_text.sse"),
        sse_reply("anthropic_text.sse"),
    )
    lookup = AgentTool("lookup", "lookup", "Looks up.", {"type": "object"}, lambda *_: "found")
    claude = get_model("anthropic/claude-sonnet-4-5", base_url=server.url)
    agent = Agent("Be brief.", claude, tools=[lookup])
    await agent.prompt("Look up all of them")
    await agent.prompt("And now?")
    bodies = [request.body for request in server.requests]
    # the results of 25 calls: more blocks than the API looks back over
    assert len(bodies[1]["messages"][-1]["content"]) == CALLS
    for before, after in itertools.pairwise(bodies):
        latest = marked(before)[-1]
        assert latest in marked(after), (latest, marked(after))
    for body in bodies:
        count = len(marked(body)) + len(body.get("system", [])) + 1  # + the last tool's
        assert count <= 4
