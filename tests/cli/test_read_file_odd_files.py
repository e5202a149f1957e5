"""The example `read_file` on what a folder may hold besides files and folders (DESIGN §8):
a named pipe, whose opening waited for a writer for ever (the run hung until killed, the
tool has no timeout), symbolic links that form a loop, and a path holding a lone surrogate.
Each is a tool error the model can read, in words, and the run goes on."""

from __future__ import annotations

import json
import os
from pathlib import Path

from tests._yiem import yiem_in
from tests.ai.servers import ReplayServer, openai_chunks, sse_reply


def _call(index: int, path: str) -> dict[str, object]:
    arguments = json.dumps({"path": path})  # a lone surrogate goes as its \ud800 escape
    call = {"index": index, "id": f"c{index}", "type": "function"}
    return {"tool_calls": [{**call, "function": {"name": "read_file", "arguments": arguments}}]}


def test_a_pipe_a_link_loop_and_a_lone_surrogate_are_tool_errors_and_the_run_ends(
    tmp_path: Path,
) -> None:
    os.mkfifo(tmp_path / "pipe")
    os.symlink("loop2", tmp_path / "loop1")
    os.symlink("loop1", tmp_path / "loop2")
    (tmp_path / "note.txt").write_text("hello")
    paths = ["pipe", "loop1", "x\ud800.txt", "note.txt"]
    with ReplayServer() as server:
        calls = [_call(i, path) for i, path in enumerate(paths)]
        server.enqueue(sse_reply(openai_chunks(*calls, finish_reason="tool_calls")))
        server.enqueue(sse_reply(openai_chunks({"content": "done"})))
        model = ["--model", "openai-compatible/m", "--base-url", server.url + "/v1"]
        # it hung for ever on the pipe; the run takes seconds
        done = yiem_in(tmp_path, "run", "read them", *model, timeout=120)
        assert done.returncode == 0, done.stderr
        assert "done" in done.stdout.splitlines(), done.stdout
        sent = server.requests[1].body["messages"]
    results = {m["tool_call_id"]: m["content"] for m in sent if m["role"] == "tool"}
    assert results == {
        "c0": "'pipe' is no regular file (a pipe, a socket or a device)",
        "c1": "'loop1' cannot be followed: its symbolic links form a loop",
        "c2": "'x\\ud800.txt' is no file name: it holds a lone surrogate",
        "c3": "hello",
    }, results
