"""The AG-UI SDKs' null-omission rule (ag-ui-protocol/ag-ui sdks/python/tests/
test_null_omission.py and the shared fixtures/null-omission.json): a producer leaves out a
field that has no value instead of writing `null`, since the TypeScript client's schemas
take an absent optional field but refuse a `null` one. The AI SDK's UI message chunks are
strict objects with optional fields too. Checked on the raw server-sent events of every
kind of run the faux agents make (DESIGN §18): tool calls, thinking, a call held for
approval, a sub-agent, a failed model call."""

from __future__ import annotations

import json
from typing import Any

import httpx2 as httpx
import pytest

from tests.serve._kit import faux_server, serving
from yiemagent import Agent
from yiemagent.ai.providers.faux import FauxModel, faux_message
from yiemagent.serve import create_app
from yiemagent.sessions import InMemorySessionStore

pytestmark = pytest.mark.timeout(120)

PROMPTS = ["weather Oslo Lima", "think twice", "launch Mir", "delegate say hi", "hello"]


def nulls(value: Any, path: str = "$") -> list[str]:
    """The JSON paths in `value` that hold null."""
    if value is None:
        return [path]
    if isinstance(value, dict):
        return [p for k, v in value.items() for p in nulls(v, f"{path}.{k}")]
    if isinstance(value, list):
        return [p for i, v in enumerate(value) for p in nulls(v, f"{path}[{i}]")]
    return []


def raw_events(client: httpx.Client, path: str, body: dict[str, Any]) -> list[Any]:
    with client.stream("POST", path, json=body) as response:
        assert response.status_code == 200, response.read()
        lines = [line[5:].strip() for line in response.iter_lines() if line.startswith("data:")]
    return [json.loads(line) for line in lines if line != "[DONE]"]


def agui_body(thread: str, text: str) -> dict[str, Any]:
    return {"threadId": thread, "runId": f"run-{thread}",
            "messages": [{"id": "u", "role": "user", "content": text}]}  # fmt: skip


def ui_body(chat: str, text: str) -> dict[str, Any]:
    return {"id": chat, "messages": [
        {"id": "m", "role": "user", "parts": [{"type": "text", "text": text}]}]}  # fmt: skip


def test_no_event_of_any_run_writes_null() -> None:
    store = InMemorySessionStore()
    with faux_server(store) as (url, _), httpx.Client(base_url=url) as client:
        seen: list[str] = []
        for i, text in enumerate(PROMPTS):
            for path, body in (("/ag-ui", agui_body(f"t{i}", text)),
                               ("/api/chat", ui_body(f"c{i}", text))):  # fmt: skip
                events = raw_events(client, path, body)
                seen += [e["type"] for e in events]
                assert [p for e in events for p in nulls(e)] == [], (path, text)
    # the runs covered what they were meant to
    wanted = {"TOOL_CALL_RESULT", "REASONING_START", "CUSTOM", "RUN_FINISHED",
              "tool-output-available", "reasoning-start", "tool-approval-request"}  # fmt: skip
    assert wanted <= set(seen)


def test_a_failed_run_writes_no_null() -> None:
    store = InMemorySessionStore()
    down = faux_message(stop_reason="error", error_message="the model is down")
    fm = FauxModel([down] * 4)

    def make_agent(session_id: str) -> Agent[Any]:
        return Agent(model=fm.model, stream_fn=fm.stream_fn, session_store=store,
                     session_id=session_id)  # fmt: skip

    app = create_app(make_agent, session_store=store)
    with serving(app) as url, httpx.Client(base_url=url) as client:
        agui = raw_events(client, "/ag-ui", agui_body("t", "hi"))
        ui = raw_events(client, "/api/chat", ui_body("c", "hi"))
    assert agui[-1]["type"] == "RUN_ERROR" and any(c["type"] == "error" for c in ui)
    assert [p for e in agui + ui for p in nulls(e)] == []
