"""A stream kept alive by SSE comments is not idle (DESIGN §7, R-5.8): AntigmaLabs/ante #187
(an idle deadline that counts only usable output kills live streams). OpenRouter sends
`: OPENROUTER PROCESSING` comment lines while an upstream model thinks, and proxies send
their own; the SDKs drop comment lines, so the stream idle timeout counted only events and
ended a live answer with "The model stream sent nothing for N s". Every chunk of bytes now
counts; a stream that sends nothing at all still times out. Through an `Agent`, so both the
provider's and the loop's watchdogs are crossed."""

from __future__ import annotations

from typing import Any

import pytest

from tests.ai.servers import ReplayServer, Reply, load_sse, openai_chunks
from yiemagent import Agent, AgentRunError, Model

pytestmark = pytest.mark.timeout(60)

KEY = "sk-test-0123456789abcdefghij"
IDLE_S = 2.0
COMMENTS = [": OPENROUTER PROCESSING"] * 12
"""Sent 0.3 s apart: 3.6 s without an event, never 2 s without a byte."""


def agent_on(server: ReplayServer, api: str) -> Agent[Any]:
    if api == "openai":
        model = Model(id="m", provider="openrouter", api="openai-completions",
                      base_url=server.url + "/v1")  # fmt: skip
    else:
        model = Model(id="claude-test-1", provider="anthropic", api="anthropic-messages",
                      base_url=server.url, max_tokens=1024)  # fmt: skip
    return Agent(model=model, stream_idle_timeout_s=IDLE_S)


@pytest.fixture(autouse=True)
def keys(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENROUTER_API_KEY", KEY)
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)


def answer_events(api: str) -> list[str]:
    if api == "openai":
        return openai_chunks({"role": "assistant", "content": "Hello there."})
    return load_sse("anthropic_text.sse")


@pytest.mark.parametrize("api", ["openai", "anthropic"])
async def test_comment_lines_keep_a_thinking_stream_alive(server: ReplayServer, api: str) -> None:
    server.enqueue(Reply(events=[*COMMENTS, *answer_events(api)], delay_s=0.3))
    reply = await agent_on(server, api).prompt("think hard")
    assert reply.stop_reason == "stop", reply.error_message
    assert reply.text.startswith("Hello")
    assert len(server.requests) == 1  # not cut off, not asked again


async def test_a_stream_that_stops_sending_anything_still_times_out(
    server: ReplayServer,
) -> None:
    server.enqueue(Reply(events=COMMENTS[:2], delay_s=0.3, stall_s=3 * IDLE_S))
    with pytest.raises(AgentRunError, match=f"sent nothing for {IDLE_S:g} s"):
        await agent_on(server, "openai").prompt("think hard")
