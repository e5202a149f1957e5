"""Two invocations of one sub-agent at once, whose model numbers its calls (DESIGN §17,
§18; docs/serve.md "AG-UI"): the lead runs `mid` twice in one batch, and each `mid` asks
`leaf` as its own `call_0` while the other is still running. Each leaf invocation is
started under the `mid` invocation that called it, and each streams its own calls. The
level below `mid` was attributed by its call's id alone, so the second leaf's events went
to the first `mid`'s leaf invocation: one `SUBAGENT_STARTED` for two leaves. Through
Uvicorn on 127.0.0.1."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import httpx2 as httpx
import pytest
from ag_ui import core as agui

from tests.serve._kit import SCHEMA, serving
from tests.serve.test_protocols import agui_input, agui_run, check_agui_order
from tests.teams.test_parallel_sub_agent_records import lead_reply, numbered
from yiemagent import Agent, AgentTool
from yiemagent.ai.providers.faux import FauxModel
from yiemagent.serve import create_app
from yiemagent.sessions import InMemorySessionStore

pytestmark = pytest.mark.timeout(120)


def test_each_leaf_is_attributed_to_the_invocation_that_called_it() -> None:
    both_waiting = asyncio.Event()
    waiting: list[str] = []

    async def look(call_id: str, args: dict[str, Any], *_: Any) -> str:
        """Answers once both leaves are looking: both `mid`s are running then."""
        waiting.append(args["city"])
        if len(waiting) == 2:
            both_waiting.set()
        await asyncio.wait_for(both_waiting.wait(), 30)
        return f"seen {args['city']}"

    models = {
        "lead": FauxModel([lead_reply] * 10),
        "mid": FauxModel([numbered("leaf", "input")] * 10),
        "leaf": FauxModel([numbered("look", "city")] * 10),
    }

    def agent(name: str, tools: list[AgentTool], **options: Any) -> Agent[Any]:
        fm = models[name]
        return Agent(
            f"{name}:", fm.model, stream_fn=fm.stream_fn, name=name, tools=tools, **options
        )

    store = InMemorySessionStore()

    def make_agent(session_id: str) -> Agent[Any]:
        tool = AgentTool("look", "Look", "look", SCHEMA, look, parallel=True)
        mid = agent("mid", [agent("leaf", [tool]).as_tool()])
        return agent("lead", [mid.as_tool()], session_store=store, session_id=session_id)

    app = create_app(make_agent, session_store=store)
    with serving(app) as url, httpx.Client(base_url=url, timeout=60) as client:
        events = agui_run(client, agui_input("t", "r1", "Oslo Lima"))

    check_agui_order(events)
    assert isinstance(events[-1], agui.RunFinishedEvent)
    assert sorted(waiting) == ["Lima", "Oslo"]
    started = [e for e in events if isinstance(e, agui.SubagentStartedEvent)]
    mids = {str(e.parent_tool_call_id): str(e.subagent_run_id) for e in started if e.name == "mid"}
    assert sorted(mids) == ["call_0", "call_1"]
    leaves = [e for e in started if e.name == "leaf"]
    assert sorted(str(e.parent_subagent_run_id) for e in leaves) == sorted(mids.values())
    # each leaf's call was streamed by its mid, and each leaf streams its own look
    starts = {e.tool_call_id: e for e in events if isinstance(e, agui.ToolCallStartEvent)}
    args: dict[str, str] = {}
    for e in events:
        if isinstance(e, agui.ToolCallArgsEvent):
            args[e.tool_call_id] = args.get(e.tool_call_id, "") + e.delta
    asked: dict[str, str] = {}  # mid's subagentRunId -> the city it passed on
    for leaf in leaves:
        call = starts[str(leaf.parent_tool_call_id)]
        assert call.tool_call_name == "leaf"
        asked[str(leaf.parent_subagent_run_id)] = json.loads(args[call.tool_call_id])["input"]
    assert sorted(asked.values()) == ["Lima", "Oslo"]
    looks = [e for e in starts.values() if e.tool_call_name == "look"]
    by_leaf = {str(leaf.subagent_run_id): leaf for leaf in leaves}
    assert sorted(str(e.subagent_run_id) for e in looks) == sorted(by_leaf)
    for look_call in looks:
        leaf = by_leaf[str(look_call.subagent_run_id)]
        city = json.loads(args[look_call.tool_call_id])["city"]
        assert asked[str(leaf.parent_subagent_run_id)] == city
    results = {e.tool_call_id: e.content for e in events if isinstance(e, agui.ToolCallResultEvent)}
    assert sorted(results[e.tool_call_id] for e in looks) == ["seen Lima", "seen Oslo"]
