"""A provider that refuses a call as longer than the model's context window (the compactor's
estimate ran low for its tokenizer) ends the run in error unless the context transform can
make its view smaller: a `Compactor` compacts further (its threshold drops to 3/4) and the
call is made once more, with one message_start and one message_end for the answer. Only
once per call: a second refusal ends the run with the provider's error (DESIGN §15). Through
the `openai` SDK against a server on 127.0.0.1."""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Iterator
from typing import Any

import pytest

from tests.ai.servers import ReplayServer, anthropic_events, json_reply, openai_chunks, sse_reply
from yiemagent import Agent, AgentRunError, AssistantMessage, TextContent, UserMessage
from yiemagent.ai import get_model, is_context_overflow
from yiemagent.compaction import Compactor
from yiemagent.types import AgentEvent, Model

pytestmark = pytest.mark.timeout(120)

TOO_LONG = json_reply(
    400,
    {
        "error": {
            "message": "This model's maximum context length is 4096 tokens. However, your "
            "messages resulted in 4420 tokens. Please reduce the length of the messages.",
            "type": "invalid_request_error",
            "param": "messages",
            "code": "context_length_exceeded",
        }
    },
)


def text_reply(text: str) -> Any:
    return sse_reply(openai_chunks({"role": "assistant", "content": text}))


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch) -> Iterator[ReplayServer]:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-0000")
    with ReplayServer() as replay:
        yield replay


def model(server: ReplayServer) -> Model:
    return dataclasses.replace(
        get_model("openai/gpt-4o-mini", base_url=server.url + "/v1"),
        context_window=4096,
        max_tokens=256,
    )


def history() -> list[Any]:
    """Eight earlier turns, about 2,700 estimated tokens: under the 3,072-token threshold."""
    turns: list[Any] = []
    for i in range(8):
        turns.append(UserMessage(f"question {i}: " + "tell me about wine " * 34))
        turns.append(AssistantMessage([TextContent(f"answer {i}: " + "rioja is red " * 50)]))
    return turns


def make_agent(server: ReplayServer, **kwargs: Any) -> tuple[Agent, list[AgentEvent]]:
    events: list[AgentEvent] = []
    agent = Agent(model=model(server), messages=history(), on_event=events.append, **kwargs)
    return agent, events


def sent_texts(server: ReplayServer, i: int) -> list[str]:
    return [str(m.get("content")) for m in server.requests[i].body["messages"]]


async def test_a_call_refused_as_too_long_is_compacted_and_made_once_more(
    server: ReplayServer,
) -> None:
    server.enqueue(TOO_LONG, text_reply("We talked about Rioja."), text_reply("Rioja."))
    compactor = Compactor(model(server), reserve_tokens=1024)
    assert compactor.threshold == 3072
    agent, events = make_agent(server, transform_context=compactor)

    reply = await agent.prompt("which wine again?")

    assert reply.text == "Rioja." and reply.stop_reason == "stop"
    assert len(server.requests) == 3  # refused, the summary, the call once more
    first, retried = sent_texts(server, 0), sent_texts(server, 2)
    assert len(retried) < len(first)
    assert any("We talked about Rioja." in text for text in retried)
    assert compactor.compactions == 1 and compactor.threshold == 3072 * 3 // 4
    ends = [e for e in events if e.type == "message_end" and e.message.role == "assistant"]
    starts = [e for e in events if e.type == "message_start" and e.message.role == "assistant"]
    assert (len(starts), len(ends)) == (1, 1) and ends[0].message is reply
    assert len(agent.state.messages) == 16 + 2  # the transcript is whole, no error in it
    assert not any(m.role == "assistant" and m.stop_reason == "error" for m in agent.state.messages)


async def test_a_second_refusal_ends_the_run_with_the_providers_error(
    server: ReplayServer,
) -> None:
    server.enqueue(TOO_LONG, text_reply("We talked about Rioja."), TOO_LONG, text_reply("no"))
    agent, _ = make_agent(server, transform_context=Compactor(model(server), reserve_tokens=1024))
    with pytest.raises(AgentRunError, match="maximum context length is 4096 tokens"):
        await agent.prompt("which wine again?")
    assert len(server.requests) == 3


async def test_without_a_compactor_the_refusal_ends_the_run(server: ReplayServer) -> None:
    server.enqueue(TOO_LONG, text_reply("no"))
    agent, _ = make_agent(server)
    with pytest.raises(AgentRunError, match="maximum context length is 4096 tokens"):
        await agent.prompt("which wine again?")
    assert len(server.requests) == 1


def failed(text: str, stop_reason: Any = "error") -> AssistantMessage:
    return AssistantMessage([], stop_reason=stop_reason, error_message=text)


