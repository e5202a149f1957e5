"""Error spans of tool calls, as crewAI checks its own (tests/tools/
test_tool_usage_error_attribution.py: "`Tool Usage Error` spans must carry the tool name",
for a tool's own error and a usage limit's refusal alike): each failed call's
`execute_tool` span names its tool and says why it failed (`error.type`), and the why is
what the pipeline did, not what the error text happens to say. Before, the class was read
from the text: a refusal by a usage limit, a block with the hook's own reason and a
rejected approval read "tool_error", and a tool's own error that mentioned "timed out
after" read "timeout"."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import StatusCode

from yiemagent import Agent, AgentTool, BeforeToolCallResult, UsageLimits
from yiemagent.ai.providers.faux import FauxModel, faux_message, faux_tool_call

pytestmark = pytest.mark.timeout(60)

SCHEMA: dict[str, Any] = {"type": "object", "properties": {"n": {"type": "integer"}}}


@pytest.fixture
def memory() -> Iterator[tuple[TracerProvider, InMemorySpanExporter]]:
    provider = TracerProvider()
    exporter = InMemorySpanExporter()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    yield provider, exporter
    provider.shutdown()


def tool_spans(exporter: InMemorySpanExporter) -> list[tuple[str, Any, Any]]:
    """(tool name, error.type, status) of each execute_tool span, in the order they ended."""
    out = []
    for span in exporter.get_finished_spans():
        if span.name.startswith("execute_tool "):
            attributes = dict(span.attributes or {})
            assert span.name == f"execute_tool {attributes['gen_ai.tool.name']}"
            out.append((attributes["gen_ai.tool.name"], attributes.get("error.type"), span))
    return out


def raising(text: str) -> Any:
    def execute(call_id: str, args: Any, signal: Any, on_update: Any) -> str:
        raise RuntimeError(text)

    return execute


async def slow(call_id: str, args: Any, signal: Any, on_update: Any) -> str:
    await asyncio.sleep(5)
    return "late"


def agent_on(memory: Any, calls: list[Any], tools: list[AgentTool], **kwargs: Any) -> Agent[Any]:
    provider, _ = memory
    fm = FauxModel([faux_message(*calls), "done"])
    return Agent(
        model=fm.model,
        stream_fn=fm.stream_fn,
        tools=tools,
        tracer_provider=provider,
        tool_execution="sequential",
        **kwargs,
    )


async def test_each_failed_call_s_span_names_its_tool_and_what_the_pipeline_did(
    memory: tuple[TracerProvider, InMemorySpanExporter],
) -> None:
    def guard(ctx: Any, signal: Any) -> BeforeToolCallResult | None:
        if ctx.tool_call.name == "guarded":
            return BeforeToolCallResult(block=True, reason="guarded needs a manager")
        return None

    tools = [
        AgentTool("weather", "w", "d", SCHEMA, raising("the service timed out after 5 s")),
        AgentTool("lookup", "l", "d", SCHEMA, raising('Tool "lookup" not found in the index')),
        AgentTool("guarded", "g", "d", SCHEMA, lambda *a: "never"),
        AgentTool("slow", "s", "d", SCHEMA, slow, timeout_s=0.2),
        AgentTool("ok", "o", "d", SCHEMA, lambda *a: "fine"),
    ]
    calls = [
        faux_tool_call("weather", {}),
        faux_tool_call("lookup", {}),
        faux_tool_call("guarded", {}),
        faux_tool_call("ghost", {}),
        faux_tool_call("ok", {"n": "many"}),
        faux_tool_call("slow", {}),
        faux_tool_call("ok", {}),
    ]
    agent = agent_on(memory, calls, tools, before_tool_call=guard)
    await agent.prompt("go")

    seen = [(name, error) for name, error, _ in tool_spans(memory[1])]
    assert seen == [
        ("weather", "tool_error"),  # the tool's own words, not a time limit
        ("lookup", "tool_error"),  # nor an unknown tool
        ("guarded", "blocked"),  # the hook's own reason
        ("ghost", "tool_not_found"),
        ("ok", "invalid_arguments"),
        ("slow", "timeout"),
        ("ok", None),
    ]
    for name, error, span in tool_spans(memory[1]):
        expected = StatusCode.UNSET if error is None else StatusCode.ERROR
        assert span.status.status_code is expected, name


async def test_a_call_refused_by_a_usage_limit_says_so_on_its_span(
    memory: tuple[TracerProvider, InMemorySpanExporter],
) -> None:
    # crewAI test_sync_usage_limit_error_reports_the_tool_name
    tools = [AgentTool("ok", "o", "d", SCHEMA, lambda *a: "fine")]
    calls = [faux_tool_call("ok", {"n": n}) for n in range(3)]
    agent = agent_on(memory, calls, tools, usage_limits=UsageLimits(max_tool_calls=1))
    with pytest.raises(Exception, match="max_tool_calls=1"):
        await agent.prompt("go")

    seen = [(name, error) for name, error, _ in tool_spans(memory[1])]
    assert seen == [("ok", None), ("ok", "usage_limit"), ("ok", "usage_limit")]


async def test_a_rejected_call_says_so_on_its_span(
    memory: tuple[TracerProvider, InMemorySpanExporter],
) -> None:
    ran: list[str] = []
    tools = [
        AgentTool(
            "refund", "r", "d", SCHEMA, lambda *a: ran.append("refund") or "paid",
            requires_approval=True,
        )
    ]  # fmt: skip
    agent = agent_on(memory, [faux_tool_call("refund", {"n": 5}, id="c1")], tools)
    await agent.prompt("refund order 5")
    agent.reject("c1", "not today")
    await agent.resume()

    assert ran == []
    assert [(name, error) for name, error, _ in tool_spans(memory[1])][-1] == (
        "refund",
        "rejected",
    )
