"""The HTTP API of `yiem serve` (DESIGN §18) through a real Uvicorn server on 127.0.0.1:
runs and their numbered, resumable event streams, the one-writer rule (409), steering,
follow-ups and abort, sessions, approvals and resume, the token and the body cap."""

from __future__ import annotations

import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any
from urllib.parse import quote

import httpx2 as httpx
import pytest

from tests.serve._kit import (
    Tools,
    error_of,
    faux_agents,
    faux_server,
    run_events,
    serving,
    start_run,
    wait_done,
)
from yiemagent import Agent
from yiemagent.ai.providers.faux import FauxModel, faux_message, faux_text
from yiemagent.serve import create_app
from yiemagent.sessions import InMemorySessionStore, SqliteSessionStore
from yiemagent.types import AssistantMessage, TextContent, ToolResultMessage, UserMessage

pytestmark = pytest.mark.timeout(120)


def types(events: list[tuple[int, dict[str, Any]]]) -> list[str]:
    return [data["type"] for _, data in events]


def test_a_run_streams_every_event_numbered_and_is_stored(tmp_path: Path) -> None:
    with (
        SqliteSessionStore(tmp_path / "s.db") as store,
        faux_server(store) as (url, _),
        httpx.Client(base_url=url) as client,
    ):
        assert client.get("/healthz").json() == {"ok": True}
        run_id = start_run(client, "trip", "weather Oslo Lima")
        events = run_events(client, run_id)
        assert [number for number, _ in events] == list(range(1, len(events) + 1))
        kinds = types(events)
        assert kinds[0] == "agent_start" and kinds[-1] == "agent_end"
        assert kinds.count("tool_execution_start") == 2
        assert kinds.count("tool_execution_update") == 2
        assert events[-1][1]["reason"] == "stop"
        updates = [d for _, d in events if d["type"] == "message_update"]
        assert all(set(d) == {"type", "assistant_message_event"} for d in updates)
        assert all("partial" not in d["assistant_message_event"] for d in updates)
        starts = [d["assistant_message_event"] for d in updates]
        starts = [e["tool_call"] for e in starts if e["type"] == "toolcall_start"]
        assert [(c["type"], c["name"]) for c in starts] == [("toolCall", "weather")] * 2
        final = events[-1][1]["messages"][-1]
        assert final["content"][0]["text"] == "Done: sunny in Oslo; sunny in Lima"

        assert client.get(f"/v1/runs/{run_id}").json()["end_reason"] == "stop"
        listed = client.get("/v1/sessions").json()["sessions"]
        assert listed == [{"session_id": "trip", "title": "weather Oslo Lima", "active_run": None}]
        session = client.get("/v1/sessions/trip").json()
        roles = [m["role"] for m in session["messages"]]
        assert roles == ["user", "assistant", "toolResult", "toolResult", "assistant"]
        page = client.get("/v1/sessions/trip/timeline")
        assert page.status_code == 200 and "yiem trace: session trip" in page.text
        one = client.get(f"/v1/sessions/trip/timeline?run={run_id}")
        assert one.status_code == 200 and '"end_reason": "stop"' in one.text
        # a session that does not exist is a 404 here too, as GET /v1/sessions/{sid} says
        # (it was an empty timeline page with 200)
        nobody = client.get("/v1/sessions/nobody/timeline")
        assert nobody.status_code == 404 and nobody.json() == {"error": "no session 'nobody'"}

        # the next run continues the stored session
        second = start_run(client, "trip", "thanks")
        assert run_events(client, second)[-1][1]["messages"][-1]["content"][0]["text"] == (
            "echo: thanks"
        )
    with SqliteSessionStore(tmp_path / "s.db") as store:
        assert len(store.load("trip")) == 7


