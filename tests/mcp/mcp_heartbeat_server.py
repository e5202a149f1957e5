"""An MCP server whose one tool works slowly and says so, for the tests of DESIGN §12: it
sends a progress notification every `every` seconds, `steps` times, then waits `then_wait`
seconds before it answers.

    python mcp_heartbeat_server.py PORT   # streamable HTTP on 127.0.0.1:PORT/mcp
    python mcp_heartbeat_server.py        # stdio
"""

from __future__ import annotations

import sys

import anyio
from mcp.server.mcpserver import Context, MCPServer

server = MCPServer("yiem-heartbeat-server", log_level="WARNING")


@server.tool(description="Report progress every `every` s, `steps` times, then answer.")
async def slow_progress(steps: int, every: float, ctx: Context, then_wait: float = 0.0) -> str:
    for step in range(1, steps + 1):
        await anyio.sleep(every)
        await ctx.report_progress(step, steps, f"step {step} of {steps}")
    await anyio.sleep(then_wait)
    return "done"


if __name__ == "__main__":
    if len(sys.argv) > 1:
        server.run("streamable-http", host="127.0.0.1", port=int(sys.argv[1]))
    else:
        server.run("stdio")
