"""16 parallel tools that each wait 100 ms finish in ≤ 130 ms (DESIGN §9, R-4.9).

One run through `run_agent_loop` and a `FauxModel`: the first response calls 16 tools at
once, the second answers. Two versions, in the same process: async tools
(`asyncio.sleep(0.1)`) and plain-function tools (`time.sleep(0.1)` on worker threads). The
time is taken from the first `tool_execution_start` to the last `tool_execution_end`, so it
is the batch itself; the whole run's wall time is printed too. Figures are medians of a few
runs; the ratio is to the 100 ms one tool takes (budget ≤ 1.3).

Usage: `.venv/bin/python bench/parallel.py [--tools 16] [--runs 5]`
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import time
from typing import Any

from yiemagent import (
    AgentContext,
    AgentEvent,
    AgentLoopConfig,
    AgentTool,
    UserMessage,
    run_agent_loop,
)
from yiemagent.ai.providers.faux import FauxModel, faux_message, faux_tool_call

WAIT_S = 0.1
SCHEMA: dict[str, Any] = {"type": "object", "properties": {}}


async def wait_async(tool_call_id: str, args: Any, signal: Any, on_update: Any) -> str:
    await asyncio.sleep(WAIT_S)
    return "waited"


def wait_plain(tool_call_id: str, args: Any, signal: Any, on_update: Any) -> str:
    time.sleep(WAIT_S)
    return "waited"


async def one_run(n_tools: int, plain: bool) -> tuple[float, float]:
    """(batch seconds, whole-run seconds) for one run calling `n_tools` waiting tools."""
    tool = AgentTool(
        name="wait",
        label="wait",
        description="waits 100 ms",
        input_schema=SCHEMA,
        execute=wait_plain if plain else wait_async,
        parallel=True,
    )
    calls = [faux_tool_call("wait", {}, id=f"c{i}") for i in range(n_tools)]
    fm = FauxModel([faux_message(*calls), "done"], chunk_size=10_000)
    marks: dict[str, float] = {}

    def on_event(event: AgentEvent) -> None:
        now = time.perf_counter()
        if event.type == "tool_execution_start":
            marks.setdefault("first_start", now)
        elif event.type == "tool_execution_end":
            marks["last_end"] = now

    start = time.perf_counter()
    await run_agent_loop(
        [UserMessage("go")],
        AgentContext(tools=[tool]),
        AgentLoopConfig(model=fm.model),
        on_event,
        stream_fn=fm.stream_fn,
    )
    total = time.perf_counter() - start
    return marks["last_end"] - marks["first_start"], total


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tools", type=int, default=16)
    parser.add_argument("--runs", type=int, default=5)
    ns = parser.parse_args()
    cold, _ = await one_run(ns.tools, plain=True)  # the first run also starts the threads
    print(f"{ns.tools} parallel tools waiting {WAIT_S * 1000:.0f} ms each (median of {ns.runs})")
    print(f"  plain, first run of the process (threads created): batch {cold * 1000:6.1f} ms")
    for plain in (False, True):
        batch, total = zip(*[await one_run(ns.tools, plain) for _ in range(ns.runs)], strict=True)
        b, t = statistics.median(batch), statistics.median(total)
        kind = "plain (threads)" if plain else "async"
        print(
            f"  {kind:16} batch {b * 1000:6.1f} ms  ratio {b / WAIT_S:4.2f}   "
            f"whole run {t * 1000:6.1f} ms  ratio {t / WAIT_S:4.2f}   (budget ≤ 1.30)"
        )


if __name__ == "__main__":
    asyncio.run(main())
