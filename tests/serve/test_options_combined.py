"""`create_app`'s options together (DESIGN §18; docs/serve.md "Security", "Behind your own
app", "The event stream"): a token, a `--cors` origin and a mount under `/agent`, serving a
team. The preflight needs no token; the 401, 413 and 404 answers carry the origin's CORS
headers so its page can read them; another origin gets none even with the token; and the
team's sub-agent events reach the run's stream as `nested_agent` events, their
`message_update`s as slim as the top run's. Through Uvicorn on 127.0.0.1."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from typing import Any

import httpx2 as httpx
import pytest
from starlette.applications import Starlette
from starlette.routing import Mount

from tests.serve._kit import Tools, brain, serving, sse
from yiemagent import Agent
from yiemagent.ai.providers.faux import FauxModel
from yiemagent.serve import create_app
from yiemagent.sessions import InMemorySessionStore

pytestmark = pytest.mark.timeout(120)

ORIGIN = "http://shop.example:3000"
TOKEN = {"Authorization": "Bearer s3cret"}


def test_token_cors_and_a_mount_together_serve_a_team() -> None:
    store = InMemorySessionStore()
    fm = FauxModel([brain] * 1000, chunk_size=4)

    def make_agent(session_id: str) -> Agent[Any]:
        helper = Agent("helper", fm.model, stream_fn=fm.stream_fn, name="helper")
        return Agent(
            "lead", fm.model, stream_fn=fm.stream_fn, name="lead",
            tools=[helper.as_tool(), *Tools().all()], session_store=store, session_id=session_id,
        )  # fmt: skip

    inner = create_app(make_agent, session_store=store, token="s3cret", cors=[ORIGIN])

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        async with inner.router.lifespan_context(inner):
            yield

    outer = Starlette(routes=[Mount("/agent", app=inner)], lifespan=lifespan)
    with serving(outer) as url, httpx.Client(base_url=url, timeout=30) as client:
        preflight = client.options(
            "/agent/v1/sessions/s/runs",
            headers={
                "Origin": ORIGIN,
                "Access-Control-Request-Method": "POST",
                "Access-Control-Request-Headers": "authorization,content-type,x-session-id",
            },
        )
        assert preflight.status_code == 200
        assert preflight.headers["access-control-allow-origin"] == ORIGIN
        assert "authorization" in preflight.headers["access-control-allow-headers"].lower()

        from_page = {"Origin": ORIGIN}
        refused = client.post("/agent/v1/sessions/s/runs", json={"input": "hi"}, headers=from_page)
        too_big = client.post(
            "/agent/v1/sessions/s/runs",
            content=b"x" * (9 * 1024 * 1024),
            headers={**from_page, **TOKEN, "Content-Type": "application/json"},
        )
        missing = client.get("/agent/v1/sessions/nobody", headers={**from_page, **TOKEN})
        for answer, status in ((refused, 401), (too_big, 413), (missing, 404)):
            assert answer.status_code == status
            assert answer.headers["access-control-allow-origin"] == ORIGIN

        elsewhere = client.get(
            "/agent/v1/sessions", headers={"Origin": "http://evil.example", **TOKEN}
        )
        assert elsewhere.status_code == 200  # the token decides; the browser reads nothing
        assert "access-control-allow-origin" not in elsewhere.headers

        started = client.post(
            "/agent/v1/sessions/s/runs",
            json={"input": "delegate say hello to everyone"},
            headers={**from_page, **TOKEN},
        )
        assert started.status_code == 202, started.text
        assert started.headers["access-control-expose-headers"] == "X-Session-Id, X-Run-Id"
        events_url = started.json()["events_url"]
        assert events_url.startswith("/agent/v1/runs/")
        with client.stream("GET", events_url, headers={**from_page, **TOKEN}) as response:
            assert response.headers["access-control-allow-origin"] == ORIGIN
            events = [data for _, data in sse(response)]
        assert events[-1]["type"] == "agent_end"
        nested = [e for e in events if e["type"] == "nested_agent"]
        assert {tuple(e["agent_path"]) for e in nested} == {("lead", "helper")}
        updates = [e["event"] for e in nested if e["event"]["type"] == "message_update"]
        assert updates and all(set(u) == {"type", "assistant_message_event"} for u in updates)
        result = [e for e in events if e["type"] == "tool_execution_end"]
        assert result[0]["result"]["content"][0]["text"] == "echo: say hello to everyone"
