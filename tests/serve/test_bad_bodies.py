"""Request bodies a hostile or careless client sends to `yiem serve` (DESIGN §8, §18), through
a real Uvicorn server on 127.0.0.1: whatever the body, every route answers 2xx or 4xx, never
a 500 or a broken stream, and a run it starts is stored whole."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote

import httpx2 as httpx
import pytest
from hypothesis import HealthCheck, example, given, settings, strategies as st

from tests.serve._kit import error_of, faux_server, run_events, sse
from yiemagent.sessions import PostgresSessionStore, SqliteSessionStore
from yiemagent.types import AgentMessage, AssistantMessage

pytestmark = pytest.mark.timeout(300)

LONE = "bad \ud800 text"
"""A lone surrogate: valid as a JSON escape (`\\ud800`), not storable as UTF-8 text."""


def bodies(text: Any, sid: str) -> list[tuple[str, dict[str, Any]]]:
    """One request per route that starts a run, each carrying `text` where its prompt goes."""
    return [
        (f"/v1/sessions/{sid}/runs", {"input": text}),
        ("/v1/chat/completions", {"messages": [{"role": "user", "content": text}]}),
        ("/api/chat", {"id": sid, "messages": [{"id": "m", "role": "user", "parts": [
            {"type": "text", "text": text}
        ]}]}),
        ("/ag-ui", {
            "threadId": sid, "runId": "r", "state": {}, "tools": [], "context": [],
            "forwardedProps": {}, "messages": [{"id": "u", "role": "user", "content": text}],
        }),
    ]  # fmt: skip


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[httpx.Client, Path]]:
    path = tmp_path_factory.mktemp("bad") / "s.db"
    with (
        SqliteSessionStore(path) as store,
        faux_server(store) as (url, _),
        httpx.Client(base_url=url, timeout=60) as client,
    ):
        yield client, path


def post(client: httpx.Client, path: str, body: Any, sid: str | None = None) -> httpx.Response:
    """POST `body` as JSON text with surrogates escaped (`json.dumps`' default); `sid` names
    the session in `X-Session-Id` (a chat completion without one is not stored)."""
    headers = {"content-type": "application/json"}
    if sid is not None:
        headers["X-Session-Id"] = sid
    return client.post(path, content=json.dumps(body), headers=headers)


def stored(path: Path, sid: str) -> list[AgentMessage]:
    with SqliteSessionStore(path) as store:
        return store.load(sid)


def test_text_that_cannot_be_stored_is_a_400_on_every_route(
    server: tuple[httpx.Client, Path],
) -> None:
    client, path = server
    for route, body in bodies(LONE, "lone"):
        refused = post(client, route, body)
        assert refused.status_code == 400, (route, refused.text)
        assert "lone surrogates" in error_of(refused), (route, refused.text)
    assert stored(path, "lone") == []
    assert client.post("/v1/sessions/s/runs", content=b'{"input": NaN}').status_code == 400


def test_a_body_that_is_no_run_agent_input_is_named_field_by_field_on_one_line(
    server: tuple[httpx.Client, Path],
) -> None:
    """The 400 held pydantic's own text: a line per field and problem, and a link to
    pydantic's documentation site after each, for an AG-UI client to show its user."""
    client, _ = server
    refused = post(client, "/ag-ui", {"threadId": "t", "messages": "hi"})
    assert refused.status_code == 400
    assert refused.json()["error"] == (
        "not an AG-UI RunAgentInput: runId: Field required; messages: Input should be a valid list"
    )


def test_a_body_nested_too_deep_is_a_400_on_every_route(
    server: tuple[httpx.Client, Path],
) -> None:
    client, _ = server
    deep = "[" * 50_000 + "]" * 50_000
    for route, _body in bodies("x", "deep"):
        for body in (deep, '{"input": ' + deep + "}"):
            refused = client.post(route, content=body)
            assert refused.status_code == 400, (route, refused.text)
            assert "recursion" in error_of(refused), (route, refused.text)


def json_values(leaves: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    return st.recursive(
        leaves,
        lambda inner: (
            st.lists(inner, max_size=3)
            | st.dictionaries(
                st.sampled_from(["type", "text", "role", "content", "x"]), inner, max_size=3
            )
        ),
        max_leaves=8,
    )


TEXTS = st.text(max_size=12) | st.text(max_size=4).map(lambda t: t + "\ud800")
LEAVES = st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | TEXTS
PARTS = st.lists(st.fixed_dictionaries({"type": st.just("text"), "text": json_values(LEAVES)}))


@settings(max_examples=100, deadline=None, suppress_health_check=list(HealthCheck))
@example(value=[{"type": "text", "text": 5}], role="system", which=1)
@example(value=7, role="assistant", which=1)
@given(
    value=json_values(LEAVES) | PARTS,
    role=st.sampled_from(["user", "system", "developer", "assistant", "tool"]),
    which=st.integers(0, 3),
)
def test_any_json_in_the_prompt_is_answered_never_a_500(
    server: tuple[httpx.Client, Path], value: Any, role: str, which: int
) -> None:
    client, path = server
    sid = uuid.uuid4().hex
    route, body = bodies(value, sid)[which]
    if route == "/v1/chat/completions":
        body["messages"] = [{"role": role, "content": value}, {"role": "user", "content": "hi"}]
        body["stream"] = which % 2 == 0
    answer = post(client, route, body, sid)
    assert answer.status_code < 500, (route, body, answer.text)
    if answer.status_code == 202:
        events = run_events(client, answer.json()["run_id"])
        assert events[-1][1]["type"] == "agent_end" and events[-1][1]["reason"] == "stop"
    if answer.status_code < 300:
        assert "Internal Server Error" not in answer.text
        messages = stored(path, sid)
        assert messages and isinstance(messages[-1], AssistantMessage), (route, body, messages)
        assert messages[-1].stop_reason == "stop", (route, body, messages)


@pytest.fixture(scope="module")
def ended_run(server: tuple[httpx.Client, Path]) -> tuple[str, list[tuple[int, dict[str, Any]]]]:
    client, _ = server
    started = post(client, "/v1/sessions/numbered/runs", {"input": "weather Oslo"})
    run_id: str = started.json()["run_id"]
    return run_id, run_events(client, run_id)


@settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))
@example(after="²")
@example(after="٣")
@given(after=st.text(max_size=4) | st.integers(0, 40).map(str))
def test_any_event_number_is_a_400_or_the_events_after_it(
    server: tuple[httpx.Client, Path],
    ended_run: tuple[str, list[tuple[int, dict[str, Any]]]],
    after: str,
) -> None:
    client, _ = server
    run_id, whole = ended_run
    with client.stream("GET", f"/v1/runs/{run_id}/events", params={"after": after}) as answer:
        if answer.status_code == 400:
            assert "event number" in answer.read().decode()
            return
        if answer.status_code == 204:  # the run has ended and nothing is left after `after`
            assert answer.read() == b"" and int(after) >= len(whole)
            return
        assert answer.status_code == 200
        events = [(int(i or 0), d) for i, d in sse(answer)]
    assert after == "" or (after.isascii() and after.isdigit()), after
    assert events == whole[int(after or 0) :]


