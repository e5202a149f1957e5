"""A reasoning model thinking out of sight is not an idle stream (R-5.8).

OpenAI's reasoning models on Chat Completions send their response headers and then nothing
until the reasoning is done (litellm#36992 measured 79 s before the first chunk); on the
Responses API without reasoning summaries a reasoning item opens and nothing follows until
it ends. The idle limit ended such a call in error after the reasoning was billed. A call
that reasons now has `stream_reasoning_timeout_s` for its silence while it has shown only
reasoning; between output chunks the idle limit holds as before.

The server is a Starlette app on 127.0.0.1 that sends its headers at once and then waits
before chosen events, as OpenAI does. Through an `Agent`, so both the provider's and the
loop's watchdogs are crossed; the silences are three times the idle limit."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import StreamingResponse
from starlette.routing import Route

from tests.ai.servers import free_port, openai_chunks
from tests.ai.test_attachments import responses_done, responses_sse
from tests.serve._kit import serving
from yiemagent import Agent, AgentRunError, ConfigError, Model

pytestmark = pytest.mark.timeout(90)

IDLE_S = 1.5
SILENCE_S = 3 * IDLE_S
REASONING_S = 30.0


@dataclass
class Script:
    """One streamed answer: its SSE events, with `pauses[i]` seconds of silence before
    event i; the headers go first, after `headers_after_s`."""

    events: list[str]
    pauses: dict[int, float] = field(default_factory=dict)
    headers_after_s: float = 0.0


@dataclass
class FakeOpenAI:
    """Answers each POST with the next `Script`; `requests` counts them."""

    scripts: list[Script] = field(default_factory=list)
    requests: int = 0

    async def answer(self, request: Request) -> StreamingResponse:
        await request.body()
        self.requests += 1
        script = self.scripts.pop(0)
        await asyncio.sleep(script.headers_after_s)

        async def body() -> AsyncIterator[bytes]:
            for index, event in enumerate(script.events):
                await asyncio.sleep(script.pauses.get(index, 0.0))
                yield (event + "\n\n").encode()

        return StreamingResponse(body(), media_type="text/event-stream")

    def app(self) -> Starlette:
        paths = ("/v1/chat/completions", "/v1/responses")
        return Starlette(routes=[Route(p, self.answer, methods=["POST"]) for p in paths])


@pytest.fixture
def fake() -> Iterator[tuple[FakeOpenAI, str]]:
    server = FakeOpenAI()
    with serving(server.app()) as url:
        yield server, url + "/v1"


@pytest.fixture(autouse=True)
def key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-0123456789abcdefghij")


def agent(
    base_url: str, *, thinks: bool, api: str = "openai-completions", **options: Any
) -> Agent[Any]:
    """An Agent on the fake server's model; `thinks`: the model is marked as reasoning."""
    model = Model(id="gpt-5-mini", provider="openai", api=api, base_url=base_url,
                  reasoning=thinks)  # fmt: skip
    options.setdefault("stream_reasoning_timeout_s", REASONING_S)
    return Agent(model=model, stream_idle_timeout_s=IDLE_S, **options)


def completion(*texts: str) -> list[str]:
    return openai_chunks({"role": "assistant", "content": ""}, *({"content": t} for t in texts))


def responses_answer(text: str) -> list[str]:
    """A Responses stream: created, a reasoning item with no summary, its end, then a
    message with `text`; event 2 is where the model reasons out of sight."""
    reasoning = {"type": "reasoning", "id": "rs_1", "summary": [], "encrypted_content": "gAAA=="}
    message = {"type": "message", "id": "msg_1", "role": "assistant", "status": "in_progress",
               "content": []}  # fmt: skip
    return responses_sse(
        {"type": "response.created", "response": {"id": "resp_1", "status": "in_progress"}},
        {"type": "response.output_item.added", "output_index": 0, "item": reasoning},
        {"type": "response.output_item.done", "output_index": 0, "item": reasoning},
        {"type": "response.output_item.added", "output_index": 1, "item": message},
        {
            "type": "response.output_text.delta",
            "item_id": "msg_1",
            "output_index": 1,
            "content_index": 0,
            "delta": text,
        },
        responses_done(),
    )


async def test_a_reasoning_model_may_be_silent_before_its_first_chunk(
    fake: tuple[FakeOpenAI, str],
) -> None:
    server, url = fake
    server.scripts.append(Script(completion("Forty-two."), pauses={0: SILENCE_S}))
    reply = await agent(url, thinks=True).prompt("think hard")
    assert reply.stop_reason == "stop", reply.error_message
    assert reply.text == "Forty-two."
    assert server.requests == 1


