"""What tracing costs per tool call (DESIGN §13: "no cost when not enabled").

The same run as `bench/overhead.py` — `run_agent_loop` on a `FauxModel` whose first response
holds N calls of a no-op async tool (parallel) and whose second is a text answer, minus the
same run with no tool calls, divided by N — three ways: tracing off (no `tracer_provider`,
nothing instrumented), and on, with an OpenTelemetry SDK `TracerProvider` whose span
processor hands every span to an exporter that drops it (span creation, attributes and
context switches are measured, not the export), with and without `trace_content`.
Modes are interleaved run by run so that machine load hits them alike; medians are shown.
Times are the process's CPU time (`time.process_time`: the tools are async, so all the work
is on this thread), which a machine busy with other processes inflates far less than the
wall clock.

Usage: `.venv/bin/python bench/tracing.py [--calls 50] [--runs 60]`
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import statistics
import time
from collections.abc import Sequence
from typing import Any

from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExporter, SpanExportResult

from yiemagent import AgentContext, AgentLoopConfig, AgentTool, UserMessage, run_agent_loop
from yiemagent.ai.providers.faux import FauxModel, faux_message, faux_text, faux_tool_call

SCHEMA: dict[str, Any] = {"type": "object", "properties": {"x": {"type": "integer"}}}


class DropExporter(SpanExporter):
    """Counts spans and keeps none."""

    def __init__(self) -> None:
        self.count = 0

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        self.count += len(spans)
        return SpanExportResult.SUCCESS


async def noop(tool_call_id: str, args: Any, signal: Any, on_update: Any) -> str:
    return "ok"


TOOL = AgentTool("noop", "noop", "does nothing", SCHEMA, noop, parallel=True)


async def one_run(n_calls: int, **config: Any) -> float:
    calls = [faux_tool_call("noop", {"x": i}, id=f"c{i}") for i in range(n_calls)]
    first = faux_message(faux_text("working"), *calls)
    fm = FauxModel([first, "done"], chunk_size=10_000)
    cfg = AgentLoopConfig(model=fm.model, **config)
    start = time.process_time()
    await run_agent_loop(
        [UserMessage("go")], AgentContext(tools=[TOOL]), cfg, lambda e: None, None, fm.stream_fn
    )
    return time.process_time() - start


async def main(calls: int, runs: int) -> None:
    exporter = DropExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    modes: dict[str, dict[str, Any]] = {
        "off": {},
        "on": {"tracer_provider": provider},
        "on+content": {"tracer_provider": provider, "trace_content": True},
    }
    samples: dict[str, list[float]] = {name: [] for name in modes}
    for _ in range(5):  # warm up: imports, schema validators
        for config in modes.values():
            await one_run(calls, **config)
            await one_run(0, **config)
    gc.disable()
    try:
        for _ in range(runs):
            for name, config in modes.items():
                with_calls = await one_run(calls, **config)
                without = await one_run(0, **config)
                samples[name].append((with_calls - without) / calls * 1e6)
    finally:
        gc.enable()
    off = statistics.median(samples["off"])
    print(f"tool calls per run: {calls}, runs: {runs} (medians, CPU µs per tool call)")
    for name, values in samples.items():
        med = statistics.median(values)
        print(f"  tracing {name:<11} {med:7.1f} µs   ({med / off:.2f} x off)")
    print(f"  spans exported: {exporter.count}")
    provider.shutdown()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=50)
    parser.add_argument("--runs", type=int, default=60)
    args = parser.parse_args()
    asyncio.run(main(args.calls, args.runs))
