"""The spans of a team whose calls are held for approval (DESIGN §13, §14, §17): a router
hands over to `billing`, which holds a call of its own and runs a sub-agent that holds
one too. Every span a run starts is ended and exported, so no span of the trace lacks
its parent; the held calls' spans say they await approval, and the resumed run traces
the calls it runs."""

from __future__ import annotations

from typing import Any

from opentelemetry.sdk.trace import ReadableSpan, Span, SpanProcessor, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import StatusCode

from ..approvals._kit import recording_tool
from ._kit import calls, scripted

HELD = "yiemagent.tool.awaiting_approval"


class Started(SpanProcessor):
    """Records the id of every span started."""

    def __init__(self) -> None:
        self.ids: list[int] = []

    def on_start(self, span: Span, parent_context: Any = None) -> None:
        self.ids.append(span.context.span_id)


def traced() -> tuple[TracerProvider, Started, InMemorySpanExporter]:
    provider = TracerProvider()
    started = Started()
    memory = InMemorySpanExporter()
    provider.add_span_processor(started)
    provider.add_span_processor(SimpleSpanProcessor(memory))
    return provider, started, memory


def whole(spans: tuple[ReadableSpan, ...], started: Started) -> dict[str, ReadableSpan]:
    """The spans by name, after checking that each started span was exported once and that
    every parent of an exported span is exported too (a trace with no orphans)."""
    ids = [s.context.span_id for s in spans]
    assert sorted(ids) == sorted(started.ids), "a span was started and never ended"
    for span in spans:
        assert span.parent is None or span.parent.span_id in ids, f"{span.name} lost its parent"
    return {s.name: s for s in spans}


def team(provider: TracerProvider, ran: list[str]) -> Any:
    helper, _ = scripted(
        "helper",
        [calls(("launch", {"n": 1})), "launched"],
        tools=[recording_tool("launch", ran, requires_approval=True)],
    )
    billing, _ = scripted(
        "billing",
        [calls(("refund", {"n": 2}), ("helper", {"input": "launch"})), "billing done"],
        tools=[recording_tool("refund", ran, requires_approval=True), helper.as_tool()],
    )
    router, _ = scripted(
        "router",
        [calls(("transfer_to_billing", {}))],
        handoffs=[billing],
        tracer_provider=provider,
    )
    return router


async def test_held_calls_end_their_spans_and_the_resume_traces_what_runs() -> None:
    """strands-agents/harness-sdk #3031 ended an interrupted tool's span. Here a held call's
    `execute_tool` span was started and never ended: an exporter never got it, and the
    sub-agent's `invoke_agent helper` span, exported, named a parent no trace held."""
    provider, started, memory = traced()
    ran: list[str] = []
    router = team(provider, ran)

    await router.prompt("refund me and launch")

    spans = whole(memory.get_finished_spans(), started)
    for name in ("execute_tool refund", "execute_tool helper", "execute_tool launch"):
        assert (spans[name].attributes or {}).get(HELD) is True, name
    assert HELD not in (spans["execute_tool transfer_to_billing"].attributes or {})
    sub_run = spans["invoke_agent helper"]
    assert sub_run.parent is not None
    assert sub_run.parent.span_id == spans["execute_tool helper"].context.span_id
    assert ran == []

    memory.clear()
    started.ids.clear()
    for pending in router.pending_approvals:
        router.approve(pending.tool_call_id)
    assert (await router.resume()).text == "billing done"

    spans = whole(memory.get_finished_spans(), started)
    assert len(ran) == 2
    for name in ("execute_tool refund", "execute_tool helper", "execute_tool launch"):
        assert HELD not in (spans[name].attributes or {}), name


async def test_held_calls_of_an_aborted_run_end_their_spans_once() -> None:
    """Aborted once `refund` is held, the run answers it ("skipped"): its span ends with
    that result, once, and no span says it awaits approval."""
    provider, started, memory = traced()
    ran: list[str] = []
    router = team(provider, ran)
    router.subscribe(
        lambda event, signal: (
            router.abort()
            if event.type == "tool_execution_start" and event.tool_name == "helper"
            else None
        )
    )

    await router.prompt("refund me and launch")

    assert router.pending_approvals == [] and ran == []
    spans = whole(memory.get_finished_spans(), started)
    assert not any(HELD in (s.attributes or {}) for s in spans.values())
    assert spans["execute_tool refund"].status.status_code is StatusCode.ERROR
