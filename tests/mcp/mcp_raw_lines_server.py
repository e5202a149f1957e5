"""An MCP server, JSON-RPC by hand over stdio, that writes its answers to `tools/call` in
ways the SDK's own server never does, for the tests of the client's line reader:

    python mcp_raw_lines_server.py crlf        # every line it writes ends in CR LF
    python mcp_raw_lines_server.py garbage     # a line of broken JSON before each answer
    python mcp_raw_lines_server.py latin1      # the answer's text holds bytes not UTF-8
    python mcp_raw_lines_server.py trickle     # the answer in pieces, cut inside characters
    python mcp_raw_lines_server.py die         # half of the answer, then exit (code 3)
    python mcp_raw_lines_server.py broken      # the answer's line broken: `{broken` result
    python mcp_raw_lines_server.py json_log    # a log line in JSON before each answer
    python mcp_raw_lines_server.py huge        # text "N" answers N bytes of text, id first
    python mcp_raw_lines_server.py huge_id_last  # the same, the id after the result
    python mcp_raw_lines_server.py huge_notice   # a log notification of N bytes, then the answer
    python mcp_raw_lines_server.py huge_late     # as `huge`, after 6 s of silence

It lists one tool, `echo`, which answers its `text`.
"""

from __future__ import annotations

import json
import os
import sys
import time
from typing import Any

MODE = sys.argv[1] if len(sys.argv) > 1 else "crlf"
END = b"\r\n" if MODE == "crlf" else b"\n"
GARBAGE = b'{"jsonrpc": "2.0", "id": 7, "result": {broken\n'
JSON_LOG = '{"level": "info", "ok": true, "msg": "started é"}\n'.encode()
NOT_UTF8 = b"\xff\xfe"
"""Written into the answer's text in `latin1` mode, inside the JSON string."""

ECHO = {
    "name": "echo",
    "description": "Say the text back.",
    "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}}},
}


def write(data: bytes) -> None:
    """Write `data` to fd 1 at once, with no buffer between (a piece is one pipe write)."""
    while data:
        data = data[os.write(1, data) :]


def line(request: dict[str, Any], result: dict[str, Any]) -> bytes:
    answer = {"jsonrpc": "2.0", "id": request["id"], "result": result}
    return json.dumps(answer, ensure_ascii=False).encode() + END


def write_long(size: int) -> None:
    """`size` bytes of `x`, written a MiB at a time (the server holds no more)."""
    piece = b"x" * (1 << 20)
    for start in range(0, size, len(piece)):
        write(piece[: size - start])


def huge(request: dict[str, Any], size: int) -> None:
    """Answer `size` bytes of text (`huge_notice`: log them, then answer the number)."""
    if MODE == "huge_notice":
        notice = b'{"jsonrpc": "2.0", "method": "notifications/message", "params": '
        write(notice + b'{"level": "info", "data": "')
        write_long(size)
        write(b'"}}' + END)
        write(line(request, {"content": [{"type": "text", "text": str(size)}]}))
        return
    if MODE == "huge_late":
        time.sleep(6)
    request_id = b'"id": %d' % request["id"]
    head = b'{"jsonrpc": "2.0", ' + (b"" if MODE == "huge_id_last" else request_id + b", ")
    write(head + b'"result": {"content": [{"type": "text", "text": "')
    write_long(size)
    write(b'"}]}' + (b", " + request_id if MODE == "huge_id_last" else b"") + b"}" + END)


def call(request: dict[str, Any]) -> None:
    said = request["params"].get("arguments", {}).get("text", "")
    if MODE.startswith("huge") and said.isdigit():
        huge(request, int(said))
        return
    whole = line(request, {"content": [{"type": "text", "text": said}]})
    if MODE in ("garbage", "json_log"):
        write(GARBAGE if MODE == "garbage" else JSON_LOG)
        write(whole)
    elif MODE == "latin1":
        write(whole.replace(b'"text": "', b'"text": "' + NOT_UTF8, 1))
    elif MODE == "trickle":
        for start in range(0, len(whole), 7):  # 7: cuts the 2- to 4-byte characters
            write(whole[start : start + 7])
            time.sleep(0.0002)
    elif MODE == "broken":
        write(b'{"jsonrpc": "2.0", "id": %d, "result": {broken' % request["id"] + END)
    elif MODE == "die":
        write(whole[: len(whole) // 2])
        os._exit(3)
    else:
        write(whole)


def main() -> None:
    for raw in sys.stdin.buffer:
        request = json.loads(raw)
        if "id" not in request:  # a notification
            continue
        method = request.get("method")
        if method == "initialize":
            version = request["params"]["protocolVersion"]
            info = {"name": f"raw-{MODE}", "version": "1"}
            result = {"protocolVersion": version, "capabilities": {"tools": {}}, "serverInfo": info}
            write(line(request, result))
        elif method == "tools/list":
            write(line(request, {"tools": [ECHO]}))
        elif method == "tools/call":
            call(request)
        else:
            write(line(request, {}))


if __name__ == "__main__":
    main()