def test_the_stream_resumes_after_last_event_id() -> None:
    store = InMemorySessionStore()
    with faux_server(store, delay_s=0.01) as (url, _), httpx.Client(base_url=url) as client:
        run_id = start_run(client, "s", "weather Oslo Lima Rome")
        first: list[tuple[int, dict[str, Any]]] = []
        with client.stream("GET", f"/v1/runs/{run_id}/events") as response:
            from tests.serve._kit import sse

            for event_id, data in sse(response):
                first.append((int(event_id or 0), data))
                if len(first) == 5:
                    break  # the client goes away mid-run
        rest = run_events(client, run_id, after=5)
        whole = run_events(client, run_id)
        assert [n for n, _ in rest] == list(range(6, len(whole) + 1))
        assert first + rest == whole
        assert rest[-1][1]["type"] == "agent_end"
        # ?after= for clients that cannot set the header; beyond the end: nothing but the end
        assert client.get(f"/v1/runs/{run_id}/events?after={len(whole)}").text.strip() == ""
        bad = client.get(f"/v1/runs/{run_id}/events", headers={"Last-Event-ID": "x"})
        assert bad.status_code == 400


def test_a_second_run_on_a_busy_session_is_409() -> None:
    store = InMemorySessionStore()
    # the tool takes 5 s: room for the checks below on a loaded machine
    with faux_server(store, Tools(delay_s=5.0)) as (url, _), httpx.Client(base_url=url) as client:
        run_id = start_run(client, "s", "weather Oslo")
        busy = client.post("/v1/sessions/s/runs", json={"input": "again"})
        assert busy.status_code == 409
        assert run_id in busy.json()["error"]
        assert client.post("/v1/sessions/other/runs", json={"input": "hi"}).status_code == 202
        assert client.get("/v1/sessions/s/approvals").json()["approvals"] == []
        assert client.delete("/v1/sessions/s").status_code == 409
        run_events(client, run_id)  # to the agent_end: the session is free at once
        assert client.post("/v1/sessions/s/runs", json={"input": "again"}).status_code == 202


HOLD_LEASE = """
import sys, time
from yiemagent.sessions import SqliteSessionStore
SqliteSessionStore(sys.argv[1]).acquire(sys.argv[2])
print("held", flush=True)
time.sleep(120)
"""


def test_a_session_another_program_holds_is_a_409_said_to_an_http_client(
    tmp_path: Path,
) -> None:
    """A `yiem chat --session s` open on the server's store: the 409 told the page's user to
    "close that Agent (await agent.close())" and "use another session_id", the store's
    advice to a Python program."""
    db = tmp_path / "s.db"
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLD_LEASE, str(db), "s"], stdout=subprocess.PIPE, text=True
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        with (
            SqliteSessionStore(db) as store,
            faux_server(store) as (url, _),
            httpx.Client(base_url=url) as client,
        ):
            busy = client.post("/v1/sessions/s/runs", json={"input": "hi"})
            assert busy.status_code == 409
            assert busy.json()["error"] == (
                f"session 's' is being written by process {holder.pid} on host "
                f"{socket.gethostname()} (a yiem chat, another server or a program using the "
                "same session store); try again once it has closed the session, or use "
                "another session"
            )
    finally:
        holder.kill()
        holder.wait()


def test_steer_follow_up_and_abort() -> None:
    store = InMemorySessionStore()
    tools = Tools(delay_s=0.8)
    with faux_server(store, tools) as (url, _), httpx.Client(base_url=url) as client:
        run_id = start_run(client, "s", "weather Oslo")
        time.sleep(0.3)  # the tool is running
        assert client.post(f"/v1/runs/{run_id}/steer", json={"text": "and Paris?"}).is_success
        assert client.post(f"/v1/runs/{run_id}/follow_up", json={"text": "bye"}).is_success
        events = run_events(client, run_id)
        answers = [
            d["message"]["content"][0]["text"]
            for _, d in events
            if d["type"] == "message_end"
            and d["message"]["role"] == "assistant"
            and d["message"]["content"]
            and d["message"]["content"][0]["type"] == "text"
        ]
        assert answers == ["echo: and Paris?", "echo: bye"]
        late = client.post(f"/v1/runs/{run_id}/steer", json={"text": "late"})
        assert late.status_code == 409
        assert client.post(f"/v1/runs/{run_id}/steer", json={}).status_code == 400

        stopped = start_run(client, "s", "weather Rome")
        time.sleep(0.3)
        assert client.post(f"/v1/runs/{stopped}/abort").json()["ok"] is True
        end = run_events(client, stopped)[-1][1]
        assert end["type"] == "agent_end" and end["reason"] == "aborted"
    messages = store.load("s")
    calls = [c.id for m in messages if isinstance(m, AssistantMessage) for c in m.tool_calls]
    results = [m.tool_call_id for m in messages if isinstance(m, ToolResultMessage)]
    assert sorted(calls) == sorted(results)  # every call answered, the aborted one too


