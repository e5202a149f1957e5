"""The Messages API finds an earlier cache entry only within 20 blocks before a
breakpoint (DESIGN §21, Anthropic's prompt caching: "automatic prefix checking"). A turn
that adds more than 20 blocks (a batch of parallel tool calls and their results) left the
prefix the previous request cached out of reach, and the whole conversation was written to
the cache again, at 1.25 times the input price. Each request now marks again where the
previous one's latest turn ended (the fourth breakpoint): that prefix is read whatever the
turn added. Through an Agent and the `anthropic` SDK against a server on 127.0.0.1."""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from typing import Any

import pytest

from tests.ai.servers import ReplayServer, anthropic_events, sse_reply
from yiemagent import Agent, AgentTool
from yiemagent.ai import get_model

pytestmark = pytest.mark.timeout(120)

CALLS = 25


def many_calls() -> list[str]:
    """Claude calling `lookup` 25 times in one turn."""
    calls = [
        {"type": "tool_use", "id": f"toolu_{n:02d}", "name": "lookup", "input": {"n": n}}
        for n in range(CALLS)
    ]
    return anthropic_events(*calls, stop_reason="tool_use", output_tokens=9)


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
