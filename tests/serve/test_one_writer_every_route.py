"""One writer per session on every route (DESIGN §18): while a run goes on a session, a
second run asked for it through any front end — AG-UI on its thread, the UI message
stream on its chat, Chat Completions naming it, a resume — is a 409, and none of them
adds to the transcript; the first run goes on to its end, after which the session takes
the next run. Through Uvicorn on 127.0.0.1."""

from __future__ import annotations

import httpx2 as httpx
import pytest

from tests.serve._kit import Tools, faux_server, run_events, start_run
from yiemagent.sessions import InMemorySessionStore

pytestmark = pytest.mark.timeout(120)

AGUI = {
    "threadId": "s",
    "runId": "r1",
    "state": {},
    "messages": [{"id": "m1", "role": "user", "content": "hi"}],
    "tools": [],
    "context": [],
    "forwardedProps": {},
}
UI = {
    "id": "s",
    "messages": [{"id": "u1", "role": "user", "parts": [{"type": "text", "text": "hi"}]}],
}
CHAT = {"model": "agent", "messages": [{"role": "user", "content": "hi"}]}


def test_a_busy_session_refuses_a_second_run_from_every_front_end() -> None:
    store = InMemorySessionStore()
    # the tool takes 5 s: room for the requests below on a loaded machine
    with faux_server(store, Tools(delay_s=5.0)) as (url, _), httpx.Client(base_url=url) as client:
        run_id = start_run(client, "s", "weather Oslo")
        for path, body, headers in [
            ("/ag-ui", AGUI, {}),
            ("/api/chat", UI, {}),
            ("/v1/chat/completions", CHAT, {"X-Session-Id": "s"}),
            ("/v1/sessions/s/resume", None, {}),
        ]:
            refused = client.post(path, json=body, headers=headers)
            assert refused.status_code == 409, (path, refused.text)
            assert run_id in refused.text, (path, refused.text)
        assert run_events(client, run_id)[-1][1]["reason"] == "stop"
        kept = store.load("s")
        assert [m.role for m in kept] == ["user", "assistant", "toolResult", "assistant"]
        again = client.post("/api/chat", json=UI)
        assert again.status_code == 200, again.text
        assert len(store.load("s")) > len(kept)
