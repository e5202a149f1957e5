"""Framework overhead per tool call (DESIGN §9: ≤ 30 µs median, faux model, no-op tool).

Measured through the whole loop: `run_agent_loop` on a `FauxModel` whose first response
holds N calls of a no-op tool and whose second is a text answer, minus the same run whose
first response is a text answer with no tool calls; divided by N. The faux model streams
the tool calls too, so the figure includes streaming N tool calls (partial-JSON parsing,
`message_update` events), not only the pipeline. Reports the median over many runs, for
async and plain-function no-op tools, in sequential and parallel mode.

Then the same for `execute_tool_calls` alone, to show the pipeline's share.

Usage: `.venv/bin/python bench/overhead.py [--calls 50] [--runs 60]`
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import statistics
import time
from typing import Any

from yiemagent import (
    AbortSignal,
    AgentContext,
    AgentEvent,
    AgentLoopConfig,
    AgentTool,
    AssistantMessage,
    ToolCall,
    UserMessage,
    execute_tool_calls,
    run_agent_loop,
)
from yiemagent.ai.faux import FauxModel, faux_message, faux_text, faux_tool_call

SCHEMA: dict[str, Any] = {"type": "object", "properties": {"x": {"type": "integer"}}}


async def noop_async(tool_call_id: str, args: Any, signal: Any, on_update: Any) -> str:
    return "ok"


def noop_plain(tool_call_id: str, args: Any, signal: Any, on_update: Any) -> str:
    return "ok"


def make_tool(plain: bool) -> AgentTool:
    return AgentTool(
        name="noop",
        label="noop",
        description="does nothing",
        input_schema=SCHEMA,
        execute=noop_plain if plain else noop_async,
        parallel=True,
    )


async def one_run(n_calls: int, tool: AgentTool, mode: str) -> float:
    """Seconds for one run whose first response holds `n_calls` tool calls (0: plain text)."""
    if n_calls:
        calls = [faux_tool_call("noop", {"x": i}, id=f"c{i}") for i in range(n_calls)]
        first = faux_message(faux_text("working"), *calls)
    else:
        first = faux_message(faux_text("working"))
    fm = FauxModel([first, "done"], chunk_size=10_000)
    config = AgentLoopConfig(model=fm.model, tool_execution=mode)  # type: ignore[arg-type]
    context = AgentContext(tools=[tool])
    start = time.perf_counter()
    await run_agent_loop(
        [UserMessage("go")], context, config, lambda e: None, stream_fn=fm.stream_fn
    )
    return time.perf_counter() - start


async def overhead_us(n_calls: int, runs: int, plain: bool, mode: str) -> float:
    tool = make_tool(plain)
    for _ in range(5):  # warm up caches (schema validators, imports)
        await one_run(n_calls, tool, mode)
        await one_run(0, tool, mode)
    per_call: list[float] = []
    gc.collect()
    for _ in range(runs):
        with_calls = await one_run(n_calls, tool, mode)
        without = await one_run(0, tool, mode)
        per_call.append((with_calls - without) / n_calls * 1e6)
    return statistics.median(per_call)


async def pipeline_only_us(n_calls: int, runs: int, plain: bool, mode: str) -> float:
    """µs per call of `execute_tool_calls` alone (no model, no loop): the pipeline's share."""
    tool = make_tool(plain)
    config = AgentLoopConfig(model=FauxModel([]).model, tool_execution=mode)  # type: ignore[arg-type]

    async def emit(event: AgentEvent) -> None:
        return None

    async def once() -> float:
        calls = [ToolCall(id=f"c{i}", name="noop", arguments={"x": i}) for i in range(n_calls)]
        message = AssistantMessage(content=list(calls), stop_reason="toolUse")
        start = time.perf_counter()
        await execute_tool_calls(AgentContext(tools=[tool]), message, config, AbortSignal(), emit)
        return (time.perf_counter() - start) / n_calls * 1e6

    for _ in range(5):
        await once()
    return statistics.median([await once() for _ in range(runs)])


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=50, help="tool calls per run")
    parser.add_argument("--runs", type=int, default=60, help="runs per figure")
    ns = parser.parse_args()
    print(f"framework overhead per tool call, µs (median of {ns.runs} runs of {ns.calls} calls)")
    print("through run_agent_loop + FauxModel; budget ≤ 30 µs (DESIGN §9)")
    for plain in (False, True):
        for mode in ("sequential", "parallel"):
            value = await overhead_us(ns.calls, ns.runs, plain, mode)
            kind = "plain (worker thread)" if plain else "async"
            print(f"  {kind:22} {mode:10} {value:8.1f} µs")
    print("the pipeline's share: execute_tool_calls alone, µs per call")
    for plain in (False, True):
        for mode in ("sequential", "parallel"):
            value = await pipeline_only_us(ns.calls, ns.runs, plain, mode)
            kind = "plain (worker thread)" if plain else "async"
            print(f"  {kind:22} {mode:10} {value:8.1f} µs")


if __name__ == "__main__":
    asyncio.run(main())
