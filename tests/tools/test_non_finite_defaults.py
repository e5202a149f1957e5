"""A `@tool` parameter whose default is no JSON number (`math.inf`, `nan`): the schema a
provider receives is strict JSON (DESIGN R-4.3), so such a default is left out of it and
the function keeps its own."""

from __future__ import annotations

import json
import math

from tests.ai.servers import ReplayServer, Reply, openai_chunks
from yiemagent import Agent, Model, ToolResultMessage, tool
from yiemagent.types import text_of


@tool
def clamp(x: float, upper: float = math.inf, lower: float = -math.inf) -> str:
    """Clamp x between the bounds.

    Args:
        x: the value
        upper: the upper bound, none by default
        lower: the lower bound, none by default
    """
    return f"{min(max(x, lower), upper)} (bounds {lower}, {upper})"


@tool
def mean(values: list[float], fallback: float = math.nan) -> str:
    """The mean of the values, the fallback when there are none."""
    return str(sum(values) / len(values) if values else fallback)


def test_a_non_finite_default_is_left_out_of_the_schema() -> None:
    upper = clamp.input_schema["properties"]["upper"]
    assert "default" not in upper and upper["description"] == "the upper bound, none by default"
    assert "default" not in clamp.input_schema["properties"]["lower"]
    assert "default" not in mean.input_schema["properties"]["fallback"]
    assert clamp.input_schema["required"] == ["x"]
    json.dumps(clamp.input_schema, allow_nan=False)  # strict JSON: no Infinity, no NaN


async def test_a_tool_with_an_infinite_default_is_offered_and_called_over_http() -> None:
    call = {
        "index": 0,
        "id": "call_1",
        "type": "function",
        "function": {"name": "clamp", "arguments": '{"x": 2.5, "lower": 3}'},
    }
    with ReplayServer() as server:
        server.enqueue(
            Reply(
                events=openai_chunks(
                    {"role": "assistant", "tool_calls": [call]}, finish_reason="tool_calls"
                )
            ),
            Reply(events=openai_chunks({"role": "assistant", "content": "3"})),
        )
        model = Model(
            id="m", provider="vllm", api="openai-completions", base_url=server.url + "/v1"
        )
        agent = Agent(model=model, tools=[clamp, mean])
        answer = await agent.prompt("clamp 2.5 to at least 3")
        sent = [request.body for request in server.requests]
    assert [block.text for block in answer.content if block.type == "text"] == ["3"]
    (result,) = [m for m in agent.state.messages if isinstance(m, ToolResultMessage)]
    assert (result.is_error, text_of(result.content)) == (False, "3.0 (bounds 3.0, inf)")
    offered = {t["function"]["name"]: t["function"]["parameters"] for t in sent[0]["tools"]}
    assert "default" not in offered["clamp"]["properties"]["upper"]
    assert "default" not in offered["mean"]["properties"]["fallback"]
