"""A run whose task is cancelled (`asyncio.wait_for` or `asyncio.timeout` around `prompt`,
the everyday way to bound it) ends every span it opened, in error, so the exporter gets the
whole trace (DESIGN §13): whether the model was streaming or a tool was running."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import StatusCode

from yiemagent import AbortSignal, Agent, AgentTool
from yiemagent.ai.providers.faux import FauxModel, faux_message, faux_tool_call

pytestmark = pytest.mark.timeout(60)


@pytest.fixture
def exporter() -> Iterator[tuple[TracerProvider, InMemorySpanExporter]]:
    provider = TracerProvider()
    memory = InMemorySpanExporter()
    provider.add_span_processor(SimpleSpanProcessor(memory))
    yield provider, memory
    provider.shutdown()


async def test_a_run_cancelled_while_a_tool_runs_ends_its_spans(
    exporter: tuple[TracerProvider, InMemorySpanExporter],
) -> None:
    provider, memory = exporter
    started = asyncio.Event()

    async def stuck(call_id: str, args: Any, signal: AbortSignal, on_update: Any) -> str:
        started.set()
        await asyncio.sleep(3600)
        return "never"

    tool = AgentTool("stuck", "stuck", "never ends", {"type": "object"}, stuck)
    fm = FauxModel([faux_message(faux_tool_call("stuck", {})), "unused"])
    agent = Agent(
        "be brief", fm.model, stream_fn=fm.stream_fn, tools=[tool], tracer_provider=provider
    )
    run = asyncio.ensure_future(agent.prompt("go"))
    await asyncio.wait_for(started.wait(), 10)
    run.cancel()
    with pytest.raises(asyncio.CancelledError):
        await run

    spans = {s.name: s for s in memory.get_finished_spans()}
    assert set(spans) == {"invoke_agent assistant", "chat faux", "execute_tool stuck"}
    assert spans["execute_tool stuck"].status.status_code is StatusCode.ERROR
    assert spans["invoke_agent assistant"].status.status_code is StatusCode.ERROR


async def test_a_run_cancelled_while_the_model_streams_ends_its_spans(
    exporter: tuple[TracerProvider, InMemorySpanExporter],
) -> None:
    provider, memory = exporter
    fm = FauxModel(["a long answer " * 50], chunk_size=1, delay_s=0.02)
    agent = Agent("be brief", fm.model, stream_fn=fm.stream_fn, tracer_provider=provider)
    with pytest.raises(TimeoutError):
        await asyncio.wait_for(agent.prompt("go"), 0.3)

    spans = {s.name: s for s in memory.get_finished_spans()}
    assert set(spans) == {"invoke_agent assistant", "chat faux"}
    assert all(s.status.status_code is StatusCode.ERROR for s in spans.values())