def test_approve_reject_and_resume() -> None:
    store = InMemorySessionStore()
    with faux_server(store) as (url, tools), httpx.Client(base_url=url) as client:
        run_id = start_run(client, "s", "launch Apollo")
        assert run_events(client, run_id)[-1][1]["reason"] == "awaiting_approval"
        held = client.get("/v1/sessions/s/approvals").json()["approvals"]
        assert [(a["tool_name"], a["arguments"], a["decision"]) for a in held] == [
            ("launch", {"city": "Apollo"}, None)
        ]
        call_id = held[0]["tool_call_id"]
        refused = client.post("/v1/sessions/s/runs", json={"input": "something else"})
        assert refused.status_code == 409 and "approval" in refused.json()["error"]
        assert client.post("/v1/sessions/s/resume").status_code == 409  # no decision yet
        assert (
            client.post("/v1/sessions/s/approvals/nope", json={"approve": True}).status_code == 404
        )
        assert client.post(f"/v1/sessions/s/approvals/{call_id}", json={}).status_code == 400
        lone = b'{"approve": false, "reason": "bad \\ud800 surrogate"}'  # cannot be stored
        refused = client.post(f"/v1/sessions/s/approvals/{call_id}", content=lone)
        assert refused.status_code == 400 and "lone surrogates" in refused.json()["error"]
        decided = client.post(f"/v1/sessions/s/approvals/{call_id}", json={"approve": True})
        assert decided.json()["approvals"][0]["decision"] == {"approve": True, "reason": None}
        assert tools.launched == []
        resumed = client.post("/v1/sessions/s/resume")
        assert resumed.status_code == 202
        end = run_events(client, resumed.json()["run_id"])[-1][1]
        assert end["reason"] == "stop"
        assert end["messages"][-1]["content"][0]["text"] == "Done: launched Apollo"
        assert tools.launched == ["Apollo"]

        second = start_run(client, "s", "launch Zond")
        run_events(client, second)
        call_id = client.get("/v1/sessions/s/approvals").json()["approvals"][0]["tool_call_id"]
        body = {"approve": False, "reason": "not today"}
        assert client.post(f"/v1/sessions/s/approvals/{call_id}", json=body).is_success
        end = run_events(client, client.post("/v1/sessions/s/resume").json()["run_id"])[-1][1]
        assert "not today" in end["messages"][-1]["content"][0]["text"]
        assert tools.launched == ["Apollo"]


def test_resume_with_nothing_to_resume_starts_no_run() -> None:
    store = InMemorySessionStore()
    with faux_server(store) as (url, _), httpx.Client(base_url=url) as client:
        unknown = client.post("/v1/sessions/nobody/resume")
        assert unknown.status_code == 404 and unknown.json() == {"error": "no session 'nobody'"}
        assert store.list_sessions() == []
        run_events(client, start_run(client, "s", "hello"))
        before = store.load("s")
        answered = client.post("/v1/sessions/s/resume")
        assert answered.status_code == 409
        assert answered.json()["error"].startswith("nothing to resume: no tool call is held")
        assert client.get("/v1/sessions/s").json()["active_run"] is None
        assert store.load("s") == before
        store.append("cut", UserMessage("weather Oslo"))  # a run that died after the prompt
        resumed = client.post("/v1/sessions/cut/resume")
        assert resumed.status_code == 202
        assert run_events(client, resumed.json()["run_id"])[-1][1]["reason"] == "stop"


def test_a_client_that_disconnects_leaves_the_run_going(tmp_path: Path) -> None:
    with SqliteSessionStore(tmp_path / "s.db") as store:
        with faux_server(store, Tools(delay_s=3.0)) as (url, _), httpx.Client(base_url=url) as c:
            run_id = start_run(c, "s", "weather Oslo")
            with c.stream("GET", f"/v1/runs/{run_id}/events") as response:
                for line in response.iter_lines():
                    if line.startswith("id: 3"):
                        break  # hang up while the tool runs
            assert c.get(f"/v1/runs/{run_id}").json()["ended"] is False
            # a run nobody watches still finishes and is stored
            unwatched = start_run(c, "t", "weather Lima")
            assert wait_done(c, run_id)["end_reason"] == "stop"
            assert wait_done(c, unwatched)["end_reason"] == "stop"
            events = run_events(c, run_id, after=3)  # and its stream is still there
            assert events[0][0] == 4 and events[-1][1]["type"] == "agent_end"
        last = store.load("s")[-1]
        assert isinstance(last, AssistantMessage) and last.text == "Done: sunny in Oslo"
        last = store.load("t")[-1]
        assert isinstance(last, AssistantMessage) and last.text == "Done: sunny in Lima"


