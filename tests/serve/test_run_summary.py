"""`GET /v1/runs/{rid}` (docs/serve.md, "The HTTP API"): the run's summary has the fields
the table names, `hold_text` saying whether output guardrails hold its answers (then no
`message_update` reaches the stream), and the session's active run has the same form. The
summary carried `hold_text` while the table did not name it. Through Uvicorn on
127.0.0.1."""

from __future__ import annotations

from typing import Any

import httpx2 as httpx
import pytest

from tests.serve._kit import Tools, brain, run_events, serving
from yiemagent import Agent, GuardrailContext
from yiemagent.ai.providers.faux import FauxModel
from yiemagent.serve import create_app
from yiemagent.sessions import InMemorySessionStore

pytestmark = pytest.mark.timeout(120)

FIELDS = {
    "run_id",
    "session_id",
    "events",
    "ended",
    "end_reason",
    "hold_text",
    "output_tool",
    "output_tools",
    "created_ms",
}


def no_secrets(context: GuardrailContext) -> bool:
    return "secret" in context.text


@pytest.mark.parametrize("guarded", [False, True])
def test_a_runs_summary_names_its_fields_and_whether_text_is_held(guarded: bool) -> None:
    store = InMemorySessionStore()
    fm = FauxModel([brain] * 100, chunk_size=4)

    def make_agent(session_id: str) -> Agent[Any]:
        return Agent(
            model=fm.model, stream_fn=fm.stream_fn, tools=Tools(delay_s=1.0).all(),
            output_guardrails=[no_secrets] if guarded else [],
            session_store=store, session_id=session_id,
        )  # fmt: skip

    app = create_app(make_agent, session_store=store)
    with serving(app) as url, httpx.Client(base_url=url, timeout=30) as client:
        started = client.post("/v1/sessions/s/runs", json={"input": "weather Oslo"})
        run_id = started.json()["run_id"]
        active = client.get("/v1/sessions/s").json()["active_run"]  # its tool takes 1 s
        events = [data for _, data in run_events(client, run_id)]
        summary = client.get(f"/v1/runs/{run_id}").json()

    assert set(summary) == set(active) == FIELDS
    assert active["run_id"] == run_id and active["hold_text"] is guarded
    assert summary["hold_text"] is guarded and summary["ended"] is True
    assert summary["events"] == len(events) and summary["end_reason"] == "stop"
    assert any(e["type"] == "message_update" for e in events) is not guarded
