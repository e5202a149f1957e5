"""A page of a `--cors` origin, in a real browser, talks to the agent as an OpenAI client
does: it names its session in `X-Session-Id` (a header the preflight must allow) and reads
the session the answer names (a header the response must expose)."""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx2 as httpx
import pytest

from tests._chromium import chromium_page
from tests._slow_load import slow_load_script
from tests.serve._kit import faux_server
from yiemagent.sessions import InMemorySessionStore

pytestmark = pytest.mark.timeout(300)

ASK = """async ([url, session]) => {
  const headers = {"content-type": "application/json"};
  if (session) headers["x-session-id"] = session;
  try {
    const answer = await fetch(url + "/v1/chat/completions", {
      method: "POST",
      headers,
      body: JSON.stringify({model: "yiem-agent", messages: [{role: "user", content: "hi"}]}),
    });
    const body = await answer.json();
    return {status: answer.status, session: answer.headers.get("x-session-id"),
            run: answer.headers.get("x-run-id"), text: body.choices[0].message.content};
  } catch (error) {
    return {error: String(error)};
  }
}"""


class _Blank(BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        body = b"<!doctype html><title>another origin</title>"
        self.send_response(200)
        self.send_header("content-type", "text/html")
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: Any) -> None:
        pass


@contextlib.contextmanager
def another_origin() -> Iterator[str]:
    """A blank page served from 127.0.0.1 on a port of its own: an origin the agent
    server is not."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Blank)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def test_a_cors_page_names_its_session_and_reads_the_one_answered(tmp_path: Path) -> None:
    store = InMemorySessionStore()
    with (
        another_origin() as origin,
        faux_server(store, cors=origin) as (url, _),
        chromium_page(tmp_path / "profile") as page,
    ):
        page.goto(origin + "/")
        named = page.evaluate(ASK, [url, "browser-1"])
        assert "error" not in named, named
        assert named["status"] == 200 and named["text"]
        assert named["session"] == "browser-1" and named["run"]
        assert [m.role for m in store.load("browser-1")] == ["user", "assistant"]

        one_off = page.evaluate(ASK, [url, None])
        assert "error" not in one_off, one_off
        assert one_off["status"] == 200 and one_off["session"]  # a one-off session, named
        assert one_off["session"] != "browser-1"


LOADING_MODEL = "local/qwen2.5-coder-0.5b"
"""The model the slow-loading script resolves (it loads nothing)."""

WHILE_LOADING = """async (url) => {
  const seen = {};
  for (const [name, options] of [
    ["health", {}],
    ["run", {method: "POST", headers: {"content-type": "application/json", "x-session-id": "s"},
             body: JSON.stringify({input: "hi"})}],
  ]) {
    try {
      const answer = await fetch(url + (name === "health" ? "/healthz" : "/v1/sessions/s/runs"),
                                 options);
      seen[name] = {status: answer.status, body: await answer.json()};
    } catch (error) {
      seen[name] = {error: String(error)};
    }
  }
  return seen;
}"""


def test_a_cors_page_reads_the_503_while_the_embedded_model_loads(tmp_path: Path) -> None:
    """While the embedded model loads every request is answered 503, by a server of its own
    that sent no CORS headers: a `--cors` page's fetch failed instead of reading the 503."""
    script = slow_load_script(tmp_path, resolving="yiemagent.cli.serve", announce=True)
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    with another_origin() as origin, chromium_page(tmp_path / "profile") as page:
        command = [sys.executable, str(script), "serve", "--port", str(port), "--cors", origin,
                   "--sessions", str(tmp_path / "s.db")]  # fmt: skip
        env = {**os.environ, "PYTHONUNBUFFERED": "1"}
        proc = subprocess.Popen(command, stderr=subprocess.PIPE, text=True, env=env)
        try:
            assert proc.stderr is not None
            said = [proc.stderr.readline(), proc.stderr.readline()]
            assert said[-1].strip() == "loading", said
            page.goto(origin + "/")
            seen = page.evaluate(WHILE_LOADING, f"http://127.0.0.1:{port}")
            assert seen["health"] == {
                "status": 503,
                "body": {"ok": False, "loading": LOADING_MODEL},
            }
            assert seen["run"]["status"] == 503, seen
            assert "is loading" in seen["run"]["body"]["error"]
            elsewhere = httpx.options(  # an origin not listed gets no CORS headers
                f"http://127.0.0.1:{port}/v1/sessions/s/runs",
                headers={
                    "Origin": "http://elsewhere.test",
                    "Access-Control-Request-Method": "POST",
                },
            )
            assert elsewhere.status_code == 503
            assert "access-control-allow-origin" not in elsewhere.headers
        finally:
            proc.send_signal(signal.SIGINT)
            try:
                proc.communicate(timeout=30)
            finally:
                if proc.poll() is None:
                    proc.kill()
                    proc.wait()
