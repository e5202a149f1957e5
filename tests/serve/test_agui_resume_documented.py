"""The AG-UI interrupt and `resume` entry as docs/serve.md shows them, run against Uvicorn
on 127.0.0.1: the documented `RUN_FINISHED` is what a held call ends a run with, and the
documented body (its `interruptId` the run's own call id) resumes the run; each payload
the docs list approves or rejects as they say."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import httpx2 as httpx
import pytest

from tests.serve._kit import faux_server, sse
from yiemagent.sessions import InMemorySessionStore
from yiemagent.types import ToolResultMessage

pytestmark = pytest.mark.timeout(120)

DOCS = Path(__file__).parents[2] / "docs" / "serve.md"
DOC_ID = "call_4844c7dd507c4b20"


def documented() -> tuple[dict[str, Any], dict[str, Any]]:
    """The documented `RUN_FINISHED` event and resume body."""
    text = DOCS.read_text(encoding="utf-8")
    section = text[text.index("An interrupt and its answer") :]
    finished, body = re.findall(r"```json\n(.*?)```", section, re.S)[:2]
    return json.loads(finished), json.loads(body)


def post(client: httpx.Client, body: dict[str, Any]) -> list[dict[str, Any]]:
    with client.stream("POST", "/ag-ui", json=body) as response:
        assert response.status_code == 200, response.read()
        return [event for _, event in sse(response)]


def hold(client: httpx.Client, thread: str) -> str:
    """Start a run on `thread` that ends held at a `launch` call; returns the call's id,
    after checking the event against the documented one."""
    finished, _ = documented()
    user = {"id": "m1", "role": "user", "content": "launch Apollo"}
    events = post(client, {"threadId": thread, "runId": "run-1", "messages": [user]})
    (call_id,) = [e["toolCallId"] for e in events if e["type"] == "TOOL_CALL_START"]
    expected = json.loads(json.dumps(finished).replace(DOC_ID, call_id))
    expected["threadId"] = thread
    assert events[-1] == expected
    return str(call_id)


def test_the_documented_resume_body_runs_the_held_call() -> None:
    _, body = documented()
    store = InMemorySessionStore()
    with faux_server(store) as (url, tools), httpx.Client(base_url=url, timeout=30) as client:
        call_id = hold(client, body["threadId"])
        assert tools.launched == []
        resume = json.loads(json.dumps(body).replace(DOC_ID, call_id))
        events = post(client, resume)
    results = [e["content"] for e in events if e["type"] == "TOOL_CALL_RESULT"]
    assert results == ["launched Apollo"]
    answer = "".join(e["delta"] for e in events if e["type"] == "TEXT_MESSAGE_CONTENT")
    assert answer == "Done: launched Apollo"
    assert events[-1]["type"] == "RUN_FINISHED" and events[-1]["outcome"]["type"] == "success"
    assert tools.launched == ["Apollo"]


@pytest.mark.parametrize(
    ("status", "payload", "approved", "reason"),
    [
        ("resolved", None, True, None),
        ("resolved", True, True, None),
        ("resolved", {"approve": True}, True, None),
        ("resolved", False, False, None),
        ("resolved", {"approve": False, "reason": "not on a Friday"}, False, "not on a Friday"),
        ("cancelled", None, False, None),
    ],
)
def test_each_documented_payload_decides_as_said(
    status: str, payload: Any, approved: bool, reason: str | None
) -> None:
    _, body = documented()
    store = InMemorySessionStore()
    with faux_server(store) as (url, tools), httpx.Client(base_url=url, timeout=30) as client:
        call_id = hold(client, "t")
        entry: dict[str, Any] = {"interruptId": call_id, "status": status}
        if payload is not None:
            entry["payload"] = payload
        post(client, {**body, "threadId": "t", "resume": [entry]})
    assert tools.launched == (["Apollo"] if approved else [])
    (result,) = [m for m in store.load("t") if isinstance(m, ToolResultMessage)]
    assert result.is_error is not approved
    if reason is not None:
        assert reason in result.content[0].text  # type: ignore[union-attr]


def test_an_interrupt_id_that_is_no_held_call_is_refused() -> None:
    _, body = documented()
    store = InMemorySessionStore()
    with faux_server(store) as (url, tools), httpx.Client(base_url=url, timeout=30) as client:
        hold(client, "t")
        unknown = {"interruptId": "call_nope", "status": "resolved"}
        refused = client.post("/ag-ui", json={**body, "threadId": "t", "resume": [unknown]})
        assert refused.status_code == 400
        assert "call_nope" in refused.json()["error"]
    assert tools.launched == []
