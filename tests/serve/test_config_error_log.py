"""A session's agent that cannot be built because of the server's configuration (an agent
file whose tool folder holds a file mid-edit, with a syntax error; DESIGN §8): each request
that needs it is a 500 naming the problem, and the server's log says it in one line, not a
traceback of the server's own code, and the server goes on serving."""

from __future__ import annotations

import logging
from typing import Any

import httpx2 as httpx
import pytest

from tests.serve._kit import Tools, faux_agents, run_events, serving, start_run
from yiemagent import Agent
from yiemagent.errors import ConfigError
from yiemagent.serve import create_app
from yiemagent.sessions import InMemorySessionStore

PROBLEM = (
    "team.toml: [agents.helper] tools: tools: 1 tool file failed to load: tools/half.py: "
    "import failed: SyntaxError: unterminated triple-quoted string literal (line 4)"
)


def test_an_agent_the_configuration_cannot_build_is_one_log_line(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Each such request logged the whole traceback through the agent file's loader, which
    buried the one line that says what to fix."""
    store = InMemorySessionStore()
    made = faux_agents(store, Tools())

    def make_agent(session_id: str) -> Agent[Any]:
        if session_id == "broken":
            raise ConfigError(PROBLEM)
        return made(session_id)

    caplog.set_level(logging.ERROR, logger="yiemagent.serve")
    with (
        serving(create_app(make_agent, session_store=store)) as url,
        httpx.Client(base_url=url) as client,
    ):
        answer = client.post("/v1/sessions/broken/runs", json={"input": "hi"})
        assert answer.status_code == 500, answer.text
        assert answer.json() == {"error": f"the server failed: ConfigError: {PROBLEM}"}
        run_events(client, start_run(client, "fine", "hello"))
    [record] = [r for r in caplog.records if r.name.startswith("yiemagent.serve")]
    assert record.exc_info is None and record.exc_text is None
    assert record.getMessage() == f"POST /v1/sessions/broken/runs failed: {PROBLEM}"
