"""Framework overhead per MCP tool call over stdio (DESIGN §9, §12).

(Not `bench/mcp.py`: a script of that name would shadow the `mcp` SDK it measures.)

Two clients, each with its own server process (the SDK test server's no-op tool `noop`,
`tests/mcp/mcp_test_server.py`), make the same sequential calls:
- raw: the official SDK's `ClientSession.call_tool("noop", {})` on the caller's loop;
- yiemagent: the tool `add_server` registered, run through the whole per-call pipeline
  (`execute_tool_calls` with one call: lookup, validation, events, the hop to the
  connection's thread and back, result conversion);
- and, to split the overhead, `MCPServer.call_tool` alone (the thread hop, no pipeline).

Rounds alternate between the clients so machine load hits both alike; each figure is the
median over rounds of (round time / calls). Overhead = yiemagent − raw, in µs per call.

Usage: `.venv/bin/python bench/mcp_overhead.py [--calls 200] [--rounds 15]`
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import time
from pathlib import Path

from mcp import ClientSession, StdioServerParameters, stdio_client

from yiemagent import AbortSignal, AgentContext, AgentEvent, AgentLoopConfig, execute_tool_calls
from yiemagent.ai.providers.faux import FauxModel, faux_message, faux_tool_call
from yiemagent.mcp import MCPServerStdio, add_server
from yiemagent.tools import ToolStore

SERVER = str(Path(__file__).resolve().parent.parent / "tests" / "mcp" / "mcp_test_server.py")


async def _emit(event: AgentEvent) -> None:
    return None


async def main(calls: int, rounds: int) -> None:
    params = StdioServerParameters(command=sys.executable, args=[SERVER])
    ours = MCPServerStdio(sys.executable, [SERVER], name="bench")
    store = ToolStore("bench")
    await add_server(store, ours)
    context = AgentContext(tools=list(store.tools.values()))
    config = AgentLoopConfig(model=FauxModel([]).model)
    signal = AbortSignal()
    messages = [faux_message(faux_tool_call("noop", {})) for _ in range(calls)]

    async with stdio_client(params) as (read, write), ClientSession(read, write) as raw:
        await raw.initialize()
        await raw.list_tools()

        async def raw_round() -> float:
            start = time.perf_counter()
            for _ in range(calls):
                await raw.call_tool("noop", {})
            return (time.perf_counter() - start) / calls

        async def pipeline_round() -> float:
            start = time.perf_counter()
            for message in messages:
                await execute_tool_calls(context, message, config, signal, _emit)
            return (time.perf_counter() - start) / calls

        async def connection_round() -> float:
            start = time.perf_counter()
            for _ in range(calls):
                await ours.call_tool("noop", {})
            return (time.perf_counter() - start) / calls

        for warm in (raw_round, pipeline_round, connection_round):
            await warm()
        samples: dict[str, list[float]] = {"raw": [], "pipeline": [], "connection": []}
        for _ in range(rounds):
            samples["raw"].append(await raw_round())
            samples["pipeline"].append(await pipeline_round())
            samples["connection"].append(await connection_round())
    await ours.close()

    med = {name: statistics.median(values) * 1e6 for name, values in samples.items()}
    print(f"MCP no-op tool over stdio, {calls} sequential calls x {rounds} rounds (median µs/call)")
    print(f"  raw SDK ClientSession.call_tool       {med['raw']:8.1f} µs")
    print(f"  yiemagent MCPServer.call_tool          {med['connection']:8.1f} µs")
    print(f"  yiemagent through the tool pipeline    {med['pipeline']:8.1f} µs")
    print(
        f"  framework overhead per call            {med['pipeline'] - med['raw']:8.1f} µs "
        f"(of which the connection thread hop {med['connection'] - med['raw']:.1f} µs)"
    )
    print(f"  ratio yiemagent / raw                  {med['pipeline'] / med['raw']:8.2f}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=15)
    args = parser.parse_args()
    asyncio.run(main(args.calls, args.rounds))
