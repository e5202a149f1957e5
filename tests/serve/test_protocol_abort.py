"""A run aborted while the model streams a tool call, seen through AG-UI and the AI SDK's
UI message stream (DESIGN §18): the protocols' clients reject a run that finishes with a
text message or a tool call still open (`@ag-ui/client`'s event verifier), so every one
opened is closed, each call gets its result, and the run ends as cancelled / `abort`."""

from __future__ import annotations

from typing import Any

import httpx2 as httpx
import pytest
from ag_ui import core as agui

from tests.serve._kit import faux_server, sse
from tests.serve.test_protocols import EVENT, check_agui_order, user
from yiemagent.sessions import InMemorySessionStore

pytestmark = pytest.mark.timeout(120)

# a long city name: its call's arguments stream in many small pieces
CITY = "Llanfairpwllgwyngyllgogerychwyrndrobwllllantysiliogogogoch" * 3


def read_until_args_then_abort(
    client: httpx.Client, path: str, body: dict[str, Any], *, started: str
) -> list[Any]:
    """Stream `path`; at the first event of type `started` abort the run (`X-Run-Id`);
    return every event data to the stream's end."""
    items: list[Any] = []
    with client.stream("POST", path, json=body) as response:
        assert response.status_code == 200, response.read()
        run_id = response.headers["x-run-id"]
        aborted = False
        for _, data in sse(response):
            items.append(data)
            if not aborted and isinstance(data, dict) and data.get("type") == started:
                assert client.post(f"/v1/runs/{run_id}/abort").status_code in (200, 202)
                aborted = True
    assert aborted
    return items


def test_agui_closes_every_message_and_call_of_an_aborted_run() -> None:
    store = InMemorySessionStore()
    with (
        faux_server(store, delay_s=0.02) as (url, _),
        httpx.Client(base_url=url, timeout=60) as client,
    ):
        body = {
            "threadId": "t",
            "runId": "r",
            "messages": [{"id": "u", "role": "user", "content": f"weather {CITY}"}],
        }
        items = read_until_args_then_abort(client, "/ag-ui", body, started="TOOL_CALL_ARGS")
    events = [EVENT.validate_python(d) for d in items]
    check_agui_order(events)  # no message or call left open at the run's end
    finished = events[-1]
    assert isinstance(finished, agui.RunFinishedEvent)
    assert finished.outcome is not None and finished.outcome.type == "cancelled"
    starts = {e.tool_call_id for e in events if isinstance(e, agui.ToolCallStartEvent)}
    results = {e.tool_call_id: e.content for e in events if isinstance(e, agui.ToolCallResultEvent)}
    assert starts and set(results) == starts  # the call cut off is answered too
    assert all("aborted" in text for text in results.values())


def test_the_ui_message_stream_of_an_aborted_run_answers_each_call_and_aborts() -> None:
    store = InMemorySessionStore()
    with (
        faux_server(store, delay_s=0.02) as (url, _),
        httpx.Client(base_url=url, timeout=60) as client,
    ):
        body = {"id": "c", "messages": [user(f"weather {CITY}")]}
        items = read_until_args_then_abort(client, "/api/chat", body, started="tool-input-delta")
    assert items[-1] == "[DONE]"
    chunks: list[dict[str, Any]] = items[:-1]
    kinds = [c["type"] for c in chunks]
    assert kinds[0] == "start" and kinds[-1] == "abort" and "finish" not in kinds
    started = {c["toolCallId"] for c in chunks if c["type"] == "tool-input-start"}
    available = {c["toolCallId"] for c in chunks if c["type"] == "tool-input-available"}
    errors = {c["toolCallId"]: c["errorText"] for c in chunks if c["type"] == "tool-output-error"}
    assert started and available == started and set(errors) == started
    assert all("aborted" in text for text in errors.values())
    assert kinds.count("start-step") == kinds.count("finish-step")
