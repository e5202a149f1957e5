"""`yiem mcp serve` over stdio and a line the SDK cannot read as JSON-RPC (DESIGN §8, §12):
not JSON, JSON that is no JSON-RPC message, or a request holding a lone surrogate escape
(`"\\ud800"`, which JavaScript's JSON.stringify writes for a lone surrogate and Python's json
reads, but the SDK's parser refuses). The SDK dropped such a line with a debug log, so the
client waited for ever for its answer; over HTTP the same body is answered with a JSON-RPC
error. Each gets one now, with the request's id when the line has one, and the server
serves on."""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

import pytest

from tests.mcp.conftest import SERVE_TOOLS

pytestmark = pytest.mark.timeout(90)

INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 0,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "raw", "version": "1"},
    },
}


def _call(request_id: int, name: str, arguments: Any) -> bytes:
    params = {"name": name, "arguments": arguments}
    return json.dumps(
        {"jsonrpc": "2.0", "id": request_id, "method": "tools/call", "params": params}
    ).encode()


def test_every_unreadable_request_line_is_answered_and_the_server_serves_on() -> None:
    lines = [
        json.dumps(INITIALIZE).encode(),
        b'{"jsonrpc": "2.0", "method": "notifications/initialized"}',
        _call(1, "add", {"a": "x\ud800", "b": 1}),  # json.dumps writes the escape "\ud800"
        b"this is not JSON",
        b'{"jsonrpc": "2.0", "id": 3, "method": 5}',
        b'{"jsonrpc": "2.0", "method": 5}',  # a broken notification: nothing to answer
        _call(4, "add", {"a": 40, "b": 2}),
    ]
    server = subprocess.Popen(
        [sys.executable, "-m", "yiemagent.cli.main", "mcp", "serve", "--tools", SERVE_TOOLS],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert server.stdin is not None and server.stdout is not None
    answers: list[dict[str, Any]] = []
    try:
        for line in lines:  # stdin stays open: closing it ends the server
            server.stdin.write(line + b"\n")
            server.stdin.flush()
        for _ in range(5):  # a line the server leaves unanswered blocks here (the timeout)
            answers.append(json.loads(server.stdout.readline()))
    finally:
        server.kill()
        server.wait(30)
    by_id = {answer.get("id"): answer for answer in answers}
    assert sorted(by_id, key=str) == sorted([0, 1, None, 3, 4], key=str), answers
    assert by_id[1]["error"]["code"] == -32700  # a parse error, as over HTTP
    assert "hex escape" in by_id[1]["error"]["message"]
    assert by_id[None]["error"]["code"] == -32700
    assert by_id[3]["error"]["code"] == -32600  # invalid request
    assert by_id[4]["result"]["content"][0]["text"] == "42"
