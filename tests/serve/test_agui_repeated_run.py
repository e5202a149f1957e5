"""An AG-UI input repeated (the same `threadId`, `runId` and messages as one answered
already, as CopilotKit sends after an upgrade) through a real Uvicorn server: a 409 naming
the run, the session as it was, no tool run again. Before, the prompt was run again: the
user message stored twice and its tools run twice."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx2 as httpx
import pytest
from ag_ui import core as agui

from tests.serve._kit import Tools, faux_agents, serving, sse
from tests.serve.test_protocols import agui_input
from yiemagent.serve import create_app
from yiemagent.sessions import SqliteSessionStore
from yiemagent.types import message_to_dict

pytestmark = pytest.mark.timeout(120)


@pytest.fixture
def served(tmp_path: Path) -> Iterator[tuple[httpx.Client, SqliteSessionStore]]:
    with SqliteSessionStore(tmp_path / "sessions.db") as store:
        app = create_app(faux_agents(store, Tools()), session_store=store)
        with serving(app) as url, httpx.Client(base_url=url, timeout=60) as client:
            yield client, store


def post(client: httpx.Client, run_input: agui.RunAgentInput) -> tuple[int, list[Any]]:
    body = run_input.model_dump(mode="json", by_alias=True, exclude_none=True)
    with client.stream("POST", "/ag-ui", json=body) as response:
        if response.status_code != 200:
            return response.status_code, [response.read().decode()]
        return 200, [data for _, data in sse(response)]


def stored(store: SqliteSessionStore, thread: str) -> list[tuple[str, str]]:
    out = []
    for message in store.load(thread):
        data = message_to_dict(message)
        content = data.get("content") or []
        text = "".join(b.get("text", "") for b in content if isinstance(b, dict))
        out.append((data["role"], text))
    return out


def test_a_run_repeated_is_refused_and_runs_nothing_again(
    served: tuple[httpx.Client, SqliteSessionStore],
) -> None:
    client, store = served
    first = agui_input("th", "run-1", "weather Oslo")
    status, events = post(client, first)
    assert status == 200 and events[-1]["type"] == "RUN_FINISHED"
    after_first = stored(store, "th")
    assert [role for role, _ in after_first] == ["user", "assistant", "toolResult", "assistant"]

    status, body = post(client, first)
    assert status == 409
    assert "run 'run-1' of thread 'th' was answered already" in body[0]
    assert stored(store, "th") == after_first  # no user message twice, no tool run again

    # the same run id with other messages is another request, and runs
    history: list[agui.Message] = [
        agui.UserMessage(id="u0", content="weather Oslo"),
        agui.AssistantMessage(id="a0", content="Done: sunny in Oslo"),
        agui.UserMessage(id="u1", content="hello"),
    ]
    status, events = post(client, agui_input("th", "run-1", *history))
    assert status == 200 and events[-1]["type"] == "RUN_FINISHED"
    assert stored(store, "th")[-2:] == [("user", "hello"), ("assistant", "echo: hello")]
    # the same run id on another thread is another run
    status, events = post(client, agui_input("other", "run-1", "weather Oslo"))
    assert status == 200 and events[-1]["type"] == "RUN_FINISHED"
