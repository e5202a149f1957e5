"""A page of a `--cors` origin, in a real browser, talks to the agent as an OpenAI client
does: it names its session in `X-Session-Id` (a header the preflight must allow) and reads
the session the answer names (a header the response must expose)."""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from tests._chromium import chromium_page
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
