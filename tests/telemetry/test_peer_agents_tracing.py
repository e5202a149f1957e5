"""openai-agents' tracing cases (its tests/test_agent_tracing.py and
test_tracing_errors.py) on our OpenTelemetry spans (DESIGN §13): one trace per run, the
run's span carrying its summed usage and ending after a slow input guardrail, and a run
stopped by its turn limit marked so."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from typing import Any

import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import StatusCode

from yiemagent import Agent, AgentTool, GuardrailContext
from yiemagent.ai.providers.faux import FauxModel, faux_message, faux_tool_call
from yiemagent.types import AssistantMessage, Usage

pytestmark = pytest.mark.timeout(60)


@pytest.fixture
def exporter() -> Iterator[tuple[TracerProvider, InMemorySpanExporter]]:
    provider = TracerProvider()
    memory = InMemorySpanExporter()
    provider.add_span_processor(SimpleSpanProcessor(memory))
    yield provider, memory
    provider.shutdown()


async def _fine(call_id: str, args: Any, signal: Any, on_update: Any) -> str:
    return "fine"


TOOL = AgentTool("ok", "ok", "answers fine", {"type": "object", "properties": {}}, _fine)


def costing(message: AssistantMessage, tokens_in: int, tokens_out: int) -> AssistantMessage:
    message.usage = Usage(input=tokens_in, output=tokens_out, total_tokens=tokens_in + tokens_out)
    return message


async def test_each_run_is_one_trace_holding_all_its_spans(
    exporter: tuple[TracerProvider, InMemorySpanExporter],
) -> None:
    # test_single_run_is_single_trace, test_multiple_runs_are_multiple_traces
    provider, memory = exporter
    fm = FauxModel([faux_message(faux_tool_call("ok", {})), "done", "again"])
    agent = Agent(model=fm.model, stream_fn=fm.stream_fn, tools=[TOOL], tracer_provider=provider)
    await agent.prompt("first")
    await agent.prompt("second")
    spans = memory.get_finished_spans()
    roots = [s for s in spans if s.name.startswith("invoke_agent")]
    assert len(roots) == 2 and all(s.parent is None for s in roots)
    traces = [root.context.trace_id for root in roots]
    assert traces[0] != traces[1]
    names = [sorted(s.name for s in spans if s.context.trace_id == trace_id) for trace_id in traces]
    assert names == [
        ["chat faux", "chat faux", "execute_tool ok", "invoke_agent assistant"],
        ["chat faux", "invoke_agent assistant"],
    ]


async def test_the_runs_span_carries_the_usage_of_all_its_model_calls(
    exporter: tuple[TracerProvider, InMemorySpanExporter],
) -> None:
    # test_task_and_turn_spans_export_aggregate_usage
    provider, memory = exporter
    calling = costing(faux_message(faux_tool_call("ok", {})), 10, 5)
    fm = FauxModel([calling, costing(faux_message("done"), 20, 7)])
    agent = Agent(model=fm.model, stream_fn=fm.stream_fn, tools=[TOOL], tracer_provider=provider)
    await agent.prompt("go")
    spans = memory.get_finished_spans()
    chats = [dict(s.attributes or {}) for s in spans if s.name.startswith("chat")]
    assert [(c["gen_ai.usage.input_tokens"], c["gen_ai.usage.output_tokens"]) for c in chats] == [
        (10, 5),
        (20, 7),
    ]
    [run] = [dict(s.attributes or {}) for s in spans if s.name.startswith("invoke_agent")]
    assert (run["gen_ai.usage.input_tokens"], run["gen_ai.usage.output_tokens"]) == (30, 12)


async def test_a_run_stopped_by_its_turn_limit_is_an_error_span_saying_so(
    exporter: tuple[TracerProvider, InMemorySpanExporter],
) -> None:
    # test_tracing_errors.py::test_max_turns_exceeded
    provider, memory = exporter
    fm = FauxModel([faux_message(faux_tool_call("ok", {}))] * 3)
    agent = Agent(
        model=fm.model, stream_fn=fm.stream_fn, tools=[TOOL], tracer_provider=provider,
        max_turns=2,
    )  # fmt: skip
    reply = await agent.prompt("loop")
    assert fm.call_count == 2 and reply.stop_reason == "toolUse"
    spans = memory.get_finished_spans()
    [run] = [s for s in spans if s.name.startswith("invoke_agent")]
    assert run.status.status_code is StatusCode.ERROR and run.status.description == "max_turns"
    assert dict(run.attributes or {})["error.type"] == "max_turns"
    others = [s for s in spans if s is not run]
    assert [s.name for s in others] == ["chat faux", "execute_tool ok"] * 2
    assert all(s.status.status_code is StatusCode.UNSET for s in others)


async def test_the_runs_span_ends_after_a_slow_input_guardrail(
    exporter: tuple[TracerProvider, InMemorySpanExporter],
) -> None:
    # test_stream_input_guardrail_timing.py::
    # test_parent_span_and_trace_finish_after_slow_input_guardrail: the model answered at
    # once; the run (and its span) is over only once the guardrail has passed the prompt
    provider, memory = exporter
    passed_at: list[int] = []

    async def slow_check(context: GuardrailContext) -> bool:
        await asyncio.sleep(0.3)
        passed_at.append(time.time_ns())
        return False

    fm = FauxModel(["hi"])
    agent = Agent(
        model=fm.model, stream_fn=fm.stream_fn, input_guardrails=[slow_check],
        tracer_provider=provider,
    )  # fmt: skip
    assert (await agent.prompt("hello")).text == "hi"
    [run] = [s for s in memory.get_finished_spans() if s.name.startswith("invoke_agent")]
    assert run.end_time is not None and run.end_time >= passed_at[0]
    assert run.status.status_code is StatusCode.UNSET
