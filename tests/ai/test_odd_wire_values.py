"""A server that streams a value of the wrong type (a number where the wire format has text,
`null`, a list), through the real SDKs from a local server (DESIGN §8): the call still ends
in an `AssistantMessage` whose fields are what their types say, so the run goes on and the
message is stored and loaded again unchanged. The SDKs pass a chunk's JSON through unchecked,
so a tool call's id or name arrived as the number or `null` the server sent."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any
from unittest import mock

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from tests.ai.servers import ReplayServer, Reply, json_reply, load_sse, openai_chunks, sse_reply
from tests.ai.test_openai_responses import a_call_with_reasoning
from yiemagent import Agent
from yiemagent.ai import get_model, stream
from yiemagent.sessions import SqliteSessionStore
from yiemagent.tools import tool
from yiemagent.types import (
    AssistantMessage,
    Context,
    Model,
    StreamOptions,
    ToolCall,
    UserMessage,
    message_from_dict,
    message_to_dict,
)

pytestmark = pytest.mark.timeout(300)

KEY = "sk-test-0123456789abcdefghij"

STREAMS = {
    "anthropic-messages": load_sse("anthropic_thinking_tool_use.sse"),
    "openai-responses": a_call_with_reasoning(),
    "openai-completions": load_sse("openai_parallel_tool_calls_interleaved.sse"),
}
"""A recorded answer with thinking, text and tool calls, on each wire format."""


def _model(api: str, server: ReplayServer) -> Model:
    if api == "anthropic-messages":
        return Model(id="claude-x", provider="anthropic", api=api, base_url=server.url)
    if api == "openai-responses":
        return get_model("openai-responses/gpt-5-mini", base_url=server.url + "/v1")
    return Model(id="m", provider="vllm", api=api, base_url=server.url + "/v1")


def _places(value: Any, at: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Every place below the top of a JSON value, as the keys and indexes leading to it."""
    found = [at] if at else []
    if isinstance(value, dict):
        for key, item in value.items():
            found += _places(item, (*at, key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            found += _places(item, (*at, index))
    return found


ODD = st.sampled_from([None, 7, -1, 1.5, True, "", "x", [], [1], {}, {"a": 1}])


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(api=st.sampled_from(sorted(STREAMS)), data=st.data())
def test_any_value_of_the_wrong_type_ends_in_a_message_that_stores(
    api: str, data: st.DataObject
) -> None:
    """One value of one streamed event replaced by a value of another type: the call ends
    (answer or error) in a message whose text, ids and names are text and which loads back
    from its JSON unchanged. A tool call's id or name came through as the int, bool, list
    or None the server sent: the run then failed in a TypeError, and a stored session
    skipped the message on resume."""
    events = list(STREAMS[api])
    datas = [i for i, event in enumerate(events) if str(event).split("data: ", 1)[-1][:1] == "{"]
    index = data.draw(st.sampled_from(datas))
    head, _, body = str(events[index]).partition("data: ")
    chunk = json.loads(body)
    place = data.draw(st.sampled_from(_places(chunk)))
    parent = chunk
    for step in place[:-1]:
        parent = parent[step]
    parent[place[-1]] = data.draw(ODD)
    events[index] = head + "data: " + json.dumps(chunk)

    async def scenario() -> AssistantMessage:
        with ReplayServer() as server:
            server.enqueue(*[sse_reply(events) for _ in range(4)])  # a retry gets the same
            options = StreamOptions(api_key=KEY, max_retry_delay_ms=50)
            answer = stream(_model(api, server), Context("", [UserMessage("hi")]), options)
            return await asyncio.wait_for(answer.result(), 60)

    with mock.patch("yiemagent.ai._retry.BASE_DELAY_MS", 1.0):  # a retry gets it again
        message = asyncio.run(scenario())
    for block in message.content:
        for name in ("text", "thinking", "id", "name"):
            assert isinstance(getattr(block, name, ""), str), (name, block)
        if isinstance(block, ToolCall):
            assert isinstance(block.arguments, dict)
    stored = message_to_dict(message)
    assert message_to_dict(message_from_dict(json.loads(json.dumps(stored)))) == stored


@tool
def echo(text: str) -> str:
    """Say `text` back."""
    return text


async def test_a_numeric_tool_call_id_runs_and_the_session_resumes_whole(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An OpenAI-compatible server that numbers its tool calls (`"id": 7`): the run ended
    in "TypeError: expected string or bytes-like object, got 'int'", and the stored
    assistant message did not load again (skipped on resume, its tool result orphaned)."""
    monkeypatch.setenv("VLLM_API_KEY", KEY)
    call = {"index": 0, "id": 7, "type": "function"}
    call["function"] = {"name": "echo", "arguments": '{"text": "hi"}'}
    with ReplayServer() as server:
        server.enqueue(
            sse_reply(openai_chunks({"tool_calls": [call]}, finish_reason="tool_calls")),
            sse_reply(openai_chunks({"content": "Said hi."})),
        )
        model = Model(id="m", provider="vllm", api="openai-completions", base_url=server.url)
        with SqliteSessionStore(tmp_path / "s.db") as store:
            agent = Agent("x", model=model, tools=[echo], session_store=store, session_id="s")
            answer = await agent.prompt("hi")
            assert answer.text == "Said hi."
            sent = server.requests[1].body["messages"]
            assert sent[-1] == {"role": "tool", "tool_call_id": "7", "content": "hi"}
        with SqliteSessionStore(tmp_path / "s.db") as store:
            loaded = store.load("s")
    assert [m.role for m in loaded] == ["user", "assistant", "toolResult", "assistant"]
    assert loaded[1].content[0] == ToolCall("7", "echo", {"text": "hi"})  # type: ignore[union-attr]


@pytest.mark.parametrize("api", sorted(STREAMS))
async def test_an_error_body_with_status_200_says_what_the_server_said(api: str) -> None:
    """A proxy that answers a stream request with 200 and a JSON error (a spent budget):
    the call said only "the server answered with one JSON body, not an event stream",
    and what the server said was lost."""
    said = "Budget has been exceeded! Current cost: 5.01, Max budget: 5.0"
    with ReplayServer() as server:
        server.enqueue(json_reply(200, {"error": {"message": said, "type": "budget_exceeded"}}))
        options = StreamOptions(api_key=KEY, max_retry_delay_ms=50)
        answer = stream(_model(api, server), Context("", [UserMessage("hi")]), options)
        message = await asyncio.wait_for(answer.result(), 60)
    assert message.stop_reason == "error"
    assert (message.error_message or "").endswith(f": {said}"), message.error_message


@pytest.mark.parametrize("api", sorted(STREAMS))
async def test_a_web_page_with_status_200_says_its_title(api: str) -> None:
    """A proxy that answers a stream request with 200 and an HTML page (a login page, a
    gateway error): the call ended "the stream ended without a finish reason (cut off?)",
    blaming the model and losing what the page said. Events sent under an HTML label are
    still read as events."""
    page = b"<html><head><title>Bad Gateway</title></head><body>nginx</body></html>"
    html = {"content-type": "text/html; charset=utf-8"}
    with ReplayServer() as server:
        server.enqueue(Reply(status=200, headers=html, body=page))
        events = b"".join(event.encode() + b"\n\n" for event in STREAMS[api])
        server.enqueue(Reply(status=200, headers=html, body=events))
        options = StreamOptions(api_key=KEY, max_retry_delay_ms=50)
        first = stream(_model(api, server), Context("", [UserMessage("hi")]), options)
        message = await asyncio.wait_for(first.result(), 60)
        assert message.stop_reason == "error"
        assert (message.error_message or "").endswith(
            "the server answered with a web page, not an event stream: Bad Gateway"
        ), message.error_message
        again = stream(_model(api, server), Context("", [UserMessage("hi")]), options)
        message = await asyncio.wait_for(again.result(), 60)
        assert message.stop_reason in ("stop", "toolUse"), message.error_message
