"""The span cases pydantic-ai's tests/test_logfire.py checks, on our OpenTelemetry spans
(DESIGN §13, docs/observability.md): the run's span named after the agent, each chat
span's messages in the GenAI semantic conventions' parts (text, reasoning, tool_call,
tool_call_response) with its finish reason, a tool span's arguments and result, a failed
validation of a tool's or the output tool's arguments as an error span, and an argument
the repairs fixed as none."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import StatusCode
from pydantic import BaseModel

from yiemagent import (
    Agent,
    AgentContext,
    AgentLoopConfig,
    AgentTool,
    Usage,
    UserMessage,
    agent_loop,
)
from yiemagent.ai.providers.faux import FauxModel, faux_message, faux_thinking, faux_tool_call

pytestmark = pytest.mark.timeout(60)

WEATHER = AgentTool(
    "get_weather",
    "Weather",
    "The weather in a city",
    {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
    lambda *a: "sunny in Oslo",
)
COUNT = AgentTool(
    "count",
    "Count",
    "counts",
    {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]},
    lambda *a: "counted",
)


@pytest.fixture
def exporter() -> Iterator[tuple[TracerProvider, InMemorySpanExporter]]:
    provider = TracerProvider()
    memory = InMemorySpanExporter()
    provider.add_span_processor(SimpleSpanProcessor(memory))
    yield provider, memory
    provider.shutdown()


def named(spans: Any, prefix: str) -> list[ReadableSpan]:
    return [s for s in spans if s.name.startswith(prefix)]


async def test_the_runs_span_is_named_after_the_agent_or_the_library(
    exporter: tuple[TracerProvider, InMemorySpanExporter],
) -> None:
    provider, memory = exporter
    fm = FauxModel(["hi", "hi"])
    agent = Agent(
        model=fm.model, stream_fn=fm.stream_fn, tracer_provider=provider, name="weather_agent"
    )
    await agent.prompt("hello")
    loop = agent_loop(
        [UserMessage("hello")],
        AgentContext("", [], []),
        AgentLoopConfig(model=fm.model, tracer_provider=provider),
        stream_fn=fm.stream_fn,
    )
    await loop.result()

    runs = named(memory.get_finished_spans(), "invoke_agent")
    assert [s.name for s in runs] == ["invoke_agent weather_agent", "invoke_agent yiemagent"]
    assert runs[0].attributes is not None
    assert runs[0].attributes["gen_ai.agent.name"] == "weather_agent"


async def test_chat_spans_carry_the_conversation_in_semantic_convention_parts(
    exporter: tuple[TracerProvider, InMemorySpanExporter],
) -> None:
    provider, memory = exporter
    calling = faux_message(
        "let me look",
        faux_tool_call("get_weather", {"city": "Oslo"}, id="c1"),
        usage=Usage(input=10, output=5, total_tokens=15),
    )
    answering = faux_message(
        faux_thinking("it said sunny"), "sunny", usage=Usage(input=20, output=2, total_tokens=22)
    )
    fm = FauxModel([calling, answering])
    agent = Agent(
        "be brief",
        model=fm.model,
        stream_fn=fm.stream_fn,
        tools=[WEATHER],
        tracer_provider=provider,
        trace_content=True,
    )
    await agent.prompt("weather in Oslo?")

    spans = memory.get_finished_spans()
    first, second = named(spans, "chat")
    assert first.name == f"chat {fm.model.id}"
    attrs = dict(second.attributes or {})
    assert json.loads(str(attrs["gen_ai.system_instructions"])) == [
        {"type": "text", "content": "be brief"}
    ]
    sent = json.loads(str(attrs["gen_ai.input.messages"]))
    assert [m["role"] for m in sent] == ["user", "assistant", "tool"]
    assert sent[1]["parts"] == [
        {"type": "text", "content": "let me look"},
        {"type": "tool_call", "id": "c1", "name": "get_weather", "arguments": {"city": "Oslo"}},
    ]
    assert sent[2]["parts"] == [
        {"type": "tool_call_response", "id": "c1", "response": "sunny in Oslo"}
    ]
    out = json.loads(str(attrs["gen_ai.output.messages"]))
    assert out == [
        {
            "role": "assistant",
            "parts": [
                {"type": "reasoning", "content": "it said sunny"},
                {"type": "text", "content": "sunny"},
            ],
            "finish_reason": "stop",
        }
    ]
    first_attrs = dict(first.attributes or {})
    assert tuple(first_attrs["gen_ai.response.finish_reasons"]) == ("tool_call",)
    (run,) = named(spans, "invoke_agent")
    assert run.attributes is not None
    assert (
        run.attributes["gen_ai.usage.input_tokens"],
        run.attributes["gen_ai.usage.output_tokens"],
    ) == (30, 7)

    (tool_span,) = named(spans, "execute_tool")
    tool_attrs = dict(tool_span.attributes or {})
    assert json.loads(str(tool_attrs["gen_ai.tool.call.arguments"])) == {"city": "Oslo"}
    assert tool_attrs["gen_ai.tool.call.result"] == "sunny in Oslo"
    assert tool_attrs["gen_ai.tool.description"] == "The weather in a city"


class Reading(BaseModel):
    value: int


async def test_failed_argument_validation_is_an_error_span_and_a_repaired_one_is_not(
    exporter: tuple[TracerProvider, InMemorySpanExporter],
) -> None:
    provider, memory = exporter
    fm = FauxModel(
        [
            faux_message(
                faux_tool_call("count", {"n": "3"}, id="repaired"),
                faux_tool_call("count", {"n": "three"}, id="invalid"),
            ),
            faux_message(faux_tool_call("final_result", {"value": "x"}, id="bad_output")),
            faux_message(faux_tool_call("final_result", {"value": 2}, id="good_output")),
        ]
    )
    agent = Agent(
        model=fm.model,
        stream_fn=fm.stream_fn,
        tools=[COUNT],
        tracer_provider=provider,
        output_type=Reading,
    )
    reply = await agent.prompt("count")
    assert reply.output == Reading(value=2)

    by_id = {
        dict(s.attributes or {})["gen_ai.tool.call.id"]: s
        for s in named(memory.get_finished_spans(), "execute_tool")
    }
    assert by_id["repaired"].status.status_code == StatusCode.UNSET
    assert by_id["good_output"].status.status_code == StatusCode.UNSET
    for failed in ("invalid", "bad_output"):
        span = by_id[failed]
        assert span.status.status_code == StatusCode.ERROR
        assert span.attributes is not None
        assert span.attributes["error.type"] == "invalid_arguments"
