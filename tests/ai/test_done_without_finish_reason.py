"""A stream that ends with `data: [DONE]` but never gave a finish reason (OpenCode Zen's
gateway for some models, Gemini proxies that send `finish_reason: null` throughout:
anomalyco/opencode#43882) is a whole answer: the server said it is done. It ended in
"the stream ended without a finish reason (cut off?)", so every turn failed. A stream
that closes without `[DONE]` and without a finish reason is still cut off. Through the
real `openai` SDK and an Agent, against `ReplayServer` on 127.0.0.1."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, strategies as st

from tests.ai.servers import ReplayServer, sse_reply
from yiemagent import Agent
from yiemagent.ai.providers._http_guard import DoneScanner
from yiemagent.ai.providers.openai_completions import stream_openai_completions
from yiemagent.tools import tool
from yiemagent.types.messages import UserMessage
from yiemagent.types.model import Context, Model, StreamOptions

pytestmark = pytest.mark.timeout(120)

KEY = "sk-test-0123456789abcdef"
BASE = {"id": "c", "object": "chat.completion.chunk", "created": 1, "model": "m"}


def chunk(delta: dict[str, Any], **extra: Any) -> str:
    choice = {"index": 0, "delta": delta, "finish_reason": None}
    return "data: " + json.dumps({**BASE, "choices": [choice], **extra})


def model(server: ReplayServer) -> Model:
    return Model(id="m", provider="vllm", api="openai-completions", base_url=server.url + "/v1")


async def answer(server: ReplayServer, events: list[str]) -> Any:
    server.enqueue(sse_reply(events))
    stream = stream_openai_completions(
        model(server), Context("", [UserMessage("hi")]), StreamOptions(api_key=KEY)
    )
    return await stream.result()


@pytest.mark.parametrize("done", ["data: [DONE]", "data:[DONE]"])
async def test_text_that_ends_with_done_and_no_finish_reason_is_the_answer(
    server: ReplayServer, done: str
) -> None:
    usage = {"prompt_tokens": 4, "completion_tokens": 2, "total_tokens": 6}
    events = [chunk({"content": "Hello"}), chunk({"content": " there"}, usage=usage), done]
    message = await answer(server, events)
    assert (message.stop_reason, message.error_message) == ("stop", None)
    assert message.text == "Hello there"
    assert message.usage.output == 2


@given(
    texts=st.lists(st.text(max_size=20), max_size=4),
    marked=st.booleans(),
    newline=st.sampled_from(["\n", "\r\n"]),
    data=st.data(),
)
def test_the_marker_is_seen_however_the_bytes_are_split(
    texts: list[str], marked: bool, newline: str, data: st.DataObject
) -> None:
    """The marker's bytes may arrive in several reads; a `[DONE]` inside an event's text
    (JSON keeps it on its line) is no marker."""
    events = [chunk({"content": text}) for text in [*texts, "data: [DONE]"]]
    if marked:
        events.append("data: [DONE]")
    raw = "".join(event + newline * 2 for event in events).encode()
    cuts = sorted(data.draw(st.lists(st.integers(0, len(raw)), max_size=6)))
    scanner = DoneScanner()
    for start, end in zip([0, *cuts], [*cuts, len(raw)], strict=True):
        scanner.feed(raw[start:end])
    scanner.close()
    assert scanner.seen == marked


async def test_a_stream_closed_without_done_or_finish_reason_is_still_cut_off(
    server: ReplayServer,
) -> None:
    message = await answer(server, [chunk({"content": "Hel"})])
    assert message.stop_reason == "error"
    assert message.error_message == "the stream ended without a finish reason (cut off?)"
    assert message.text == "Hel"


@tool
def add(a: int, b: int) -> int:
    """`a` plus `b`."""
    return a + b


async def test_an_agent_runs_a_call_that_ended_with_done_alone(
    server: ReplayServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("VLLM_API_KEY", KEY)
    call = {"index": 0, "id": "call_1", "type": "function"}
    call["function"] = {"name": "add", "arguments": '{"a": 2, "b": 3}'}
    server.enqueue(
        sse_reply([chunk({"tool_calls": [call]}), "data: [DONE]"]),
        sse_reply([chunk({"content": "5"}), "data: [DONE]"]),
    )
    agent = Agent("x", model=model(server), tools=[add])
    reply = await agent.prompt("2+3?")
    assert reply.text == "5"
    assert server.requests[1].body["messages"][-1]["content"] == "5"
