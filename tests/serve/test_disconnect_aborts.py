"""A client of a protocol route stops a run by going away (DESIGN §18): `useChat`'s
`stop()`, a cancelled OpenAI stream and CopilotKit's stop close the connection, since those
protocols have no abort endpoint. So `POST /v1/chat/completions` (streamed or not),
`POST /ag-ui` and `POST /api/chat` abort their run when the client disconnects: the run
ends "aborted" long before its model would have finished, every tool call it made is
answered in the stored transcript, and the session takes the next request at once. A
reader of `GET /v1/runs/{rid}/events` that goes away does not stop the run: that stream is
resumable with Last-Event-ID."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import httpx2 as httpx
import pytest

from tests.serve._kit import faux_server, sse, start_run, wait_done
from tests.serve.test_protocols import user
from yiemagent.sessions import InMemorySessionStore

pytestmark = pytest.mark.timeout(180)

DELAY_S = 0.05
"""The faux model's pause after each 8-character chunk of a reply."""
LONG = "word " * 2400
"""A prompt whose echo streams for over 70 s (1500 chunks): a run that ends within the
tests' 40 s was stopped, not finished."""
CITY = "Llanfairpwllgwyngyllgogerychwyrndrobwllllantysiliogogogoch" * 20
"""A city whose `weather` call's arguments stream for over 8 s."""
ENDED_WITHIN_S = 40.0


@pytest.fixture
def server() -> Iterator[tuple[str, httpx.Client]]:
    store = InMemorySessionStore()
    with (
        faux_server(store, delay_s=DELAY_S) as (url, _),
        httpx.Client(base_url=url, timeout=60) as client,
    ):
        yield url, client


def close_after(url: str, path: str, body: dict[str, Any], headers: dict[str, str], n: int) -> str:
    """POST `body` to `path` as a stream on a connection of its own, read `n` events and
    close the connection; the run's id (`X-Run-Id`)."""
    with (
        httpx.Client(base_url=url, timeout=60) as own,
        own.stream("POST", path, json=body, headers=headers) as response,
    ):
        assert response.status_code == 200, response.read()
        events = sse(response)
        for _ in range(n):
            next(events)
        return response.headers["x-run-id"]


def session_after(client: httpx.Client, session_id: str) -> dict[str, Any]:
    """`GET /v1/sessions/{sid}` once the session has no active run (within
    `ENDED_WITHIN_S`)."""
    deadline = time.monotonic() + ENDED_WITHIN_S
    while True:
        session: dict[str, Any] = client.get(f"/v1/sessions/{session_id}").json()
        if session["active_run"] is None:
            return session
        assert time.monotonic() < deadline, f"the run goes on: {session['active_run']}"
        time.sleep(0.05)


def check_every_call_answered(session: dict[str, Any]) -> None:
    calls = [
        block["id"]
        for message in session["messages"]
        if message["role"] == "assistant"
        for block in message["content"]
        if block["type"] == "toolCall"
    ]
    results = [m["tool_call_id"] for m in session["messages"] if m["role"] == "toolResult"]
    assert calls and sorted(results) == sorted(calls)


def test_a_closed_chat_completions_stream_aborts_its_run(
    server: tuple[str, httpx.Client],
) -> None:
    url, client = server
    body = {"model": "m", "stream": True, "messages": [{"role": "user", "content": LONG}]}
    headers = {"X-Session-Id": "oa"}
    run_id = close_after(url, "/v1/chat/completions", body, headers, n=3)
    assert wait_done(client, run_id, ENDED_WITHIN_S)["end_reason"] == "aborted"
    again = {"model": "m", "messages": [{"role": "user", "content": "hello"}]}
    answer = client.post("/v1/chat/completions", json=again, headers=headers)
    assert answer.status_code == 200, answer.text
    assert answer.json()["choices"][0]["message"]["content"] == "echo: hello"


def test_a_chat_completion_left_before_its_answer_aborts_its_run(
    server: tuple[str, httpx.Client],
) -> None:
    url, client = server
    body = {"model": "m", "messages": [{"role": "user", "content": LONG}]}
    headers = {"X-Session-Id": "plain"}
    with (
        httpx.Client(base_url=url, timeout=httpx.Timeout(60, read=1.0)) as impatient,
        pytest.raises(httpx.ReadTimeout),
    ):
        impatient.post("/v1/chat/completions", json=body, headers=headers)
    session = session_after(client, "plain")
    assert [e["reason"] for e in session["run_ends"]] == ["aborted"]
    again = {"model": "m", "messages": [{"role": "user", "content": "hello"}]}
    answer = client.post("/v1/chat/completions", json=again, headers=headers)
    assert answer.status_code == 200, answer.text


def test_a_closed_agui_stream_aborts_its_run_and_answers_its_call(
    server: tuple[str, httpx.Client],
) -> None:
    url, client = server

    def run_input(run_id: str, text: str) -> dict[str, Any]:
        message = {"id": run_id, "role": "user", "content": text}
        return {"threadId": "thread", "runId": run_id, "messages": [message]}

    # RUN_STARTED, TOOL_CALL_START, then the call's arguments stream for seconds
    run_id = close_after(url, "/ag-ui", run_input("r1", f"weather {CITY}"), {}, n=3)
    assert wait_done(client, run_id, ENDED_WITHIN_S)["end_reason"] == "aborted"
    check_every_call_answered(session_after(client, "thread"))
    with client.stream("POST", "/ag-ui", json=run_input("r2", "hello")) as response:
        assert response.status_code == 200, response.read()
        kinds = [data["type"] for _, data in sse(response)]
    assert kinds[-1] == "RUN_FINISHED"


def test_a_closed_ui_message_stream_aborts_its_run_and_answers_its_call(
    server: tuple[str, httpx.Client],
) -> None:
    url, client = server
    first = {"id": "chat", "messages": [user(f"weather {CITY}")]}
    # start, start-step, tool-input-start, then the arguments stream for seconds
    run_id = close_after(url, "/api/chat", first, {}, n=4)
    assert wait_done(client, run_id, ENDED_WITHIN_S)["end_reason"] == "aborted"
    check_every_call_answered(session_after(client, "chat"))
    again = {"id": "chat", "messages": [*first["messages"], user("hello")]}
    with client.stream("POST", "/api/chat", json=again) as response:
        assert response.status_code == 200, response.read()
        items = [data for _, data in sse(response)]
    assert items[-1] == "[DONE]" and items[-2]["type"] == "finish"


def test_a_reader_leaving_the_event_stream_leaves_the_run_going(
    server: tuple[str, httpx.Client],
) -> None:
    url, client = server
    run_id = start_run(client, "api", "word " * 160)  # its echo streams for 5 s or more
    with (
        httpx.Client(base_url=url, timeout=60) as own,
        own.stream("GET", f"/v1/runs/{run_id}/events") as response,
    ):
        events = sse(response)
        while next(events)[1]["type"] != "message_update":
            pass
    summary = wait_done(client, run_id, 120)
    assert summary["end_reason"] == "stop"
