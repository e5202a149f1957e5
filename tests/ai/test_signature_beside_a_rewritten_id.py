"""DESIGN R-5.10: a tool call whose id the transcript repair rewrites (an id the model used
before, one too long or with characters the API refuses) keeps its Gemini thought
signature. The rewritten call went back without it, and Gemini 3 refused the next
request: "Function call is missing a thought_signature in functionCall parts"."""

from __future__ import annotations

import json

import pytest

from tests.ai.servers import ReplayServer, openai_chunks, sse_reply
from yiemagent import Agent
from yiemagent.ai import Model
from yiemagent.tools import tool

pytestmark = pytest.mark.timeout(120)


@tool
def get_time(city: str) -> str:
    """The time in a city."""
    return f"12:00 in {city}"


def _signed_call(call_id: str, signature: str, city: str) -> list[str]:
    delta = {
        "role": "assistant",
        "tool_calls": [
            {
                "index": 0,
                "id": call_id,
                "type": "function",
                "function": {"name": "get_time", "arguments": json.dumps({"city": city})},
                "extra_content": {"google": {"thought_signature": signature}},
            }
        ],
    }
    return openai_chunks(delta, finish_reason="tool_calls")


@pytest.mark.parametrize(
    ("first", "second"),
    [("call_0", "call_0"), ("c1", "function-call." + "7" * 40)],
    ids=["id_used_again", "id_the_api_refuses"],
)
async def test_each_call_goes_back_with_its_signature(
    server: ReplayServer, first: str, second: str
) -> None:
    gemini = Model(
        id="gemini-3-flash", provider="google", api="openai-completions",
        base_url=server.url + "/v1",
    )  # fmt: skip
    server.enqueue(
        sse_reply(_signed_call(first, "U0lHMQ==", "Oslo")),
        sse_reply(_signed_call(second, "U0lHMg==", "Rome")),
        sse_reply(openai_chunks({"content": "Noon in both."})),
    )
    agent = Agent("x", model=gemini, tools=[get_time])
    answer = await agent.prompt("The time in Oslo, then in Rome?")
    assert answer.text == "Noon in both."
    sent = [
        call
        for message in server.requests[2].body["messages"]
        for call in message.get("tool_calls") or []
    ]
    assert [json.loads(call["function"]["arguments"])["city"] for call in sent] == [
        "Oslo",
        "Rome",
    ]
    assert [call.get("extra_content") for call in sent] == [
        {"google": {"thought_signature": "U0lHMQ=="}},
        {"google": {"thought_signature": "U0lHMg=="}},
    ]
    assert len({call["id"] for call in sent}) == 2


async def test_a_reasoning_detail_names_its_call_by_the_id_sent(server: ReplayServer) -> None:
    # Through OpenRouter the signature is an encrypted `reasoning_details` entry naming its
    # call; beside a rewritten id it named the id the model wrote, which no call had.
    long_id = "tool_0_get_time_" + "x" * 40
    detail = {"type": "reasoning.encrypted", "data": "U0lH", "id": long_id,
              "format": "google-gemini-v1", "index": 0}  # fmt: skip
    arguments = json.dumps({"city": "Oslo"})
    call = {"index": 0, "id": long_id, "type": "function",
            "function": {"name": "get_time", "arguments": arguments}}  # fmt: skip
    gemini = Model(
        id="google/gemini-3-flash", provider="openrouter", api="openai-completions",
        base_url=server.url + "/v1",
    )  # fmt: skip
    server.enqueue(
        sse_reply(
            openai_chunks(
                {"role": "assistant", "tool_calls": [call]},
                {"reasoning_details": [detail]},
                finish_reason="tool_calls",
            )
        ),
        sse_reply(openai_chunks({"content": "Noon."})),
    )
    agent = Agent("x", model=gemini, tools=[get_time])
    assert (await agent.prompt("The time in Oslo?")).text == "Noon."
    [assistant] = [m for m in server.requests[1].body["messages"] if m.get("tool_calls")]
    [sent_call] = assistant["tool_calls"]
    assert assistant["reasoning_details"] == [{**detail, "id": sent_call["id"]}]


async def test_vertex_ai_signatures_go_back_under_vertex(server: ReplayServer) -> None:
    # Vertex AI's OpenAI-compatible API puts the signature under `extra_content.vertex`, not
    # `google`: it was not read, the call went back without it, and the next request was
    # refused as missing a thought signature.
    delta = {
        "role": "assistant",
        "tool_calls": [
            {"index": 0, "id": "c1", "type": "function",
             "function": {"name": "get_time", "arguments": json.dumps({"city": "Oslo"})},
             "extra_content": {"vertex": {"thought_signature": "VlNJRw=="}}},
        ],
    }  # fmt: skip
    gemini = Model(
        id="google/gemini-3-flash", provider="vertex", api="openai-completions",
        base_url=server.url + "/v1",
    )  # fmt: skip
    server.enqueue(
        sse_reply(openai_chunks(delta, finish_reason="tool_calls")),
        sse_reply(openai_chunks({"content": "Noon."})),
    )
    agent = Agent("x", model=gemini, tools=[get_time])
    assert (await agent.prompt("The time in Oslo?")).text == "Noon."
    [assistant] = [m for m in server.requests[1].body["messages"] if m.get("tool_calls")]
    assert assistant["tool_calls"][0]["extra_content"] == {
        "vertex": {"thought_signature": "VlNJRw=="}
    }
    assert "reasoning_details" not in assistant
