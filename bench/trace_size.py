"""Bytes a traced run records with `trace_content`, with no bound on content and with the
default one (`trace_content_max_chars`, docs/observability.md "How much content a span
holds").

One faux run (no model loaded): `--calls` turns, each one call of a tool returning
`--chars` characters, then an answer. Its spans go to the SDK's in-memory exporter and
are encoded as OTLP protobuf (what an OTLP exporter sends): the run's total, its largest
span, and the span attribute bytes. gRPC's default message limit is 4 MiB; a batch holds
up to 512 spans.

Usage: `.venv/bin/python bench/trace_size.py [--calls 40] [--chars 20000]`
"""

from __future__ import annotations

import argparse
import asyncio
from typing import Any

from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from yiemagent import (
    AbortSignal,
    AgentContext,
    AgentLoopConfig,
    AgentTool,
    UserMessage,
    run_agent_loop,
)
from yiemagent.ai.providers.faux import FauxModel, faux_message, faux_tool_call
from yiemagent.types.config import DEFAULT_TRACE_CONTENT_MAX_CHARS

MIB = 1024 * 1024


async def traced_run(calls: int, chars: int, bound: int | None) -> tuple[int, int, int]:
    """(OTLP bytes of the run, of its largest span, UTF-8 bytes of its attribute values)."""

    async def execute(call_id: str, args: Any, signal: AbortSignal, on_update: Any) -> str:
        return "x" * chars

    tool = AgentTool("fetch", "fetch", "returns a page", {"type": "object"}, execute)
    script: list[Any] = [faux_message(faux_tool_call("fetch", {"page": n})) for n in range(calls)]
    fm = FauxModel([*script, "done"])
    provider = TracerProvider()
    memory = InMemorySpanExporter()
    provider.add_span_processor(SimpleSpanProcessor(memory))
    config = AgentLoopConfig(
        model=fm.model, tracer_provider=provider, trace_content=True, trace_content_max_chars=bound
    )
    context = AgentContext("be brief", [], [tool])
    await run_agent_loop([UserMessage("go")], context, config, lambda e: None, None, fm.stream_fn)
    provider.shutdown()
    spans = memory.get_finished_spans()
    total = encode_spans(spans).ByteSize()
    largest = max(encode_spans([span]).ByteSize() for span in spans)
    attributes = sum(
        len(str(value).encode()) for span in spans for value in (span.attributes or {}).values()
    )
    return total, largest, attributes


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--calls", type=int, default=40, help="tool calls in the run")
    parser.add_argument("--chars", type=int, default=20_000, help="characters of each result")
    options = parser.parse_args()
    print(f"one run: {options.calls} calls, each returning {options.chars:,} characters")
    print(f"{'content bound':>22} {'run (OTLP)':>14} {'largest span':>14} {'attributes':>14}")
    for label, bound in (
        ("none", None),
        (f"{DEFAULT_TRACE_CONTENT_MAX_CHARS:,}", DEFAULT_TRACE_CONTENT_MAX_CHARS),
    ):
        total, largest, attributes = asyncio.run(traced_run(options.calls, options.chars, bound))
        print(
            f"{label:>22} {total / MIB:>10.2f} MiB {largest / 1024:>10.1f} KiB"
            f" {attributes / MIB:>10.2f} MiB"
        )


if __name__ == "__main__":
    main()
