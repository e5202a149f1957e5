"""Twenty stdio MCP servers added in a process limited to 64 file descriptors
(`RLIMIT_NOFILE`): a server that could not start kept its connection's thread and event
loop, and their descriptors, until the process ended, so every later server failed too,
some with a bare "OSError: [Errno 24] Too many open files" out of `add_server` (its loop
could not be made), and Python printed "Exception ignored" tracebacks of the half-made
loops. Now each failure is an `MCPConnectionError` saying the server cannot start, a server
that never came up gives its descriptors back, and closing the agent leaves the process
with the descriptors it had before."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

SERVER = Path(__file__).with_name("mcp_test_server.py")

CHILD = textwrap.dedent(
    """
    import asyncio, gc, json, os, resource, sys

    from yiemagent import Agent
    from yiemagent.mcp import MCPServerStdio, add_server

    def descriptors():
        return len(os.listdir("/proc/self/fd"))

    async def main():
        resource.setrlimit(resource.RLIMIT_NOFILE, (64, 64))
        agent = Agent()
        before = descriptors()
        added, failed = 0, []
        for i in range(20):
            server = MCPServerStdio(sys.executable, [sys.argv[1]], name=f"s{i}")
            try:
                await asyncio.wait_for(add_server(agent, server, prefix=f"s{i}"), 60)
                added += 1
            except Exception as exc:
                failed.append(f"{type(exc).__name__}: {exc}")
        await agent.close()
        gc.collect()
        print(json.dumps([added, failed, before, descriptors()]))

    asyncio.run(main())
    """
)


@pytest.mark.timeout(240)
def test_servers_that_cannot_start_say_so_and_give_their_descriptors_back() -> None:
    done = subprocess.run(
        [sys.executable, "-c", CHILD, str(SERVER)], capture_output=True, text=True, timeout=230
    )
    assert done.returncode == 0, done.stderr[-3000:]
    added, failed, before, after = json.loads(done.stdout.splitlines()[-1])
    assert added >= 1 and failed, (added, failed)  # seven descriptors a server: not all fit
    for error in failed:
        assert error.startswith("MCPConnectionError: MCP server ") and "cannot start" in error
    assert after == before
    assert "Exception ignored" not in done.stderr, done.stderr[-3000:]
