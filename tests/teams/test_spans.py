"""A team's spans (DESIGN §13): each agent's run is `invoke_agent {name}`, a
sub-agent's nested under the parent's `execute_tool` span of the call that ran it (also when
only the parent has a tracer provider), and a handoff is a span event."""

from __future__ import annotations

import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import StatusCode

from yiemagent import GuardrailContext, GuardrailTripped, Handoff

from ._kit import calls, scripted


@pytest.mark.parametrize("content", [False, True], ids=["no-content", "content"])
async def test_sub_agent_spans_nest_and_handoffs_are_events(content: bool) -> None:
    """The handoff's reason, which the model wrote, is on the event only with content
    traced (as openai-agents#3110 keeps tool text off spans without it)."""
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
        trace_content=content,
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
    expected = {"yiemagent.handoff.from": "lead", "yiemagent.handoff.to": "writer"}
    if content:
        expected["yiemagent.handoff.reason"] = "prose"
    assert dict(event.attributes) == expected


@pytest.mark.parametrize("kind", ["input", "output"])
async def test_a_run_a_guardrail_stopped_says_so_on_its_span(kind: str) -> None:
    """mastra-ai/mastra #14038 (#12163): a run a tripwire stopped did not say why in its
    spans. Here the span said `error` (or `aborted`) where the run's `agent_end` says
    "guardrail"."""
    provider = TracerProvider()
    memory = InMemorySpanExporter()
    provider.add_span_processor(SimpleSpanProcessor(memory))

    def no_launch(context: GuardrailContext) -> bool:
        return "launch" in (context.input if kind == "input" else context.text)

    guards = {f"{kind}_guardrails": [no_launch]}
    agent, _ = scripted("a", ["the launch code"], tracer_provider=provider, **guards)
    ends = []
    agent.subscribe(lambda event, signal: event.type == "agent_end" and ends.append(event))
    with pytest.raises(GuardrailTripped):
        await agent.prompt("launch it" if kind == "input" else "what is it?")

    [run] = [s for s in memory.get_finished_spans() if s.name == "invoke_agent a"]
    assert ends[0].reason == "guardrail"
    assert run.attributes is not None
    assert run.attributes["yiemagent.end_reason"] == "guardrail"
    assert run.attributes["error.type"] == "guardrail"
    assert run.status.status_code is StatusCode.ERROR
    assert run.status.description == f"{kind} guardrail 'no_launch' tripped"


async def test_a_sub_agent_records_no_content_when_its_parent_does_not() -> None:
    """openai-agents#1492: with sensitive data off, the input and output of an agent used as
    a tool still showed in the trace. Here neither the question the parent asks its
    sub-agent nor the sub-agent's answer is on any span."""
    provider = TracerProvider()
    memory = InMemorySpanExporter()
    provider.add_span_processor(SimpleSpanProcessor(memory))
    researcher, _ = scripted("researcher", ["SUB-SECRET found"])
    lead, _ = scripted(
        "lead",
        [calls(("researcher", {"input": "LEAD-SECRET question"})), "done"],
        tools=[researcher.as_tool()],
        tracer_provider=provider,
    )
    await lead.prompt("go")
    spans = memory.get_finished_spans()
    assert {s.name for s in spans} >= {"invoke_agent researcher", "execute_tool researcher"}
    recorded = repr([(s.attributes, s.status.description, s.events) for s in spans])
    assert "SUB-SECRET" not in recorded and "LEAD-SECRET" not in recorded


@pytest.mark.parametrize(
    ("parent", "own", "recorded"),
    [(True, None, True), (False, None, False), (False, True, True), (True, False, False)],
    ids=["parent-on", "parent-off", "own-on", "own-off"],
)
async def test_a_sub_agent_records_content_as_its_parent_unless_it_chose(
    parent: bool, own: bool | None, recorded: bool
) -> None:
    """The parent run's `trace_content` carries down to a sub-agent that sets none (as
    openai-agents' `as_tool` runs the nested agent with the parent's run config, its
    `trace_include_sensitive_data` included); one that sets its own keeps it. Before, a
    sub-agent's spans recorded no content under a parent that asked for it."""
    provider = TracerProvider()
    memory = InMemorySpanExporter()
    provider.add_span_processor(SimpleSpanProcessor(memory))
    choice = {} if own is None else {"trace_content": own}
    researcher, _ = scripted("researcher", ["found"], **choice)
    lead, _ = scripted(
        "lead",
        [calls(("researcher", {"input": "x"})), "done"],
        tools=[researcher.as_tool()],
        tracer_provider=provider,
        trace_content=parent,
    )

    await lead.prompt("go")

    spans = memory.get_finished_spans()
    [sub_run] = [s for s in spans if s.name == "invoke_agent researcher"]
    [sub_chat] = [
        s for s in spans if s.parent is not None and s.parent.span_id == sub_run.context.span_id
    ]
    assert sub_chat.name.startswith("chat ")
    assert ("gen_ai.input.messages" in (sub_chat.attributes or {})) is recorded
    assert ("gen_ai.system_instructions" in (sub_run.attributes or {})) is recorded
