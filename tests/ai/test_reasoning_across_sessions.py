"""Reasoning kept across a stored session (DESIGN §21): Anthropic thinking and redacted
thinking with their signatures, and OpenAI Responses reasoning items with their
`encrypted_content`, go back to the model that wrote them byte for byte after the session
was written to SQLite and opened again by a new Agent; a model on another provider gets
the reasoning's text only (no signature, nothing redacted). Through the official SDKs
against replay servers on 127.0.0.1."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.ai.servers import ReplayServer, sse_reply
from tests.ai.test_openai_responses import REASONING_ITEM, a_call_with_reasoning, an_answer
from yiemagent import Agent, AgentTool
from yiemagent.ai import get_model
from yiemagent.sessions import SqliteSessionStore

pytestmark = pytest.mark.timeout(120)

THINKING = {
    "type": "thinking",
    "thinking": "I should check the weather.",
    "signature": "EqQBCgIYAhIM1gbcDa9GJwZA2b3hGgxBdjrkzLoky3dl1pkiMOYds",
}
REDACTED = {
    "type": "redacted_thinking",
    "data": "EmwKAhgBEgy3va3pzix/LafPsn4aDFIT2Xlxh0L5L8rLVyIwxtE3rAFBa8cr3qpP",
}


def weather_tools() -> list[AgentTool]:
    return [
        AgentTool(name, name, name, {"type": "object"}, lambda *_: "sunny, 18 C")
        for name in ("get_weather", "get_time")
    ]


def assistant_turns(body: dict[str, Any]) -> list[list[dict[str, Any]]]:
    return [m["content"] for m in body["messages"] if m["role"] == "assistant"]


@pytest.fixture(autouse=True)
def keys(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test-0123456789")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-0123456789abcdef")


async def test_claude_thinking_survives_sqlite_and_goes_to_another_provider_as_text(
    server: ReplayServer, tmp_path: Path
) -> None:
    server.enqueue(
        sse_reply("anthropic_thinking_tool_use.sse"),
        sse_reply("anthropic_text.sse"),
        sse_reply("anthropic_text.sse"),
        sse_reply(an_answer("Still sunny.")),
    )
    claude = get_model("anthropic/claude-sonnet-4-5", base_url=server.url)
    store = SqliteSessionStore(tmp_path / "sessions.db")
    first = Agent(model=claude, tools=weather_tools(), session_store=store, session_id="s")
    await first.prompt("Weather in San Francisco?")
    await first.close()

    reopened = SqliteSessionStore(tmp_path / "sessions.db")
    again = Agent(model=claude, tools=weather_tools(), session_store=reopened, session_id="s")
    await again.prompt("And now?")
    before, after = server.requests[1].body, server.requests[2].body
    assert assistant_turns(before)[0][:2] == [THINKING, REDACTED]
    # the reloaded session sends the same turn, byte for byte
    assert json.dumps(assistant_turns(after)[0]) == json.dumps(assistant_turns(before)[0])
    await again.close()

    gpt = get_model("openai-responses/gpt-5-mini", base_url=server.url + "/v1")
    other = Agent(model=gpt, tools=weather_tools(), session_store=reopened, session_id="s")
    assert (await other.prompt("Tomorrow?")).text == "Still sunny."
    sent = json.dumps(server.requests[3].body)
    assert THINKING["thinking"] in sent  # its text is kept, as assistant text
    assert THINKING["signature"] not in sent and REDACTED["data"] not in sent
    assert all(item.get("type") != "reasoning" for item in server.requests[3].body["input"])
    await other.close()


async def test_responses_reasoning_items_survive_sqlite_exactly(
    server: ReplayServer, tmp_path: Path
) -> None:
    server.enqueue(
        sse_reply(a_call_with_reasoning()),
        sse_reply(an_answer()),
        sse_reply(an_answer("Still noon.")),
        sse_reply("anthropic_text.sse"),
    )
    gpt = get_model("openai-responses/gpt-5-mini", base_url=server.url + "/v1")
    store = SqliteSessionStore(tmp_path / "sessions.db")
    first = Agent(model=gpt, tools=weather_tools(), session_store=store, session_id="r")
    await first.prompt("Time in Oslo?")
    await first.close()

    reopened = SqliteSessionStore(tmp_path / "sessions.db")
    again = Agent(model=gpt, tools=weather_tools(), session_store=reopened, session_id="r")
    assert (await again.prompt("And now?")).text == "Still noon."
    body = server.requests[2].body
    assert body["store"] is False
    assert "reasoning.encrypted_content" in body["include"]
    [reasoning] = [item for item in body["input"] if item.get("type") == "reasoning"]
    assert reasoning == REASONING_ITEM  # summary and encrypted content as received
    await again.close()

    claude = get_model("anthropic/claude-sonnet-4-5", base_url=server.url)
    other = Agent(model=claude, tools=weather_tools(), session_store=reopened, session_id="r")
    await other.prompt("Tomorrow?")
    sent = server.requests[3].body
    texts = [b.get("text") for turn in assistant_turns(sent) for b in turn]
    assert "The user wants Oslo's time." in texts
    assert REASONING_ITEM["encrypted_content"] not in json.dumps(sent)
    assert all(b["type"] != "thinking" for turn in assistant_turns(sent) for b in turn)
    await other.close()