@pytest.mark.parametrize(
    "text",
    [
        "HTTP 400 from the server: invalid_request_error: prompt is too long: 210000 tokens "
        "> 200000 maximum",
        "HTTP 400 from the server: This model's maximum context length is 4096 tokens.",
        "HTTP 400 from the server: the request exceeds the available context size, try "
        "increasing it",
        "context_length_exceeded: Your input exceeds the context window of this model.",
        "The input token count (1196265) exceeds the maximum number of tokens allowed",
        # Anthropic, when the prompt leaves less room than max_tokens
        "HTTP 400 from the server: invalid_request_error: input length and `max_tokens` "
        "exceed context limit: 178959 + 64000 > 200000, decrease input length or "
        "`max_tokens` and try again",
        # Ollama
        "HTTP 400 from the server: prompt too long; exceeded max context length by 17 tokens",
        # vLLM, older and newer
        "HTTP 400 from the server: The prompt (total length 25938) is too long to fit into "
        "the model (context length 4096).",
        "HTTP 400 from the server: The decoder prompt (length 5951) is longer than the "
        "maximum model length of 4096.",
        # Together AI
        "HTTP 400 from the server: Input (9000 tokens) is longer than the model's context "
        "length (8192 tokens).",
    ],
)
def test_the_apis_wordings_are_overflows(text: str) -> None:
    assert is_context_overflow(failed(text))


@pytest.mark.parametrize(
    ("text", "stop_reason"),
    [
        ("HTTP 429 from the server: rate limit reached", "error"),
        ("HTTP 400 from the server: max_tokens must be at least 1", "error"),
        ("This model's maximum context length is 4096 tokens.", "length"),
        ("", "error"),
    ],
)
def test_other_failures_are_not(text: str, stop_reason: Any) -> None:
    assert not is_context_overflow(failed(text, stop_reason))


async def test_anthropics_refusal_of_input_and_max_tokens_is_compacted_and_made_again(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Anthropic refuses a call whose prompt leaves less room than `max_tokens` in the
    window with words of its own ("input length and `max_tokens` exceed context limit"),
    not "prompt is too long": the run ended in that error instead of compacting."""
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test")
    refused = json_reply(
        400,
        {
            "type": "error",
            "error": {
                "type": "invalid_request_error",
                "message": "input length and `max_tokens` exceed context limit: 3900 + 256 "
                "> 4096, decrease input length or `max_tokens` and try again",
            },
        },
    )
    answer = sse_reply(anthropic_events({"type": "text", "text": "Rioja."}))
    summary = sse_reply(anthropic_events({"type": "text", "text": "We talked about Rioja."}))
    with ReplayServer() as server:
        server.enqueue(refused, summary, answer)
        claude = dataclasses.replace(
            get_model("anthropic/claude-sonnet-4-5", base_url=server.url),
            context_window=4096,
            max_tokens=256,
        )
        compactor = Compactor(claude, reserve_tokens=1024)
        agent = Agent(model=claude, messages=history(), transform_context=compactor)
        reply = await agent.prompt("which wine again?")
        sent = len(server.requests)
    assert (reply.text, reply.stop_reason, sent) == ("Rioja.", "stop", 3)
    assert compactor.compactions == 1


async def test_a_transform_of_its_own_taking_the_messages_alone_takes_part(
    server: ReplayServer,
) -> None:
    """Any `transform_context` with a `context_overflowed` method, also one that takes no
    signal (the loop wraps it), is asked, and its smaller view is what is sent again."""

    class KeepLast:
        def __init__(self) -> None:
            self.keep: int | None = None
            self.told: list[str] = []

        def __call__(self, messages: list[Any]) -> list[Any]:
            return messages if self.keep is None else messages[-self.keep :]

        def context_overflowed(self, error_message: str) -> bool:
            self.told.append(error_message)
            self.keep = 1
            return True

    server.enqueue(TOO_LONG, text_reply("Rioja."))
    transform = KeepLast()
    agent, _ = make_agent(server, transform_context=transform)
    assert (await agent.prompt("which wine again?")).text == "Rioja."
    assert len(transform.told) == 1 and "maximum context length" in transform.told[0]
    assert sent_texts(server, 1)[1:] == ["which wine again?"]  # after the system prompt


async def test_an_abort_while_the_smaller_view_is_made_ends_the_run_aborted(
    server: ReplayServer,
) -> None:
    """The transform run again is waited on as the first was: an abort meanwhile ends the
    call "aborted", even when the transform does not look at the signal."""

    class SlowToShrink:
        def __init__(self) -> None:
            self.shrunk = False

        async def __call__(self, messages: list[Any], signal: Any) -> list[Any]:
            if self.shrunk:
                await asyncio.sleep(30)  # ignores the abort
            return messages

        def context_overflowed(self, error_message: str) -> bool:
            self.shrunk = True
            return True

    server.enqueue(TOO_LONG, text_reply("never"))
    agent, _ = make_agent(server, transform_context=SlowToShrink())
    loop = asyncio.get_running_loop()
    loop.call_later(1.0, agent.abort)
    reply = await asyncio.wait_for(agent.prompt("which wine again?"), 20)
    assert reply.stop_reason == "aborted"
    assert len(server.requests) == 1