def test_a_session_id_that_is_not_one_is_a_400_everywhere_and_nothing_runs(
    postgres_dsn: str,
) -> None:
    with (
        PostgresSessionStore(postgres_dsn) as store,
        faux_server(store) as (url, _),
        httpx.Client(base_url=url) as client,
    ):
        for sid in ["a\x00b", "a\nb", "tab\there"]:
            quoted = quote(sid, safe="")
            for method, path, body in [
                ("POST", f"/v1/sessions/{quoted}/runs", {"input": "hi"}),
                ("GET", f"/v1/sessions/{quoted}", None),
                ("DELETE", f"/v1/sessions/{quoted}", None),
                ("GET", f"/v1/sessions/{quoted}/approvals", None),
                ("POST", f"/v1/sessions/{quoted}/approvals/c", {"approve": True}),
                ("POST", f"/v1/sessions/{quoted}/resume", None),
                ("GET", f"/v1/sessions/{quoted}/timeline", None),
                *(("POST", route, body) for route, body in bodies("hi", sid)[2:]),
            ]:
                answer = client.request(method, path, json=body)
                assert answer.status_code == 400, (sid, path, answer.text)
                assert "control characters" in answer.json()["error"], (sid, path, answer.text)
        assert store.list_sessions() == []


def test_a_chat_id_beyond_latin_1_comes_back_percent_encoded(
    server: tuple[httpx.Client, Path],
) -> None:
    client, path = server
    for route, body in bodies("hi", "日本 chat")[2:]:
        answer = post(client, route, body)
        assert answer.status_code == 200, (route, answer.text)
        assert answer.headers["x-session-id"] == "%E6%97%A5%E6%9C%AC%20chat"
        assert "RUN_FINISHED" in answer.text or '"finish"' in answer.text
    assert len(stored(path, "日本 chat")) == 4  # two runs, each a prompt and its answer


def test_a_stream_flag_that_is_no_boolean_is_a_400_not_a_stream(
    server: tuple[httpx.Client, Path],
) -> None:
    client, _ = server
    chat = {"messages": [{"role": "user", "content": "hi"}]}
    for flag in ["false", 0, "no", []]:
        answer = post(client, "/v1/chat/completions", {**chat, "stream": flag})
        assert answer.status_code == 400, (flag, answer.text)
        assert '"stream" must be true or false' in error_of(answer)
    for flag in [False, None]:
        answer = post(client, "/v1/chat/completions", {**chat, "stream": flag})
        assert answer.json()["object"] == "chat.completion"


def test_a_ui_part_that_is_no_object_is_skipped_in_the_last_message_too(
    server: tuple[httpx.Client, Path],
) -> None:
    """A useChat message's parts that are not objects are skipped, and the last message's
    too: an assistant message whose parts held a bare number or text was a 500 while its
    approval answers were read."""
    client, path = server
    sid = uuid.uuid4().hex
    user = {"id": "u", "role": "user", "parts": [{"type": "text", "text": "hi"}, 3]}
    said = {"id": "a", "role": "assistant", "parts": [7, "x", {"type": "text", "text": "hello"}]}
    answer = post(client, "/api/chat", {"id": sid, "messages": [user, said]})
    assert answer.status_code == 400, answer.text  # an assistant's message asks nothing
    assert error_of(answer) == "the last message must be a user message with some content"
    answered: dict[str, Any] = {"type": "tool-launch", "toolCallId": "c1"}
    answered.update(state="approval-responded", approval={"id": "c1", "approved": True})
    said["parts"] = [7, answered]  # the answer after the number is read still
    answer = post(client, "/api/chat", {"id": sid, "messages": [user, said]})
    assert answer.status_code == 400, answer.text
    assert error_of(answer) == "no tool call 'c1' awaits approval"
    assert stored(path, sid) == []