def test_the_token_guards_every_route_but_health() -> None:
    store = InMemorySessionStore()
    with faux_server(store, token="s3cret") as (url, _):
        with httpx.Client(base_url=url) as anonymous:
            assert anonymous.get("/healthz").status_code == 200
            for method, path in [
                ("GET", "/v1/sessions"),
                ("POST", "/v1/sessions/s/runs"),
                ("GET", "/v1/runs/x/events"),
                ("GET", "/v1/sessions/s/approvals"),
                ("DELETE", "/v1/sessions/s"),
            ]:
                response = anonymous.request(method, path, json={"input": "hi"})
                assert response.status_code == 401, path
                assert response.headers["www-authenticate"] == "Bearer"
            wrong = anonymous.get("/v1/sessions", headers={"Authorization": "Bearer nope"})
            assert wrong.status_code == 401
        auth = {"Authorization": "Bearer s3cret"}
        with httpx.Client(base_url=url, headers=auth) as client:
            assert client.get("/v1/sessions").status_code == 200
            run_id = start_run(client, "s", "hello")
            assert run_events(client, run_id)[-1][1]["type"] == "agent_end"


def test_without_a_token_pages_of_other_sites_cannot_drive_the_server() -> None:
    """DNS rebinding (another site's name resolving to 127.0.0.1: the request says that
    name in `Host`) and cross-site requests a browser sends without asking CORS (a form, a
    `no-cors` fetch with a text/plain body) reach a loopback server with no token."""
    store = InMemorySessionStore()
    body = b'{"input": "hello"}'
    plain = {"content-type": "text/plain"}
    with (
        faux_server(store, cors="http://localhost:3000") as (url, _),
        httpx.Client(base_url=url) as client,
    ):
        port = url.rsplit(":", 1)[1]
        for method, path in [("GET", "/v1/sessions"), ("POST", "/v1/sessions/s/runs")]:
            for host in [f"attacker.example:{port}", "[nonsense", ""]:
                rebound = client.request(method, path, content=body, headers={"host": host})
                assert rebound.status_code == 421, (host, rebound.text)
                assert "no token" in rebound.json()["error"]
            origin = {"origin": "http://attacker.example", **plain}
            forged = client.request(method, path, content=body, headers=origin)
            assert forged.status_code == 403 and "no token" in forged.json()["error"]
        assert store.list_sessions() == []
        for host in [f"localhost:{port}", f"127.0.0.1:{port}"]:
            own = {"host": host, "origin": f"http://{host}", **plain}
            run_events(client, client.post("/v1/sessions/own/runs", content=body,
                                            headers=own).json()["run_id"])  # fmt: skip
        allowed = {"origin": "http://localhost:3000", **plain}
        assert client.post("/v1/sessions/cors/runs", content=body, headers=allowed).is_success
        assert client.get("/healthz", headers={"host": "10.0.0.7"}).status_code == 200
    with (
        faux_server(store, allowed_hosts=["agents.internal"]) as (url, _),
        httpx.Client(base_url=url) as client,
    ):
        assert client.get("/v1/sessions", headers={"host": "agents.internal"}).is_success
    with faux_server(store, token="t") as (url, _), httpx.Client(base_url=url) as client:
        behind = {"host": "agents.example", "authorization": "Bearer t"}
        assert client.get("/v1/sessions", headers=behind).is_success  # the token guards


