"""`FallbackModel` under an agent when its first model goes silent (DESIGN §13, R-5.8): a
server that takes the request and sends nothing is a provider failure like a refused
connection. With `stream_idle_timeout_s` set, the run does not end "sent nothing" while
the first model is silent: after that many seconds the next model is asked, the run's
events carry the `fallback` event (error type "timeout"), and the answer is the next
model's. When every model stays silent the run ends in error saying so, each model having
had its own silence limit, never a hang. Real local servers on 127.0.0.1."""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest

from tests.ai.servers import ReplayServer, Reply, openai_chunks, sse_reply
from yiemagent import Agent, AgentRunError, MessageUpdateEvent
from yiemagent.ai import FallbackEvent, FallbackModel
from yiemagent.types import Model

pytest.importorskip("openai")  # imported now: a first import mid-call is no silence

pytestmark = pytest.mark.timeout(120)

IDLE_S = 1.5
SILENT = Reply(events=openai_chunks({"content": "too late"}), wait_s=30)
"""A server that reads the request and answers only after the run has given up on it."""


def model_at(server: ReplayServer, id: str) -> Model:
    return Model(id=id, provider="vllm", api="openai-completions", base_url=server.url + "/v1")


@pytest.fixture
def servers() -> Iterator[tuple[ReplayServer, ReplayServer]]:
    with ReplayServer() as first, ReplayServer() as second:
        yield first, second


def agent_on(first: ReplayServer, second: ReplayServer) -> tuple[Agent, list[FallbackEvent]]:
    model = FallbackModel([model_at(first, "a"), model_at(second, "b")])
    agent = Agent(model=model, stream_idle_timeout_s=IDLE_S, max_retry_delay_ms=1)
    moved: list[FallbackEvent] = []

    def listen(event: object, _signal: object) -> None:
        if isinstance(event, MessageUpdateEvent) and isinstance(
            event.assistant_message_event, FallbackEvent
        ):
            moved.append(event.assistant_message_event)

    agent.subscribe(listen)
    return agent, moved


async def test_a_silent_first_model_hands_the_call_to_the_next(
    servers: tuple[ReplayServer, ReplayServer],
) -> None:
    first, second = servers
    first.enqueue(SILENT)
    second.enqueue(sse_reply(openai_chunks({"content": "from b"})))
    agent, moved = agent_on(first, second)
    started = time.monotonic()
    reply = await agent.prompt("hi")
    assert (reply.stop_reason, reply.text, reply.model) == ("stop", "from b", "b")
    assert time.monotonic() - started >= IDLE_S  # a waited its silence limit out
    [fallback] = moved
    assert (fallback.failed_model, fallback.error_type) == ("a", "timeout")
    assert f"{IDLE_S:g} s" in fallback.error_message


async def test_when_every_model_is_silent_the_run_ends_saying_so(
    servers: tuple[ReplayServer, ReplayServer],
) -> None:
    first, second = servers
    first.enqueue(SILENT)
    second.enqueue(SILENT)
    agent, moved = agent_on(first, second)
    started = time.monotonic()
    with pytest.raises(AgentRunError, match=f"sent nothing for {IDLE_S:g} s"):
        await agent.prompt("hi")
    assert time.monotonic() - started >= 2 * IDLE_S  # each model had its own limit
    assert [m.failed_model for m in moved] == ["a"]


async def test_a_model_that_keeps_the_stream_alive_is_not_silent(
    servers: tuple[ReplayServer, ReplayServer],
) -> None:
    """SSE comment lines (OpenRouter's `: OPENROUTER PROCESSING` while a model thinks) are
    no event but are life: the first model, sending one every 0.3 s for longer than the
    silence limit, answers, and the next model is never asked."""
    first, second = servers
    comments = [": OPENROUTER PROCESSING"] * 10
    answer = openai_chunks({"role": "assistant", "content": "from a"})
    first.enqueue(Reply(events=[*comments, *answer], delay_s=0.3))
    agent, moved = agent_on(first, second)
    reply = await agent.prompt("think hard")
    assert (reply.stop_reason, reply.text, reply.model) == ("stop", "from a", "a")
    assert moved == [] and second.requests == []
