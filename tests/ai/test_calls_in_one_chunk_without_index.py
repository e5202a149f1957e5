"""Gemini's OpenAI-compatible endpoint sends parallel tool calls whole, all in one chunk,
without `index` and with `id` empty or missing (the Gemini forum's "OpenAI compatibility
with NodeJS" thread: "The tool_calls is missing an index and does not have a valid id";
Vertex AI's gives each call its function's name as id). Each delta after the first was
taken for more of the first call: its arguments were dropped as a stray object and two
names ran together ("addmul"), so one call of two ran. A named delta that starts a new
object after a call's arguments are whole is the next call. Through the real `openai`
SDK against `ReplayServer` on 127.0.0.1, and through an Agent that runs both calls."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.ai.servers import ReplayServer, openai_chunks, sse_reply
from yiemagent import Agent
from yiemagent.ai.providers.openai_completions import stream_openai_completions
from yiemagent.tools import tool
from yiemagent.types.messages import UserMessage
from yiemagent.types.model import Context, Model, StreamOptions

pytestmark = pytest.mark.timeout(120)

KEY = "gemini-key-0123456789"
BASE = {"id": "c", "object": "chat.completion.chunk", "created": 1, "model": "gemini-2.5-flash"}


def call(name: str, arguments: dict[str, Any], **wire: Any) -> dict[str, Any]:
    return {
        "type": "function",
        "function": {"name": name, "arguments": json.dumps(arguments)},
        **wire,
    }


def one_chunk(calls: list[dict[str, Any]], finish_reason: str = "stop") -> list[str]:
    """Gemini's stream: every call in the one chunk that also ends the answer."""
    choice = {"index": 0, "delta": {"role": "assistant", "tool_calls": calls}}
    usage = {"prompt_tokens": 9, "completion_tokens": 4, "total_tokens": 13}
    data = {**BASE, "choices": [{**choice, "finish_reason": finish_reason}], "usage": usage}
    return ["data: " + json.dumps(data), "data: [DONE]"]


def gemini(server: ReplayServer) -> Model:
    return Model(
        id="gemini-2.5-flash",
        provider="google",
        api="openai-completions",
        base_url=server.url + "/v1beta/openai",
    )


CASES = {
    "ids empty": [call("add", {"a": 1}, id=""), call("add", {"a": 2}, id="")],
    "no ids": [call("add", {"a": 1}), call("mul", {"a": 2})],
    "the name as id (Vertex AI)": [
        call("add", {"a": 1}, id="add"),
        call("add", {"a": 2}, id="add"),
    ],
    "index 0 for each": [
        call("add", {"a": 1}, index=0, id=""),
        call("mul", {"a": 2}, index=0, id=""),
    ],
    "three": [call("add", {"a": 1}), call("mul", {"a": 2}), call("add", {"a": 3})],
}


@pytest.mark.parametrize("case", sorted(CASES))
async def test_every_call_of_the_chunk_is_a_call(server: ReplayServer, case: str) -> None:
    calls = CASES[case]
    server.enqueue(sse_reply(one_chunk(calls)))
    stream = stream_openai_completions(
        gemini(server), Context("", [UserMessage("hi")]), StreamOptions(api_key=KEY)
    )
    message = await stream.result()
    assert (message.stop_reason, message.error_message) == ("toolUse", None)
    expected = [(c["function"]["name"], json.loads(c["function"]["arguments"])) for c in calls]
    assert [(c.name, c.arguments) for c in message.tool_calls] == expected


async def test_arguments_resent_whole_with_the_name_stay_one_call(server: ReplayServer) -> None:
    """Mistral and GLM send the whole object once more at the end, some with the name: the
    same call, not a second one."""
    pieces = [
        {
            "tool_calls": [
                {"index": 0, "id": "abcdefghi", "function": {"name": "add", "arguments": '{"a": '}}
            ]
        },
        {"tool_calls": [{"index": 0, "function": {"arguments": "1}"}}]},
        {"tool_calls": [{"index": 0, "function": {"name": "add", "arguments": '{"a":1}'}}]},
    ]
    server.enqueue(sse_reply(openai_chunks(*pieces, finish_reason="tool_calls")))
    stream = stream_openai_completions(
        gemini(server), Context("", [UserMessage("hi")]), StreamOptions(api_key=KEY)
    )
    message = await stream.result()
    assert [(c.name, c.arguments) for c in message.tool_calls] == [("add", {"a": 1})]


@tool
def add(a: int, b: int) -> int:
    """`a` plus `b`."""
    return a + b


async def test_an_agent_runs_both_calls_and_sends_each_result_back(
    server: ReplayServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GOOGLE_API_KEY", KEY)
    server.enqueue(
        sse_reply(
            one_chunk([call("add", {"a": 1, "b": 2}, id=""), call("add", {"a": 3, "b": 4}, id="")])
        ),
        sse_reply(openai_chunks({"content": "3 and 7"})),
    )
    agent = Agent("x", model=gemini(server), tools=[add])
    reply = await agent.prompt("1+2 and 3+4?")
    assert reply.text == "3 and 7"
    sent = server.requests[1].body["messages"]
    ids = [c["id"] for c in sent[2]["tool_calls"]]
    assert len(set(ids)) == 2 and all(ids)
    assert [(m["tool_call_id"], m["content"]) for m in sent[3:]] == [(ids[0], "3"), (ids[1], "7")]