def test_bodies_over_the_cap_are_413_and_bad_input_is_400() -> None:
    store = InMemorySessionStore()
    with faux_server(store, max_body_bytes=2000) as (url, _), httpx.Client(base_url=url) as client:
        big = client.post("/v1/sessions/s/runs", json={"input": "x" * 5000})
        assert big.status_code == 413
        assert client.post("/v1/sessions/s/runs", json={"input": "x" * 100}).status_code == 202
        assert client.post("/v1/sessions/s/runs", content=b"{not json").status_code == 400
        assert client.post("/v1/sessions/s2/runs", json={"input": ""}).status_code == 400
        assert (
            client.post("/v1/sessions/s2/runs", json={"input": "a", "images": 3}).status_code == 400
        )
        assert client.get("/v1/runs/nope/events").status_code == 404
        assert client.get("/v1/sessions/nope").status_code == 404
        assert store.load("s2") == []
        host, port = url.removeprefix("http://").split(":")
        # a chunked body (no Content-Length) is counted as it arrives
        with socket.create_connection((host, int(port))) as raw:
            chunk = b"x" * 1500
            raw.sendall(
                b"POST /v1/sessions/s3/runs HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                b"Transfer-Encoding: chunked\r\nContent-Type: application/json\r\n\r\n"
                + b"%x\r\n%s\r\n" % (len(chunk), chunk) * 2
                + b"0\r\n\r\n"
            )
            assert raw.recv(200).startswith(b"HTTP/1.1 413")


def test_delete_clears_a_session(tmp_path: Path) -> None:
    store = InMemorySessionStore()
    with faux_server(store) as (url, _), httpx.Client(base_url=url) as client:
        run_events(client, start_run(client, "gone", "hello"))
        assert client.delete("/v1/sessions/gone").json() == {"ok": True, "session_id": "gone"}
        assert client.get("/v1/sessions/gone").status_code == 404
        assert store.load("gone") == []
        for unknown in ["gone", "never-was"]:  # cleared, or never there: 404, as GET
            answer = client.delete(f"/v1/sessions/{unknown}")
            assert answer.status_code == 404, answer.text
            assert answer.json() == {"error": f"no session {unknown!r}"}
    with (
        SqliteSessionStore(tmp_path / "s.db") as held,
        faux_server(held) as (url, _),
        httpx.Client(base_url=url) as client,
    ):
        run_events(client, start_run(client, "s", "launch Apollo"))  # held for approval
        assert held.load_state("s", "held_tool_calls") is not None
        assert client.delete("/v1/sessions/s").status_code == 200
        assert held.load("s") == [] and held.load_state("s", "held_tool_calls") is None
        assert client.get("/v1/sessions/s/approvals").json()["approvals"] == []


def test_an_interleaved_session_is_a_409_that_names_it_and_delete_clears_it(
    tmp_path: Path,
) -> None:
    with SqliteSessionStore(tmp_path / "s.db") as store:  # two writers left it so
        store.append("mixed", UserMessage("hi"))
        store.append("mixed", ToolResultMessage("zz", "weather", [TextContent("stray")]))
        store.append("mixed", AssistantMessage([TextContent("hello")]))
    with (
        SqliteSessionStore(tmp_path / "s.db") as store,
        faux_server(store) as (url, _),
        httpx.Client(base_url=url) as client,
    ):
        chat = {"messages": [{"role": "user", "content": "hi"}]}
        for answer in [
            client.post("/v1/sessions/mixed/runs", json={"input": "hi"}),
            client.post("/v1/sessions/mixed/resume"),
            client.get("/v1/sessions/mixed/approvals"),
            client.post("/v1/chat/completions", json=chat, headers={"X-Session-Id": "mixed"}),
        ]:
            assert answer.status_code == 409, answer.text
            assert "interleaved transcript" in error_of(answer), answer.text
        assert len(client.get("/v1/sessions/mixed").json()["messages"]) == 3  # still readable
        assert len(store.load("mixed")) == 3  # nothing changed
        assert client.delete("/v1/sessions/mixed").status_code == 200
        assert store.load("mixed") == []
        run_events(client, start_run(client, "mixed", "hello again"))
        assert [m.role for m in store.load("mixed")] == ["user", "assistant"]


