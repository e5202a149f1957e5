"""A handoff between agents on different providers (DESIGN §17, R-5.10), both real wire
formats against local replay servers: what the first model wrote (its thinking with a
provider signature, its transfer call) reaches the second in a form that provider takes."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.ai.servers import ReplayServer, Reply, load_sse, openai_chunks
from yiemagent import Agent, Handoff, Model

from ..approvals._kit import transcript_problems

pytestmark = pytest.mark.timeout(120)

SIGNATURE = "EqQBCgIYAhIM1gbcDa9GJwZA2b3hGgxBdjrkzLoky3dl1pkiMOYds"


def transfer_stream() -> list[str]:
    """Claude thinking (signed), then calling `transfer_to_target`."""
    events = load_sse("anthropic_thinking_tool_use.sse")
    return [
        event.replace('"get_weather"', '"transfer_to_target"')
        .replace('{\\"city\\": \\"San', '{\\"reason\\": \\"San')
        .replace(', \\"unit\\": \\"C\\"', "")
        for event in events
    ]


async def test_a_handoff_from_claude_to_an_openai_model_sends_what_openai_takes(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test-0123456789")
    with ReplayServer() as claude_server, ReplayServer() as openai_server:
        claude_server.enqueue(Reply(events=transfer_stream()))
        openai_server.enqueue(
            Reply(events=openai_chunks({"role": "assistant", "content": "Sunny, 18 C."})),
            Reply(events=openai_chunks({"role": "assistant", "content": "You're welcome."})),
        )
        claude = Model(
            id="claude-test-1",
            provider="anthropic",
            api="anthropic-messages",
            base_url=claude_server.url,
            reasoning=True,
            max_tokens=4096,
        )
        gpt = Model(
            id="m", provider="vllm", api="openai-completions", base_url=openai_server.url + "/v1"
        )
        target = Agent("You are target.", gpt, name="target")
        entry = Agent("You are entry.", claude, name="entry", handoffs=[Handoff(target)])

        reply = await entry.prompt("Weather in San Francisco?")
        again = await entry.prompt("Thanks!")

        bodies = [r.body for r in openai_server.requests]
    assert (reply.text, reply.agent) == ("Sunny, 18 C.", "target")
    assert (again.text, again.agent) == ("You're welcome.", "target")
    assert transcript_problems(entry.state.messages) == []
    for body in bodies:
        messages: list[dict[str, Any]] = body["messages"]
        assert SIGNATURE not in json.dumps(body)  # Anthropic's signature is Anthropic's
        [call_message] = [m for m in messages if m.get("tool_calls")]
        [call] = call_message["tool_calls"]
        assert call["function"]["name"] == "transfer_to_target"
        assert json.loads(call["function"]["arguments"]) == {"reason": "San Francisco"}
        results = [m for m in messages if m["role"] == "tool"]
        assert [r["tool_call_id"] for r in results] == [call["id"]]
        # the thinking of another provider's model is kept as its text, not dropped silently
        assert "I should check the weather." in json.dumps(call_message)
    assert [m["role"] for m in bodies[1]["messages"]][-2:] == ["assistant", "user"]
