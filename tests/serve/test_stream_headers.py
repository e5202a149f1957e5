"""Every streamed route of `yiem serve` tells a proxy in front of it not to hold the stream
back (DESIGN §18): the run's events, the AG-UI stream, the UI message stream and a
streamed chat completion are `text/event-stream`, sent with `X-Accel-Buffering: no`
(nginx and the proxies that copy it pass each event on at once) and `Cache-Control:
no-store`, and never compressed, also for a client that accepts gzip (a compressing layer
collects the stream before it sends any of it). Each event is on the wire while the run
still goes on: the first arrives before the run's slow tool has finished."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import httpx2 as httpx
import pytest

from tests.serve._kit import Tools, faux_server
from tests.serve.test_protocols import agui_body
from yiemagent.sessions import InMemorySessionStore

pytestmark = pytest.mark.timeout(120)

TOOL_S = 3.0
"""How long the run's tool takes: the first event must come well before it is done."""


def run_events(client: httpx.Client) -> tuple[str, str, dict[str, Any]]:
    run_id = client.post("/v1/sessions/s1/runs", json={"input": "weather Oslo"}).json()["run_id"]
    return "GET", f"/v1/runs/{run_id}/events", {}


def agui(client: httpx.Client) -> tuple[str, str, dict[str, Any]]:
    return "POST", "/ag-ui", {"json": agui_body("s2", "r2", "weather Oslo")}


def ui_messages(client: httpx.Client) -> tuple[str, str, dict[str, Any]]:
    part = {"type": "text", "text": "weather Oslo"}
    message = {"id": "m1", "role": "user", "parts": [part]}
    return "POST", "/api/chat", {"json": {"id": "s3", "messages": [message]}}


def completions(client: httpx.Client) -> tuple[str, str, dict[str, Any]]:
    messages = [{"role": "user", "content": "weather Oslo"}]
    body = {"model": "m", "stream": True, "messages": messages}
    return "POST", "/v1/chat/completions", {"json": body}


ROUTES: dict[str, Callable[[httpx.Client], tuple[str, str, dict[str, Any]]]] = {
    "run-events": run_events,
    "ag-ui": agui,
    "ui-messages": ui_messages,
    "chat-completions": completions,
}


@pytest.mark.parametrize("route", list(ROUTES))
def test_a_stream_is_marked_for_proxies_and_sent_as_it_goes(route: str) -> None:
    store = InMemorySessionStore()
    with (
        faux_server(store, Tools(delay_s=TOOL_S)) as (url, _),
        httpx.Client(base_url=url, timeout=60, headers={"Accept-Encoding": "gzip"}) as client,
    ):
        method, path, kwargs = ROUTES[route](client)
        started = time.monotonic()
        with client.stream(method, path, **kwargs) as response:
            assert response.status_code == 200, response.read()
            headers = response.headers
            lines = response.iter_lines()
            first = next(line for line in lines if line.startswith("data:"))
            first_after_s = time.monotonic() - started
            rest = [line for line in lines if line.startswith("data:")]
        ended_after_s = time.monotonic() - started
    assert headers["content-type"].startswith("text/event-stream")
    assert headers["x-accel-buffering"] == "no"
    assert "no-store" in headers["cache-control"] or "no-cache" in headers["cache-control"]
    assert "content-encoding" not in headers
    assert first and rest
    assert ended_after_s >= TOOL_S  # the run waited for its tool
    assert first_after_s < ended_after_s - TOOL_S / 2  # the first event did not
