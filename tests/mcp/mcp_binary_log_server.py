"""An MCP server, JSON-RPC by hand over stdio, that writes a log line that is not UTF-8 to
stdout before each answer to `tools/call` (the SDK's own server keeps stdout for the
protocol, so it cannot be made to): for the test that such a line does not stop the client.

    python mcp_binary_log_server.py          # answers each call after the log line
    python mcp_binary_log_server.py mute     # answers no call, nor heeds its cancellation

It lists one tool, `echo`, which answers its `text`.
"""

from __future__ import annotations

import json
import sys
from typing import Any

LOG_LINE = b"\xff\xfe log: \x80\x81 not UTF-8\n"

ECHO = {
    "name": "echo",
    "description": "Say the text back.",
    "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}}},
}


def answer(out: Any, request: dict[str, Any], result: dict[str, Any]) -> None:
    out.write(json.dumps({"jsonrpc": "2.0", "id": request["id"], "result": result}).encode())
    out.write(b"\n")
    out.flush()


def main() -> None:
    out = sys.stdout.buffer
    for line in sys.stdin.buffer:
        request = json.loads(line)
        method = request.get("method")
        if "id" not in request:  # a notification
            continue
        if method == "initialize":
            version = request["params"]["protocolVersion"]
            info = {"name": "binary-log", "version": "1"}
            answer(
                out,
                request,
                {"protocolVersion": version, "capabilities": {"tools": {}}, "serverInfo": info},
            )
        elif method == "tools/list":
            answer(out, request, {"tools": [ECHO]})
        elif method == "tools/call":
            if sys.argv[1:] == ["mute"]:
                continue
            out.write(LOG_LINE)
            out.flush()
            said = request["params"].get("arguments", {}).get("text", "")
            answer(out, request, {"content": [{"type": "text", "text": said}]})
        else:
            answer(out, request, {})


if __name__ == "__main__":
    main()
