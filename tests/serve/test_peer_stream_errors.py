"""A model call that fails in the middle of its answer, on the AG-UI and UI message stream
routes, in the cases pydantic-ai's tests/test_vercel_ai.py (test_run_stream_error_closes_open_
text / _thinking / _tool_call) and test_ag_ui.py check: a part the answer had opened (text,
reasoning, a tool call) is closed before the error, with the id it opened with, so a client
marks it done; the open tool call gets its one result (R-4.1); the error says the model's own
message. On the UI message stream the error comes inside the failed step, then `finish-step`
and `finish` (reason "error"), as the AI SDK's `streamText` and pydantic-ai end a failed
run; it sent `finish-step`, then `error`, and no `finish`."""

from __future__ import annotations

from typing import Any

import httpx2 as httpx
import pytest
from ag_ui import core as agui

from tests.serve._kit import serving, sse
from tests.serve.test_protocols import EVENT, check_agui_order, ui_chat, user
from yiemagent import Agent, AgentTool
from yiemagent.ai.providers.faux import (
    FauxModel,
    faux_message,
    faux_text,
    faux_thinking,
    faux_tool_call,
)
from yiemagent.serve import create_app
from yiemagent.sessions import InMemorySessionStore
from yiemagent.types import TextContent, ThinkingContent, ToolCall

SCHEMA: dict[str, Any] = {"type": "object", "properties": {"city": {"type": "string"}}}
BROKE = "the model broke"
CUT: dict[str, TextContent | ThinkingContent | ToolCall] = {
    "text": faux_text("half an ans"),
    "thinking": faux_thinking("hmm, let me"),
    "call": faux_tool_call("weather", {"city": "Oslo"}),
}


def broken_server(part: str) -> Any:
    store = InMemorySessionStore()
    cut = faux_message(CUT[part], stop_reason="error", error_message=BROKE)
    fm = FauxModel([cut] * 4)
    ran: list[str] = []

    def weather(*_: Any) -> str:
        ran.append("x")
        return "sun"

    tool = AgentTool("weather", "weather", "weather", SCHEMA, weather)

    def make_agent(session_id: str) -> Agent[Any]:
        return Agent(
            model=fm.model,
            stream_fn=fm.stream_fn,
            tools=[tool],
            session_store=store,
            session_id=session_id,
        )

    return serving(create_app(make_agent, session_store=store)), ran


OPENED = {"text": "text-start", "thinking": "reasoning-start", "call": "tool-input-start"}
CLOSED = {"text": "text-end", "thinking": "reasoning-end", "call": "tool-output-error"}


@pytest.mark.parametrize("part", list(CUT))
def test_the_ui_stream_closes_what_was_open_before_the_error(part: str) -> None:
    server, ran = broken_server(part)
    with server as url, httpx.Client(base_url=url) as client:
        chunks = ui_chat(client, {"id": "chat", "messages": [user("hi")]})

    kinds = [c["type"] for c in chunks]
    assert kinds[-3:] == ["error", "finish-step", "finish"]
    assert chunks[-3]["errorText"] == BROKE and chunks[-1]["finishReason"] == "error"
    assert kinds.count("start-step") == kinds.count("finish-step") == 1
    assert kinds.count("error") == 1
    opened = next(c for c in chunks if c["type"] == OPENED[part])
    closed = next(c for c in chunks if c["type"] == CLOSED[part])
    assert kinds.index(OPENED[part]) < kinds.index(CLOSED[part]) < kinds.index("error")
    key = "toolCallId" if part == "call" else "id"
    assert closed[key] == opened[key]
    assert ran == []  # a call of a failed answer never runs ...
    if part == "call":  # ... and is answered
        assert "not executed" in closed["errorText"] and BROKE in closed["errorText"]


AGUI_OPENED = {
    "text": "TEXT_MESSAGE_START",
    "thinking": "REASONING_START",
    "call": "TOOL_CALL_START",
}


@pytest.mark.parametrize("part", list(CUT))
def test_the_agui_stream_closes_what_was_open_before_the_run_error(part: str) -> None:
    server, ran = broken_server(part)
    body = {
        "threadId": "t",
        "runId": "r",
        "messages": [{"id": "u", "role": "user", "content": "hi"}],
    }
    with (
        server as url,
        httpx.Client(base_url=url) as client,
        client.stream("POST", "/ag-ui", json=body) as response,
    ):
        events = [EVENT.validate_python(d) for _, d in sse(response)]

    check_agui_order(events)  # every start has its end, every call at most one result
    kinds = [e.type.value for e in events]
    assert AGUI_OPENED[part] in kinds
    assert isinstance(events[-1], agui.RunErrorEvent) and events[-1].message == BROKE
    if part == "call":
        assert kinds[-3:] == ["TOOL_CALL_END", "TOOL_CALL_RESULT", "RUN_ERROR"]
    assert ran == []
