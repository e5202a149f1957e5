"""A team's spans (DESIGN §13): each agent's run is `invoke_agent {name}`, a
sub-agent's nested under the parent's `execute_tool` span of the call that ran it (also when
only the parent has a tracer provider), and a handoff is a span event."""

from __future__ import annotations

from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from yiemagent import Handoff

from ._kit import calls, scripted


async def test_sub_agent_spans_nest_and_handoffs_are_events() -> None:
    provider = TracerProvider()
    memory = InMemorySpanExporter()
    provider.add_span_processor(SimpleSpanProcessor(memory))
    researcher, _ = scripted("researcher", ["found"])
    writer, _ = scripted("writer", ["written"])
    lead, _ = scripted(
        "lead",
        [calls(("researcher", {"input": "x"})), calls(("transfer_to_writer", {"reason": "prose"}))],
        tools=[researcher.as_tool()],
        handoffs=[Handoff(writer)],
        tracer_provider=provider,
    )

    await lead.prompt("go")

    spans = {s.name: s for s in memory.get_finished_spans()}
    lead_run, sub_run = spans["invoke_agent lead"], spans["invoke_agent researcher"]
    call = spans["execute_tool researcher"]
    assert call.parent is not None and call.parent.span_id == lead_run.context.span_id
    assert sub_run.parent is not None and sub_run.parent.span_id == call.context.span_id
    assert sub_run.attributes is not None
    assert sub_run.attributes["gen_ai.agent.name"] == "researcher"
    transfer = spans["execute_tool transfer_to_writer"]
    [event] = [e for e in transfer.events if e.name == "handoff"]
    assert event.attributes is not None
    assert dict(event.attributes) == {
        "yiemagent.handoff.from": "lead",
        "yiemagent.handoff.to": "writer",
        "yiemagent.handoff.reason": "prose",
    }
