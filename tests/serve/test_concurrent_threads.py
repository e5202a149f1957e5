"""Requests of several AG-UI threads served at the same time by one server (DESIGN §18):
each run is its own session's agent, so runs that overlap share no state. Each stream
carries only its own thread's run, tool call and answer, and each session stores only its
own transcript; a second request on a thread while its run goes on is a 409, and the run
it would have disturbed ends as if it had been alone."""

from __future__ import annotations

import threading
from typing import Any

import httpx2 as httpx
import pytest
from ag_ui import core as agui

from tests.serve._kit import Tools, faux_server, sse, text_of
from tests.serve.test_protocols import EVENT, agui_body, check_agui_order
from yiemagent.sessions import InMemorySessionStore

pytestmark = pytest.mark.timeout(120)

THREADS = 5
CITIES = [f"City{k}" for k in range(THREADS)]


def stream_run(url: str, thread_id: str, city: str, opened: threading.Event) -> list[Any]:
    """Post one AG-UI run asking the weather in `city`; its events, read to the end.
    `opened` is set once the run has started on the server."""
    body = agui_body(thread_id, f"run-{thread_id}", f"weather {city}")
    with (
        httpx.Client(base_url=url, timeout=60) as client,
        client.stream("POST", "/ag-ui", json=body) as response,
    ):
        assert response.status_code == 200, response.read()
        events = []
        for _, data in sse(response):
            events.append(EVENT.validate_python(data))
            opened.set()
        return events


def test_runs_of_several_threads_at_once_keep_to_their_own_thread() -> None:
    store = InMemorySessionStore()
    tools = Tools(delay_s=0.5)  # every run is inside its tool call while the others start
    with faux_server(store, tools, delay_s=0.02) as (url, _):
        results: dict[str, list[Any]] = {}
        failures: list[BaseException] = []

        def one(k: int) -> None:
            try:
                results[f"t{k}"] = stream_run(url, f"t{k}", CITIES[k], threading.Event())
            except BaseException as exc:
                failures.append(exc)

        workers = [threading.Thread(target=one, args=(k,)) for k in range(THREADS)]
        for worker in workers:
            worker.start()
        for worker in workers:
            worker.join(90)
        assert not failures, failures
    for k, city in enumerate(CITIES):
        events = results[f"t{k}"]
        check_agui_order(events)
        assert {e.thread_id for e in events if hasattr(e, "thread_id")} == {f"t{k}"}
        assert {e.run_id for e in events if hasattr(e, "run_id")} == {f"run-t{k}"}
        args = "".join(e.delta for e in events if isinstance(e, agui.ToolCallArgsEvent))
        assert city in args and all(other not in args for other in CITIES if other != city)
        answer = "".join(e.delta for e in events if isinstance(e, agui.TextMessageContentEvent))
        assert answer == f"Done: sunny in {city}"
        stored = store.load(f"t{k}")
        assert [m.role for m in stored] == ["user", "assistant", "toolResult", "assistant"]
        assert text_of(stored[-1]) == f"Done: sunny in {city}"


def test_a_second_request_on_a_busy_thread_is_409_and_the_first_run_goes_on() -> None:
    store = InMemorySessionStore()
    with faux_server(store, Tools(delay_s=1.0)) as (url, _):
        opened = threading.Event()
        first: list[Any] = []
        worker = threading.Thread(
            target=lambda: first.extend(stream_run(url, "t", "Oslo", opened)), daemon=True
        )
        worker.start()
        assert opened.wait(60)
        with httpx.Client(base_url=url, timeout=60) as client:
            again = client.post("/ag-ui", json=agui_body("t", "run-again", "weather Lima"))
        assert again.status_code == 409, again.text
        worker.join(60)
    assert isinstance(first[-1], agui.RunFinishedEvent)
    answer = "".join(e.delta for e in first if isinstance(e, agui.TextMessageContentEvent))
    assert answer == "Done: sunny in Oslo"
    assert "Lima" not in str([text_of(m) for m in store.load("t")])
