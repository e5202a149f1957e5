"""Each agent of a team thinks at its own reasoning level (DESIGN §17, §21): after a
handoff the target's level, or none, goes with its calls, in that run and the next ones it
answers. Claude over the Anthropic wire format against replay servers on 127.0.0.1."""

from __future__ import annotations

import pytest

from tests.ai.servers import ReplayServer, Reply, sse_reply
from tests.teams.test_handoff_providers import transfer_stream
from yiemagent import Agent, Handoff, Model
from yiemagent.types import ThinkingLevel

pytestmark = pytest.mark.timeout(120)


def claude_at(server: ReplayServer) -> Model:
    # one model id on both servers: the entry's signed thinking goes back to the target
    return Model(
        id="claude-test-1",
        provider="anthropic",
        api="anthropic-messages",
        base_url=server.url,
        reasoning=True,
        max_tokens=64_000,
    )


@pytest.mark.parametrize(("level", "budget"), [("high", 16384), (None, None)])
async def test_the_target_of_a_handoff_thinks_at_its_own_level(
    monkeypatch: pytest.MonkeyPatch, level: ThinkingLevel | None, budget: int | None
) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test-0123456789")
    with ReplayServer() as entry_server, ReplayServer() as target_server:
        entry_server.enqueue(Reply(events=transfer_stream()))
        target_server.enqueue(sse_reply("anthropic_text.sse"), sse_reply("anthropic_text.sse"))
        target = Agent("You are target.", claude_at(target_server), name="target")
        target.state.reasoning = level
        entry = Agent(
            "You are entry.",
            claude_at(entry_server),
            name="entry",
            handoffs=[Handoff(target)],
            reasoning="low",
        )
        first = await entry.prompt("Weather in San Francisco?")
        again = await entry.prompt("Thanks!")  # the target answers from the start

    assert (first.agent, again.agent) == ("target", "target")
    assert entry_server.requests[0].body["thinking"]["budget_tokens"] == 2048
    for request in target_server.requests:
        thinking = request.body.get("thinking")
        assert (thinking and thinking["budget_tokens"]) == budget
