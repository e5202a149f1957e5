"""An MCP server shared by every session of a `create_app` server (DESIGN §12, §18), as
docs/serve.md shows it: connected once into a `ToolStore` with `asyncio.run` before
serving, each session's agent built on that store. The server closes each run's agent, and
that leaves the connection serving the next session's run. A real stdio MCP server, a
real Uvicorn server on 127.0.0.1."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path
from typing import Any

import httpx2 as httpx
import pytest

from tests.serve._kit import serving, start_run, wait_done
from yiemagent import Agent
from yiemagent.ai.providers.faux import FauxModel, faux_message, faux_tool_call
from yiemagent.mcp import MCPServerStdio, add_server
from yiemagent.serve import create_app
from yiemagent.sessions import InMemorySessionStore
from yiemagent.tools import ToolStore
from yiemagent.types import Context, text_of

pytestmark = pytest.mark.timeout(120)

WEATHER = Path(__file__).parents[2] / "examples" / "mcp" / "weather_server.py"


def forecaster(context: Context) -> Any:
    last = context.messages[-1]
    if last.role == "user":
        return faux_message(faux_tool_call("forecast", {"city": text_of(last.content)}))
    return "forecast: " + text_of(last.content)


def test_sessions_share_one_mcp_connection() -> None:
    server = MCPServerStdio(sys.executable, [str(WEATHER)], name="weather")
    tools = ToolStore("shared")
    asyncio.run(add_server(tools, server))  # its connection has a thread of its own
    store = InMemorySessionStore()
    fm = FauxModel([forecaster] * 8)

    def make_agent(session_id: str) -> Agent[Any]:
        return Agent(
            model=fm.model,
            stream_fn=fm.stream_fn,
            tools=tools,
            session_store=store,
            session_id=session_id,
        )

    try:
        app = create_app(make_agent, session_store=store)
        with serving(app) as url, httpx.Client(base_url=url, timeout=30) as client:
            for sid, city in (("a", "Oslo"), ("b", "Lisbon")):
                summary = wait_done(client, start_run(client, sid, city))
                assert summary["end_reason"] == "stop"
                said = client.get(f"/v1/sessions/{sid}").json()["messages"][-1]
                assert said["content"][0]["text"].startswith("forecast: ")
                assert city in said["content"][0]["text"]
    finally:
        asyncio.run(server.close())