def test_a_session_with_a_row_that_does_not_load_is_a_409_naming_the_row(
    tmp_path: Path,
) -> None:
    import sqlite3

    with SqliteSessionStore(tmp_path / "s.db") as store:
        store.append("edited", UserMessage("hi"))
        store.append("edited", AssistantMessage([TextContent("hello")]))
        store.append("fine", UserMessage("untouched"))
    with sqlite3.connect(tmp_path / "s.db") as conn:  # a hand edit broke the JSON
        conn.execute("UPDATE messages SET data = '{\"role\": ' WHERE session_id = 'edited'")
    with (
        SqliteSessionStore(tmp_path / "s.db") as store,
        faux_server(store) as (url, _),
        httpx.Client(base_url=url) as client,
    ):
        for answer in [
            client.post("/v1/sessions/edited/runs", json={"input": "hi"}),
            client.get("/v1/sessions/edited"),
        ]:
            assert answer.status_code == 409, answer.text
            assert "seq=1: not valid JSON" in error_of(answer), answer.text
            assert "two writers" not in error_of(answer)
        listed = client.get("/v1/sessions").json()["sessions"]
        assert sorted(s["session_id"] for s in listed) == ["edited", "fine"]
        assert client.delete("/v1/sessions/edited").status_code == 200
        assert store.load("edited") == [] and len(store.load("fine")) == 1


def test_sessions_that_are_done_leave_nothing_behind_in_the_server() -> None:
    """A long-lived server keeps no per-session state for sessions it is not running: each
    `/v1/chat/completions` request without `X-Session-Id` is a session of its own, removed
    from the store too once answered."""
    store = InMemorySessionStore()
    app = create_app(faux_agents(store, Tools()), session_store=store)
    with serving(app) as url, httpx.Client(base_url=url) as client:
        chat = {"messages": [{"role": "user", "content": "hi"}]}
        for n in range(20):
            assert client.post("/v1/chat/completions", json=chat).status_code == 200
            assert client.get(f"/v1/sessions/nobody-{n}/approvals").status_code == 200
        run_events(client, start_run(client, "kept", "launch Apollo"))  # held for approval
        wait_done(client, start_run(client, "busy", "hello"))
    assert app.state.hub._slots == {}
    assert sorted(store.list_sessions()) == ["busy", "kept"]


def test_a_long_streamed_answer_costs_events_in_proportion_to_its_length() -> None:
    """Each update of a streamed reply carries its delta, not the reply so far: a 20 kB
    answer in 4-character chunks was 100 MB of events, kept in memory and sent to each
    reader."""
    store = InMemorySessionStore()
    answer = "word " * 4000
    fm = FauxModel([answer, faux_message(faux_text("x"))] * 2, chunk_size=4)

    def make_agent(session_id: str) -> Agent[Any]:
        return Agent(model=fm.model, stream_fn=fm.stream_fn, session_store=store,
                     session_id=session_id)  # fmt: skip

    with (
        serving(create_app(make_agent, session_store=store)) as url,
        httpx.Client(base_url=url) as client,
    ):
        run_id = start_run(client, "long", "tell me everything")
        with client.stream("GET", f"/v1/runs/{run_id}/events") as response:
            size = sum(len(chunk) for chunk in response.iter_bytes())
        deltas = "".join(
            d["assistant_message_event"]["delta"]
            for _, d in run_events(client, run_id)
            if d["type"] == "message_update"
            and d["assistant_message_event"]["type"] == "text_delta"
        )
    assert deltas == answer
    assert size < 100 * len(answer)  # about 80 bytes of event per 4-character delta


def test_a_failure_of_the_server_is_a_json_500_and_the_connection_stays_usable(
    caplog: pytest.LogCaptureFixture,
) -> None:
    store = InMemorySessionStore()
    made = faux_agents(store, Tools())

    def make_agent(session_id: str) -> Agent[Any]:
        if session_id == "broken":
            raise RuntimeError("the agent factory broke")
        return made(session_id)

    with (
        serving(create_app(make_agent, session_store=store)) as url,
        httpx.Client(base_url=url) as client,
    ):
        chat = {"messages": [{"role": "user", "content": "hi"}]}
        for answer in [
            client.post("/v1/sessions/broken/runs", json={"input": "hi"}),
            client.post("/v1/chat/completions", json=chat, headers={"X-Session-Id": "broken"}),
            client.get("/v1/sessions/broken/approvals"),
        ]:  # on one keep-alive connection: each request after a failure is answered
            assert answer.status_code == 500, answer.text
            text = "the server failed: RuntimeError: the agent factory broke"
            if answer.request.url.path == "/v1/chat/completions":  # OpenAI's error shape
                error = {"message": text, "type": "server_error", "param": None, "code": None}
                assert answer.json() == {"error": error}
            else:
                assert answer.json() == {"error": text}
        run_events(client, start_run(client, "fine", "hello"))
    assert "the agent factory broke" in caplog.text  # with its traceback, in the log


