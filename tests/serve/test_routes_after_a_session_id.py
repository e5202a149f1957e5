"""A route under a session id sent with a method it does not take (`docs/serve.md`): the
path as sent routes, so `/v1/sessions/b/runs` is the runs route of session "b" and GET of it
is a 405 saying which method it takes, not "no session 'b/runs'"; a DELETE there never
clears a session. An id ending like a route is still its own session when escaped."""

from __future__ import annotations

from urllib.parse import quote

import httpx2 as httpx
import pytest

from tests.serve._kit import error_of, faux_server, run_events
from yiemagent.sessions import InMemorySessionStore

ROUTES = [
    ("GET", "runs", "POST"),
    ("DELETE", "runs", "POST"),
    ("DELETE", "approvals", "GET, HEAD"),
    ("GET", "approvals/call_1", "POST"),
    ("DELETE", "approvals/call_1", "POST"),
    ("GET", "resume", "POST"),
    ("DELETE", "timeline", "GET, HEAD"),
]


@pytest.mark.parametrize(("method", "route", "allowed"), ROUTES)
def test_a_route_after_a_session_id_with_another_method_is_a_405(
    method: str, route: str, allowed: str
) -> None:
    store = InMemorySessionStore()
    with faux_server(store) as (url, _), httpx.Client(base_url=url) as client:
        started = client.post("/v1/sessions/b/runs", json={"input": "hello"})
        assert started.status_code == 202, started.text
        run_events(client, started.json()["run_id"])

        answer = client.request(method, f"/v1/sessions/b/{route}")

        assert answer.status_code == 405, answer.text
        assert answer.headers["allow"] == allowed
        path = f"/v1/sessions/b/{route}"
        assert error_of(answer) == f"{path} does not take {method}; send {allowed}"
        assert store.load("b") != []  # a DELETE there cleared nothing
        assert client.get("/v1/sessions/b").status_code == 200


def test_an_id_named_like_a_route_is_reached_escaped_and_a_plain_one_as_is() -> None:
    store = InMemorySessionStore()
    with faux_server(store) as (url, _), httpx.Client(base_url=url) as client:
        for sid in ("b/runs", "a/b"):
            started = client.post(f"/v1/sessions/{quote(sid, safe='')}/runs", json={"input": "hi"})
            assert started.status_code == 202, started.text
            run_events(client, started.json()["run_id"])
        escaped = client.get("/v1/sessions/b%2Fruns")
        assert escaped.status_code == 200 and escaped.json()["session_id"] == "b/runs"
        plain = client.get("/v1/sessions/a/b")  # not ambiguous: no route is named "b"
        assert plain.status_code == 200 and plain.json()["session_id"] == "a/b"
