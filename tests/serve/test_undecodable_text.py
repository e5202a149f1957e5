"""A tool whose output holds lone surrogates (process output or a file name decoded with
`surrogateescape`, which UTF-8 cannot encode) through every front end of `yiem serve`
(DESIGN §8, §18): the run answers as usual, each stream shows U+FFFD for what cannot be
sent, and the session keeps the text as it was."""

from __future__ import annotations

from typing import Any

import httpx2 as httpx
import pytest
from ag_ui import core as agui

from tests.serve._kit import run_events, serving, sse, start_run
from tests.serve.test_protocols import agui_run, check_agui_order
from yiemagent import Agent, AgentTool
from yiemagent.ai.providers.faux import FauxModel, faux_message, faux_tool_call
from yiemagent.serve import create_app
from yiemagent.sessions import InMemorySessionStore
from yiemagent.types import Context, ToolResultMessage, text_of

pytestmark = pytest.mark.timeout(120)

RAW = b"caf\xe9 \xff".decode("utf-8", "surrogateescape")  # "caf\udce9 \udcff"


async def listing(call_id: str, args: dict[str, Any], signal: Any, on_update: Any) -> str:
    return RAW


def brain(context: Context) -> Any:
    last = context.messages[-1]
    if isinstance(last, ToolResultMessage):
        return faux_message(f"found: {text_of(last.content)}")
    return faux_message(faux_tool_call("listing", {}))


def test_text_utf8_cannot_carry_does_not_break_a_run_on_any_front_end() -> None:
    fm = FauxModel([brain] * 100)
    store = InMemorySessionStore()

    def make_agent(session_id: str) -> Agent[Any]:
        tool = AgentTool("listing", "listing", "lists a folder", {"type": "object"}, listing)
        return Agent(
            model=fm.model,
            stream_fn=fm.stream_fn,
            tools=[tool],
            session_store=store,
            session_id=session_id,
        )

    shown = "found: caf\ufffd \ufffd"
    app = create_app(make_agent, session_store=store)
    with serving(app) as url, httpx.Client(base_url=url, timeout=60) as client:
        events = [data for _, data in run_events(client, start_run(client, "s1", "list"))]
        assert events[-1]["type"] == "agent_end" and events[-1]["reason"] == "stop"
        assert events[-1]["messages"][-1]["content"][0]["text"] == shown

        body = {"model": "m", "messages": [{"role": "user", "content": "list"}]}
        answer = client.post("/v1/chat/completions", json=body)
        assert answer.status_code == 200, answer.text
        assert answer.json()["choices"][0]["message"]["content"] == shown

        chat = {
            "id": "c",
            "messages": [{"id": "u", "role": "user", "parts": [{"type": "text", "text": "list"}]}],
        }
        with client.stream("POST", "/api/chat", json=chat) as response:
            chunks = [data for _, data in sse(response)]
        assert not [c for c in chunks if isinstance(c, dict) and c["type"] == "error"]
        text = "".join(
            c["delta"] for c in chunks if isinstance(c, dict) and c["type"] == "text-delta"
        )
        assert text == shown

        run_input = agui.RunAgentInput(
            thread_id="t",
            run_id="r",
            state=None,
            messages=[agui.UserMessage(id="u", content="list")],
            tools=[],
            context=[],
            forwarded_props=None,
        )
        agui_events = agui_run(client, run_input)
        check_agui_order(agui_events)
        assert isinstance(agui_events[-1], agui.RunFinishedEvent)

    stored = [m for m in store.load("s1") if isinstance(m, ToolResultMessage)]
    assert text_of(stored[0].content) == RAW  # the session keeps what the tool said