class CountingStore(SqliteSessionStore):
    """A real SQLite store that counts the transcripts read."""

    loads = 0

    def load(self, session_id: str) -> list[Any]:
        self.loads += 1
        return super().load(session_id)


def test_listing_sessions_reads_each_transcript_once_not_at_every_listing(
    tmp_path: Path,
) -> None:
    """The page lists the sessions after every run; a title is the session's first user
    message, and reading it read the whole transcript, of each of 100 sessions, each time."""
    store = CountingStore(tmp_path / "s.db")
    with (
        store,
        faux_server(store) as (url, _),
        httpx.Client(base_url=url) as client,
    ):
        for n in range(3):
            run_events(client, start_run(client, f"s{n}", f"question {n}"))
        before = store.loads
        first = client.get("/v1/sessions").json()
        assert [s["title"] for s in first["sessions"]] == ["question 2", "question 1", "question 0"]
        assert store.loads - before == 3
        run_events(client, start_run(client, "s1", "more"))
        before = store.loads
        assert client.get("/v1/sessions").json() == first
        assert store.loads == before  # nothing read again
        assert client.delete("/v1/sessions/s1").is_success
        run_events(client, start_run(client, "s1", "a new start"))
        titles = {
            s["session_id"]: s["title"] for s in client.get("/v1/sessions").json()["sessions"]
        }
        assert titles["s1"] == "a new start"


def test_a_session_id_holding_a_slash_is_reachable_on_every_route() -> None:
    """smaramwbc/statewave#124: a session id with "/" (which `yiem chat --session work/plan`
    and any Agent accept) was listed but unreachable: its %2F reaches routing decoded, so
    no single-segment route matched and every call was a plain-text 404."""
    store = InMemorySessionStore()
    with faux_server(store) as (url, tools), httpx.Client(base_url=url) as client:
        for sid in ("work/plan", "a/b/c"):
            walk_every_route(client, store, sid)
        assert tools.launched == ["Apollo", "Apollo"]


def walk_every_route(client: httpx.Client, store: InMemorySessionStore, sid: str) -> None:
    """Drive session `sid` (escaped in the path) through every session route: a run held
    for approval, the session, its approvals, the approval, the resumed run, the timeline,
    and its deletion; each answers for `sid` itself."""
    path = f"/v1/sessions/{quote(sid, safe='')}"
    started = client.post(f"{path}/runs", json={"input": "launch Apollo"})
    assert started.status_code == 202, started.text
    run_events(client, started.json()["run_id"])  # held for approval
    session = client.get(path)
    assert session.status_code == 200, session.text
    assert session.json()["session_id"] == sid
    [held] = client.get(f"{path}/approvals").json()["approvals"]
    answer = client.post(f"{path}/approvals/{held['tool_call_id']}", json={"approve": True})
    assert answer.status_code == 200, answer.text
    resumed = client.post(f"{path}/resume")
    assert resumed.status_code == 202, resumed.text
    run_events(client, resumed.json()["run_id"])
    assert client.get(f"{path}/timeline").status_code == 200
    assert client.delete(path).status_code == 200 and store.load(sid) == []


@pytest.mark.parametrize(
    "sid", ["plan/timeline", "x/approvals", "x/runs", "x/resume", "x/approvals/c1", "100%2F/a%b"]
)
def test_a_session_id_ending_like_a_route_is_its_own_session(sid: str) -> None:
    """A session id holds "/" (e9ce519), so "plan/timeline" sent escaped
    (`/v1/sessions/plan%2Ftimeline`) reached routing as `/v1/sessions/plan/timeline`:
    GET of the session answered with the timeline of "plan" (and "x/approvals" with the
    approvals of "x"). An escaped "/" is now part of the id on every route."""
    store = InMemorySessionStore()
    with faux_server(store) as (url, tools), httpx.Client(base_url=url) as client:
        walk_every_route(client, store, sid)
        assert [s["session_id"] for s in client.get("/v1/sessions").json()["sessions"]] == []
        assert tools.launched == ["Apollo"]
