"""AG-UI tool calls from a real OpenAI-wire stream (DESIGN §18): every call's arguments
reach the client whole as `TOOL_CALL_ARGS` before its `TOOL_CALL_END`, also when the
provider streamed no argument text for it (a call without arguments, or arguments sent
whole) and when a server streams several calls at once."""

from __future__ import annotations

import json
from typing import Any

import httpx2 as httpx
import pytest
from ag_ui import core as agui

from tests.ai.servers import (
    ReplayServer,
    Reply,
    interleaved_call_tools,
    interleaved_calls_model,
    openai_chunks,
)
from tests.serve._kit import serving
from tests.serve.test_protocols import agui_run, check_agui_order
from yiemagent import Agent, AgentTool, Model
from yiemagent.serve import create_app
from yiemagent.sessions import InMemorySessionStore

pytestmark = pytest.mark.timeout(120)

NO_ARGS: dict[str, Any] = {"type": "object", "properties": {}}


async def ping(call_id: str, args: dict[str, Any], signal: Any, on_update: Any) -> str:
    return "pong"


def ask(text: str) -> agui.RunAgentInput:
    return agui.RunAgentInput(
        thread_id="t",
        run_id="r",
        state=None,
        messages=[agui.UserMessage(id="u", content=text)],
        tools=[],
        context=[],
        forwarded_props=None,
    )


def call_chunk(index: int, call_id: str, name: str, arguments: str) -> dict[str, Any]:
    call = {"index": index, "id": call_id, "type": "function"}
    return {"tool_calls": [{**call, "function": {"name": name, "arguments": arguments}}]}


def test_a_call_streamed_without_argument_text_still_gets_its_arguments() -> None:
    with ReplayServer() as server:
        server.enqueue(
            Reply(
                events=openai_chunks(
                    {"role": "assistant", "content": None},
                    call_chunk(0, "call_a", "ping", ""),  # no arguments at all
                    call_chunk(1, "call_b", "ping", ""),
                    {"tool_calls": [{"index": 1, "function": {"arguments": "{}"}}]},
                    finish_reason="tool_calls",
                )
            ),
            Reply(events=openai_chunks({"role": "assistant", "content": "pong twice"})),
        )
        model = Model(
            id="m", provider="vllm", api="openai-completions", base_url=server.url + "/v1"
        )
        store = InMemorySessionStore()

        def make_agent(session_id: str) -> Agent[Any]:
            tools = [AgentTool("ping", "Ping", "answers pong", NO_ARGS, ping, parallel=True)]
            return Agent(model=model, tools=tools, session_store=store, session_id=session_id)

        app = create_app(make_agent, session_store=store)
        with serving(app) as url, httpx.Client(base_url=url, timeout=60) as client:
            events = agui_run(client, ask("ping twice"))

    check_agui_order(events)
    for call_id in ("call_a", "call_b"):
        kinds = [e.type.value for e in events if getattr(e, "tool_call_id", None) == call_id]
        assert kinds[:2] == ["TOOL_CALL_START", "TOOL_CALL_ARGS"], (call_id, kinds)
        args = "".join(
            e.delta
            for e in events
            if isinstance(e, agui.ToolCallArgsEvent) and e.tool_call_id == call_id
        )
        assert json.loads(args) == {}, (call_id, args)  # what a client parses at the end


def test_calls_streamed_at_once_each_get_all_their_arguments() -> None:
    """A server streams three calls interleaved: a fragment of the first comes after the
    second has started. The client still reads each call's whole arguments."""
    with interleaved_calls_model() as model:
        store = InMemorySessionStore()

        def make_agent(session_id: str) -> Agent[Any]:
            tools = interleaved_call_tools(ping)
            return Agent(model=model, tools=tools, session_store=store, session_id=session_id)

        app = create_app(make_agent, session_store=store)
        with serving(app) as url, httpx.Client(base_url=url, timeout=60) as client:
            events = agui_run(client, ask("weather in Paris and Rome, time in CET"))

    check_agui_order(events)
    args: dict[str, str] = {}
    for event in events:
        if isinstance(event, agui.ToolCallArgsEvent):
            args[event.tool_call_id] = args.get(event.tool_call_id, "") + event.delta
    assert {call_id: json.loads(text) for call_id, text in args.items()} == {
        "call_paris": {"city": "Paris", "unit": "C"},
        "call_tz": {"tz": "CET"},
        "call_rome": {"city": "Rome"},
    }
