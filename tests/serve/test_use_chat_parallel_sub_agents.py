"""Calls held inside two invocations of one sub-agent, answered through `useChat` (DESIGN
§17, §18; docs/serve.md): the lead runs `mid` twice in one batch, each `mid` calls the
approval-gated `launch` as its `call_0` (one held call is renamed `call_0_2`), and after its
result calls `look`, numbered `call_0` again. The stream sent a sub-agent's result when its
call id alone was decided, so each `mid`'s `look` result was sent as the other's decided
`launch` result too, under the same part. Each decision's result is found by its call path
now. Through Uvicorn on 127.0.0.1."""

from __future__ import annotations

from typing import Any

import httpx2 as httpx
import pytest

from tests.serve._kit import SCHEMA, serving, text_of
from tests.serve.test_protocols import ui_chat, user
from yiemagent import Agent, AgentTool, Context
from yiemagent.ai.providers.faux import FauxModel, faux_message, faux_text, faux_tool_call
from yiemagent.serve import create_app
from yiemagent.sessions import InMemorySessionStore

pytestmark = pytest.mark.timeout(120)


def lead_reply(context: Context) -> Any:
    """The lead asks `mid` about each city it was given, in one batch."""
    last = context.messages[-1]
    if last.role == "toolResult":
        return faux_message(faux_text("lead done"))
    cities = text_of(last).split()
    return faux_message(
        *(faux_tool_call("mid", {"input": c}, id=f"call_{i}") for i, c in enumerate(cities))
    )


def mid_reply(context: Context) -> Any:
    """`launch` the city asked about, then `look` at it, each as `call_0`, then answer."""
    last = context.messages[-1]
    if last.role == "user":
        return faux_message(faux_tool_call("launch", {"city": text_of(last)}, id="call_0"))
    if last.role == "toolResult" and last.tool_name == "launch":
        city = text_of(last).split()[-1]
        return faux_message(faux_tool_call("look", {"city": city}, id="call_0"))
    return faux_message(faux_text(text_of(last)))


def test_each_decided_sub_agent_call_gets_its_own_result_once() -> None:
    launched: list[str] = []

    async def launch(call_id: str, args: dict[str, Any], *_: Any) -> str:
        launched.append(args["city"])
        return f"launched {args['city']}"

    async def look(call_id: str, args: dict[str, Any], *_: Any) -> str:
        return f"seen {args['city']}"

    store = InMemorySessionStore()
    lead_model, mid_model = FauxModel([lead_reply] * 10), FauxModel([mid_reply] * 20)

    def make_agent(session_id: str) -> Agent[Any]:
        tools = [
            AgentTool("launch", "Launch", "launch", SCHEMA, launch, requires_approval=True),
            AgentTool("look", "Look", "look", SCHEMA, look),
        ]
        mid = Agent("mid:", mid_model.model, stream_fn=mid_model.stream_fn, name="mid", tools=tools)
        return Agent(
            "lead:", lead_model.model, stream_fn=lead_model.stream_fn, name="lead",
            tools=[mid.as_tool()], session_store=store, session_id=session_id,
        )  # fmt: skip

    asked = user("Oslo Lima")
    app = create_app(make_agent, session_store=store)
    with serving(app) as url, httpx.Client(base_url=url, timeout=60) as client:
        held = ui_chat(client, {"id": "c", "messages": [asked]})
        requests = [c for c in held if c["type"] == "tool-approval-request"]
        inputs = {c["toolCallId"]: c for c in held if c["type"] == "tool-input-available"}
        assert sorted(r["approvalId"] for r in requests) == ["call_0", "call_0_2"]
        city = {r["toolCallId"]: inputs[r["toolCallId"]]["input"]["city"] for r in requests}
        assert sorted(city.values()) == ["Lima", "Oslo"]
        parts = [
            {
                "type": "tool-launch",
                "toolCallId": r["toolCallId"],
                "state": "approval-responded",
                "input": {"city": city[r["toolCallId"]]},
                "approval": {"id": r["approvalId"], "approved": True},
            }
            for r in requests
        ]
        answer = {"id": "a1", "role": "assistant", "parts": parts}
        done = ui_chat(client, {"id": "c", "messages": [asked, answer]})

    assert sorted(launched) == ["Lima", "Oslo"]
    outputs = [(c["toolCallId"], c["output"]) for c in done if c["type"] == "tool-output-available"]
    held_parts = [(part, text) for part, text in outputs if part in city]
    assert sorted(held_parts) == sorted((part, f"launched {city[part]}") for part in city)
    assert sorted(outputs) == sorted(
        [*held_parts, ("call_0", "seen Oslo"), ("call_1", "seen Lima")]
    )
    assert done[-1] == {"type": "finish", "finishReason": "stop"}
