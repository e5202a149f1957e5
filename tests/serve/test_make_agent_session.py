"""`make_agent(session_id)` must build the agent of that session on the app's store
(DESIGN §18: `Agent(session_store=store, session_id=session_id, ...)`). A factory that
gets it wrong answered every run as if all were well while the conversation went where
the app never looks: with no store it was never kept (the session read 404 right after
its answer), with a fixed session id every user's run went into one shared transcript,
and on another store the app could not list or read it. Each is now a 500 naming the
mistake, logged in one line, before anything runs or is stored. Through Uvicorn on
127.0.0.1."""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

import httpx2 as httpx
import pytest

from tests.serve._kit import brain, run_events, serving, start_run
from yiemagent import Agent
from yiemagent.ai.providers.faux import FauxModel
from yiemagent.serve import create_app
from yiemagent.sessions import InMemorySessionStore

pytestmark = pytest.mark.timeout(120)

FIX = "build it with Agent(session_store=<the app's session_store>, session_id=session_id, ...)"


def factories(
    store: InMemorySessionStore, other: InMemorySessionStore
) -> dict[str, tuple[Callable[[str], Agent[Any]], str]]:
    """Each wrong factory with what the answer says of it."""
    fm = FauxModel([brain] * 100)

    def agent(**options: Any) -> Agent[Any]:
        return Agent(model=fm.model, stream_fn=fm.stream_fn, **options)

    return {
        "no store": (
            lambda sid: agent(),
            "make_agent('alice') returned an agent without a session store, so its runs "
            f"would not be kept; {FIX}",
        ),
        "one session for all": (
            lambda sid: agent(session_store=store, session_id="main"),
            "make_agent('alice') returned the agent of session 'main', so sessions would "
            f"share one transcript; {FIX}",
        ),
        "another store": (
            lambda sid: agent(session_store=other, session_id=sid),
            "make_agent('alice') returned an agent on another session store than the app's, "
            f"which the app would not list or read; {FIX}",
        ),
    }


@pytest.mark.parametrize("mistake", ["no store", "one session for all", "another store"])
def test_a_factory_that_builds_another_sessions_agent_is_a_500_naming_it(
    mistake: str, caplog: pytest.LogCaptureFixture
) -> None:
    store, other = InMemorySessionStore(), InMemorySessionStore()
    make_agent, said = factories(store, other)[mistake]
    caplog.set_level(logging.ERROR, logger="yiemagent.serve")
    with (
        serving(create_app(make_agent, session_store=store)) as url,
        httpx.Client(base_url=url) as client,
    ):
        for method, path, body in [
            ("POST", "/v1/sessions/alice/runs", {"input": "hello"}),
            ("GET", "/v1/sessions/alice/approvals", None),
        ]:
            answer = client.request(method, path, json=body)
            assert answer.status_code == 500, (path, answer.text)
            assert answer.json() == {"error": f"the server failed: ConfigError: {said}"}
    assert store.list_sessions() == [] and other.list_sessions() == []
    logged = [r.getMessage() for r in caplog.records if r.name.startswith("yiemagent.serve")]
    assert logged and all(line.endswith(said) for line in logged), logged


def test_a_factory_that_builds_the_sessions_agent_on_the_apps_store_runs() -> None:
    store = InMemorySessionStore()
    fm = FauxModel([brain] * 10)

    def make_agent(session_id: str) -> Agent[Any]:
        return Agent(
            model=fm.model, stream_fn=fm.stream_fn, session_store=store, session_id=session_id
        )

    with (
        serving(create_app(make_agent, session_store=store)) as url,
        httpx.Client(base_url=url) as client,
    ):
        assert run_events(client, start_run(client, "alice", "hello"))[-1][1]["reason"] == "stop"
        assert client.get("/v1/sessions/alice").status_code == 200
    assert store.list_sessions() == ["alice"]
