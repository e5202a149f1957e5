"""Prompt caching and compaction (DESIGN §21, §13): a summary request is sent once and
never again as it is, so it asks for no cache (Anthropic bills a cache write at 1.25 times
the input price, one hour's at twice it; nothing would ever read it), while the agent's
own requests around the compaction keep their breakpoints, at most 4. Through the
`anthropic` SDK against a server on 127.0.0.1."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from typing import Any

import pytest

from tests.ai.servers import ReplayServer, sse_reply
from yiemagent import Agent
from yiemagent.ai import get_model
from yiemagent.compaction import Compactor
from yiemagent.compaction._compactor import SUMMARY_SYSTEM_PROMPT

pytestmark = pytest.mark.timeout(120)


@pytest.fixture
def server() -> Iterator[ReplayServer]:
    with ReplayServer() as replay:
        yield replay


def marks(value: Any) -> list[dict[str, Any]]:
    """Every `cache_control` in a request body."""
    if isinstance(value, dict):
        found = [value["cache_control"]] if "cache_control" in value else []
        return found + [m for v in value.values() for m in marks(v)]
    if isinstance(value, list):
        return [m for v in value for m in marks(v)]
    return []


async def test_summaries_ask_for_no_cache_and_the_agent_keeps_its_marks(
    server: ReplayServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test-0123456789")
    claude = dataclasses.replace(
        get_model("anthropic/claude-sonnet-4-5", base_url=server.url),
        context_window=4096,
        max_tokens=256,
    )
    server.enqueue(*(sse_reply("anthropic_text.sse") for _ in range(12)))
    compactor = Compactor(claude)
    agent = Agent("Be brief.", claude, transform_context=compactor, cache_retention="long")
    for n in range(4):
        await agent.prompt(f"Part {n} of the story: " + "once upon a time " * 200)
    assert compactor.compactions >= 1
    summaries = [
        r.body for r in server.requests if r.body["system"][0]["text"] == SUMMARY_SYSTEM_PROMPT
    ]
    asked = [r.body for r in server.requests if r.body["system"][0]["text"] == "Be brief."]
    assert summaries and len(asked) == 4
    assert all(marks(body) == [] for body in summaries)
    for body in asked:  # the system prompt and the last two user turns (the first: one)
        user_turns = sum(1 for m in body["messages"] if m["role"] == "user")
        assert marks(body) == [{"type": "ephemeral", "ttl": "1h"}] * (1 + min(user_turns, 2))
    # the last request holds the summary, and still its marks
    first = asked[-1]["messages"][0]["content"]
    assert any("Hello there." in block.get("text", "") for block in first)
