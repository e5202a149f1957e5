"""Seconds to receive one long MCP result line over stdio: the SDK's `stdio_client`
against yiemagent's transport (`yiemagent.mcp._stdio`, docs/mcp.md "Long lines over
stdio").

Both clients talk to the same SDK-built server (`tests/mcp/mcp_test_server.py`, tool
`huge`: `size` ASCII characters, so the result's JSON line is about `size` bytes) through
the SDK's `ClientSession`; each figure is one `tools/call`, from sending it to holding the
`CallToolResult`, the server's own work included, after a small call that warms up both
ends. The SDK's reader joins every chunk to the unfinished line and splits again, so its
time grows with the square of the line's length; at 50 MB it takes minutes (`--sdk-up-to`
skips it above a size).

Usage: `.venv/bin/python bench/mcp_stdio.py [--sizes 1 10 50] [--sdk-up-to 50]`
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable
from contextlib import AbstractAsyncContextManager
from pathlib import Path
from typing import Any

import anyio
from mcp import ClientSession, StdioServerParameters, stdio_client

from yiemagent.mcp._stdio import stdio_transport

SERVER = str(Path(__file__).resolve().parent.parent / "tests" / "mcp" / "mcp_test_server.py")

Opener = Callable[[], AbstractAsyncContextManager[Any]]


def sdk() -> AbstractAsyncContextManager[Any]:
    return stdio_client(StdioServerParameters(command=sys.executable, args=[SERVER]))


def ours() -> AbstractAsyncContextManager[Any]:
    return stdio_transport(sys.executable, [SERVER], errlog=sys.stderr, errors="replace")


async def seconds_for(open_transport: Opener, size: int) -> float:
    """Seconds for one call of `huge` with `size` characters, on a fresh server."""
    async with open_transport() as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        await session.call_tool("huge", {"size": 1000})  # warm both ends up
        start = time.perf_counter()
        result = await session.call_tool("huge", {"size": size})
        elapsed = time.perf_counter() - start
    got = sum(len(block.text) for block in result.content if block.type == "text")
    assert got == size - size % 2, f"got {got} characters, not {size}"
    return elapsed


async def main(sizes_mb: list[float], sdk_up_to: float) -> None:
    print(f"{'MB':>6} {'SDK stdio_client (s)':>22} {'yiemagent (s)':>15}")
    for mb in sizes_mb:
        size = int(mb * 1_000_000)
        mine = await seconds_for(ours, size)
        theirs = f"{await seconds_for(sdk, size):.2f}" if mb <= sdk_up_to else "skipped"
        print(f"{mb:>6g} {theirs:>22} {mine:>15.2f}", flush=True)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=float, nargs="+", default=[1, 10, 50], help="MB")
    parser.add_argument("--sdk-up-to", type=float, default=50, help="MB; larger: ours only")
    args = parser.parse_args()
    anyio.run(main, args.sizes, args.sdk_up_to)
