"""A `make_agent` that raises an exception whose `__str__` raises (DESIGN §18, §8; after
openai-agents' tests/test_tracing_errors.py::test_run_propagates_exception_whose_str_raises):
every route answers the JSON 500 it gives any failure, naming the exception by its class,
and the server goes on. The guard wrote that answer's text with an f-string inside its
handler, so Uvicorn answered a bare "Internal Server Error" instead (or reset the
connection)."""

from __future__ import annotations

from typing import Any

import httpx2 as httpx
import pytest

from tests.serve._kit import serving
from yiemagent.serve import create_app
from yiemagent.sessions import InMemorySessionStore

pytestmark = pytest.mark.timeout(120)


class Unprintable(Exception):
    def __str__(self) -> str:
        raise RuntimeError("str exploded")


def make_agent(session_id: str) -> Any:
    raise Unprintable


ROUTES: list[tuple[str, dict[str, Any]]] = [
    ("/v1/sessions/s/runs", {"input": "hi"}),
    ("/api/chat", {"id": "c", "messages": [
        {"id": "m", "role": "user", "parts": [{"type": "text", "text": "hi"}]}]}),
    ("/ag-ui", {"threadId": "t", "runId": "r", "messages": [
        {"id": "u", "role": "user", "content": "hi"}]}),
    ("/v1/chat/completions", {"model": "m", "messages": [{"role": "user", "content": "hi"}]}),
]  # fmt: skip


def test_every_route_answers_a_json_500_naming_the_error() -> None:
    store = InMemorySessionStore()
    app = create_app(make_agent, session_store=store)
    with serving(app) as url, httpx.Client(base_url=url, timeout=30) as client:
        for path, body in ROUTES:
            answer = client.post(path, json=body)
            assert answer.status_code == 500, (path, answer.text)
            said = answer.json()["error"]
            said = said["message"] if isinstance(said, dict) else said  # OpenAI's shape
            assert said == "the server failed: Unprintable", path
        assert client.get("/healthz").status_code == 200