async def test_a_reasoning_model_may_hold_back_its_response_headers(
    fake: tuple[FakeOpenAI, str],
) -> None:
    server, url = fake
    server.scripts.append(Script(completion("Held."), headers_after_s=SILENCE_S))
    reply = await agent(url, thinks=True).prompt("think hard")
    assert reply.stop_reason == "stop", reply.error_message
    assert reply.text == "Held."


async def test_a_reasoning_item_without_summary_may_be_silent_on_the_responses_api(
    fake: tuple[FakeOpenAI, str],
) -> None:
    server, url = fake
    server.scripts.append(Script(responses_answer("Done."), pauses={2: SILENCE_S}))
    reply = await agent(url, thinks=True, api="openai-responses").prompt("think hard")
    assert reply.stop_reason == "stop", reply.error_message
    assert reply.text == "Done."
    assert server.requests == 1


@pytest.mark.filterwarnings("ignore:reasoning is ignored")
@pytest.mark.parametrize("level", [None, "high"])
async def test_a_model_that_does_not_reason_keeps_the_idle_limit(
    fake: tuple[FakeOpenAI, str], level: str | None
) -> None:
    """A reasoning level asks no thinking of a model not marked as reasoning (the Agent
    warns so), so its call gets no longer wait either."""
    server, url = fake
    server.scripts.append(Script(completion("Late."), pauses={0: SILENCE_S}))
    with pytest.raises(AgentRunError, match=f"sent nothing for {IDLE_S:g} s"):
        await agent(url, thinks=False, reasoning=level).prompt("hello")


async def test_once_the_answer_streams_the_idle_limit_holds_between_chunks(
    fake: tuple[FakeOpenAI, str],
) -> None:
    server, url = fake
    server.scripts.append(Script(completion("Half", " stalled."), pauses={2: SILENCE_S}))
    with pytest.raises(AgentRunError, match=f"sent nothing for {IDLE_S:g} s"):
        await agent(url, thinks=True).prompt("think hard")


async def test_reasoning_longer_than_its_limit_still_ends_in_error(
    fake: tuple[FakeOpenAI, str],
) -> None:
    server, url = fake
    server.scripts.append(Script(completion("Too late."), pauses={0: 3 * 2.0}))
    with pytest.raises(AgentRunError, match="sent nothing for 2 s"):
        await agent(url, thinks=True, stream_reasoning_timeout_s=2.0).prompt("think")


def test_the_reasoning_limit_is_checked_like_the_idle_limit() -> None:
    with pytest.raises(ConfigError, match="stream_reasoning_timeout_s must be > 0 seconds"):
        Agent(model=Model(id="m", provider="openai", api="openai-completions"),
              stream_reasoning_timeout_s=-1)  # fmt: skip


def fallback_agent(models: list[tuple[str, bool]], **options: Any) -> Agent[Any]:
    """An Agent on a fallback chain of (base URL, marked as reasoning) models."""
    chain = [Model(id=f"gpt-5-{i}", provider="openai", api="openai-completions", base_url=url,
                   reasoning=thinks) for i, (url, thinks) in enumerate(models)]  # fmt: skip
    options.setdefault("stream_reasoning_timeout_s", REASONING_S)
    return Agent(model=chain, stream_idle_timeout_s=IDLE_S, max_retry_delay_ms=1, **options)


def dead_url() -> str:
    return f"http://127.0.0.1:{free_port()}/v1"  # nothing listens there


@pytest.mark.filterwarnings("error:reasoning is ignored")  # untrue: the second model thinks
async def test_a_fallback_to_a_reasoning_model_may_think_out_of_sight(
    fake: tuple[FakeOpenAI, str],
) -> None:
    """The chain's first model cannot think; the second, reached when the first is down,
    can: its silence before its first chunk is reasoning, not an idle stream."""
    server, url = fake
    server.scripts.append(Script(completion("Second thoughts."), pauses={0: SILENCE_S}))
    chain = fallback_agent([(dead_url(), False), (url, True)], reasoning="high")
    reply = await chain.prompt("think hard")
    assert reply.stop_reason == "stop", reply.error_message
    assert reply.text == "Second thoughts." and reply.model == "gpt-5-1"
    assert chain.state.model.reasoning


async def test_a_fallback_to_a_model_that_does_not_reason_keeps_the_idle_limit(
    fake: tuple[FakeOpenAI, str],
) -> None:
    """A chain that may reason waits out silence only for the model that can think: the
    answering model's own limit holds."""
    server, url = fake
    server.scripts.append(Script(completion("Late."), pauses={0: SILENCE_S}))
    with pytest.raises(AgentRunError, match=f"sent nothing for {IDLE_S:g} s"):
        await fallback_agent([(dead_url(), True), (url, False)]).prompt("hello")


def test_a_chain_without_a_reasoning_model_does_not_reason() -> None:
    chain = fallback_agent([(dead_url(), False), (dead_url(), False)])
    assert not chain.state.model.reasoning
