"""An MCP server (the official SDK's `MCPServer`) that starts a child process, for the
close tests: it writes the child's pid to `$MCP_TEST_MARKERS/child.pid` and, when it
leaves its serve loop (its stdin closed), `clean_exit`.

    MCP_TEST_STUBBORN=1   after leaving the serve loop, sleep instead of exiting, and
                          ignore SIGTERM: only a kill stops it
    MCP_TEST_LINGER=1     after leaving the serve loop, sleep instead of exiting
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from mcp.server.mcpserver import MCPServer

markers = Path(os.environ["MCP_TEST_MARKERS"])
child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
(markers / "child.pid").write_text(str(child.pid))
(markers / "pid").write_text(str(os.getpid()))
if os.environ.get("MCP_TEST_STUBBORN"):
    signal.signal(signal.SIGTERM, signal.SIG_IGN)

server = MCPServer("tree", log_level="WARNING")


@server.tool(description="Answer pong.")
def ping() -> str:
    return "pong"


if __name__ == "__main__":
    try:
        server.run()
    finally:
        (markers / "clean_exit").write_text("1")
        if os.environ.get("MCP_TEST_STUBBORN") or os.environ.get("MCP_TEST_LINGER"):
            time.sleep(600)
