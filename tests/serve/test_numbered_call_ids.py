"""Calls held inside sub-agents whose model numbers its calls (DESIGN §14, §17, §18): the
lead runs `north` and `south` as `call_0` and `call_1`, and each of them holds its own
`call_0`. Every protocol lists the held calls as `/approvals` does, each under an id of
its own, and the client's answers reach the calls they were given for."""

from __future__ import annotations

import json
from typing import Any

import httpx2 as httpx
import pytest
from ag_ui import core as agui
from openai import OpenAI

from tests.serve._kit import SCHEMA, serving, text_of
from tests.serve.test_protocols import (
    agui_input,
    agui_run,
    approval_answer,
    check_agui_order,
    ui_chat,
    user,
)
from yiemagent import Agent, AgentTool, Context, ToolResultMessage
from yiemagent.ai.providers.faux import FauxModel, faux_message, faux_text, faux_tool_call
from yiemagent.serve import create_app
from yiemagent.sessions import InMemorySessionStore

pytestmark = pytest.mark.timeout(120)


def sub_reply(context: Context) -> Any:
    """A sub-agent asked to launch X holds `launch` X as its `call_0`, then answers."""
    last = context.messages[-1]
    if last.role == "toolResult":
        return faux_message(faux_text(f"sub: {text_of(last)}"))
    return faux_message(faux_tool_call("launch", {"city": text_of(last)}, id="call_0"))


def lead_reply(context: Context) -> Any:
    """The lead asks north and south to launch the two cities it was given."""
    last = context.messages[-1]
    if last.role == "toolResult":
        return faux_message(faux_text("lead done"))
    north, south = text_of(last).split()
    return faux_message(
        faux_tool_call("north", {"input": north}, id="call_0"),
        faux_tool_call("south", {"input": south}, id="call_1"),
    )


@pytest.fixture
def served() -> Any:
    store = InMemorySessionStore()
    launched: list[str] = []

    async def launch(call_id: str, args: dict[str, Any], *_: Any) -> str:
        launched.append(args["city"])
        return f"launched {args['city']}"

    sub_fm, lead_fm = FauxModel([sub_reply] * 100), FauxModel([lead_reply] * 100)

    def make_agent(session_id: str) -> Agent[Any]:
        tool = AgentTool("launch", "Launch", "launch", SCHEMA, launch, requires_approval=True)
        subs = [
            Agent(name=name, model=sub_fm.model, stream_fn=sub_fm.stream_fn, tools=[tool])
            for name in ("north", "south")
        ]
        return Agent(
            name="lead", model=lead_fm.model, stream_fn=lead_fm.stream_fn,
            tools=[sub.as_tool() for sub in subs], session_store=store, session_id=session_id,
        )  # fmt: skip

    app = create_app(make_agent, session_store=store)
    with serving(app) as url, httpx.Client(base_url=url, timeout=60) as client:
        yield url, client, launched


def held(client: httpx.Client, session_id: str) -> dict[str, str]:
    """The session's held calls, city -> id, checked to have ids of their own."""
    approvals = client.get(f"/v1/sessions/{session_id}/approvals").json()["approvals"]
    ids = {a["arguments"]["city"]: a["tool_call_id"] for a in approvals}
    assert len(set(ids.values())) == len(approvals) == 2, approvals
    return ids


def test_ag_ui_interrupts_each_held_call_under_its_own_id(served: Any) -> None:
    """The stream broke off with no `RUN_FINISHED` (a RecursionError on the server): the
    sub-run of `call_0` held a call `call_0`, taken for the sub-run of itself. Then the
    streams broke the protocol: north's `launch` was streamed as `call_0`, the id of the
    lead's call of north, and `subagentRunId` was the parent call's id, which the next
    invocation through a `call_0` would have again."""
    _, client, launched = served
    first = agui_run(client, agui_input("g", "r1", "Oslo Lima"))
    check_agui_order(first)
    assert isinstance(first[-1], agui.RunFinishedEvent)
    outcome = first[-1].outcome
    assert isinstance(outcome, agui.RunFinishedInterruptOutcome)
    interrupts = outcome.interrupts
    ids = held(client, "g")
    assert sorted(i.id for i in interrupts) == sorted(ids.values())
    starts = {e.tool_call_id: e for e in first if isinstance(e, agui.ToolCallStartEvent)}
    args: dict[str, str] = {}
    for e in first:
        if isinstance(e, agui.ToolCallArgsEvent):
            args[e.tool_call_id] = args.get(e.tool_call_id, "") + e.delta
    for interrupt in interrupts:  # each names the streamed call it holds
        city = next(c for c, i in ids.items() if i == interrupt.id)
        assert starts[str(interrupt.tool_call_id)].tool_call_name == "launch"
        assert json.loads(args[str(interrupt.tool_call_id)]) == {"city": city}
    subs = [e for e in first if isinstance(e, agui.SubagentStartedEvent)]
    assert sorted(str(s.parent_tool_call_id) for s in subs) == ["call_0", "call_1"]
    answers = [
        agui.ResumeEntry(interrupt_id=ids["Oslo"], status="resolved"),
        agui.ResumeEntry(interrupt_id=ids["Lima"], status="cancelled"),
    ]
    resumed = agui_run(client, agui_input("g", "r2", resume=answers))
    check_agui_order(resumed)
    assert isinstance(resumed[-1], agui.RunFinishedEvent)
    assert launched == ["Oslo"]
    subs += [e for e in resumed if isinstance(e, agui.SubagentStartedEvent)]
    sub_runs = [s.subagent_run_id for s in subs]
    # one id per invocation, which the resumed run continues (AG-UI's suspended outcome)
    assert len(set(sub_runs[:2])) == 2 and sorted(sub_runs[2:]) == sorted(sub_runs[:2])


def test_the_ui_message_stream_asks_each_held_call_under_its_own_id(served: Any) -> None:
    """North's held `launch`, `call_0`, was given the part of the lead's `call_0` (its call
    of north): its `tool-input-start` was dropped as a repeat and its input overwrote
    north's, so `useChat` showed one part, north's, with Oslo as its input."""
    _, client, launched = served
    chunks = ui_chat(client, {"id": "v", "messages": [user("Oslo Lima")]})
    ids = held(client, "v")
    starts = [(c["toolCallId"], c["toolName"]) for c in chunks if c["type"] == "tool-input-start"]
    assert len({call_id for call_id, _ in starts}) == len(starts) == 4, starts
    requests = {
        c["approvalId"]: c["toolCallId"] for c in chunks if c["type"] == "tool-approval-request"
    }
    assert sorted(requests) == sorted(ids.values())
    parts = {c["toolCallId"]: c for c in chunks if c["type"] == "tool-input-available"}
    for city, approval_id in ids.items():  # each request names a part of its own call
        part = parts[requests[approval_id]]
        assert part["toolName"] == "launch" and part["input"] == {"city": city}
    assert {parts["call_0"]["toolName"], parts["call_1"]["toolName"]} == {"north", "south"}
    oslo = approval_answer(requests[ids["Oslo"]], "Oslo", {"id": ids["Oslo"], "approved": True})
    lima = approval_answer(requests[ids["Lima"]], "Lima", {"id": ids["Lima"], "approved": False})
    answer = {**oslo, "parts": oslo["parts"] + lima["parts"]}
    done = ui_chat(client, {"id": "v", "messages": [user("Oslo Lima"), answer]})
    assert launched == ["Oslo"]
    assert done[-1]["type"] == "finish"
    ends = {c["toolCallId"]: c["type"] for c in done if c.get("toolCallId") in parts}
    assert ends[requests[ids["Oslo"]]] == "tool-output-available"
    assert ends[requests[ids["Lima"]]] == "tool-output-denied"


def test_a_chat_completion_names_each_held_call_by_its_own_id(served: Any) -> None:
    url, client, launched = served
    openai = OpenAI(base_url=f"{url}/v1", api_key="none", max_retries=0)
    reply = openai.chat.completions.create(
        model="m",
        messages=[{"role": "user", "content": "Oslo Lima"}],
        extra_headers={"X-Session-Id": "o"},
    )
    ids = held(client, "o")
    content = reply.choices[0].message.content or ""
    # Each call by its arguments and its own id: `launch({"city": "Oslo"}) [call_0]`.
    assert all(f") [{call_id}]" in content for call_id in ids.values()), content
    assert len(set(ids.values())) == 2 and content.count("launch(") == 2, content
    assert launched == []


def test_a_call_numbered_again_in_the_next_turn_is_streamed_under_an_id_of_its_own() -> None:
    """The lead's second reply numbers its call `call_0` again. The session kept both
    calls under one id, AG-UI streamed the second one's arguments into the first call,
    ended already (and its result as a second result of it), and `useChat` put both
    results on one part."""
    store = InMemorySessionStore()

    def reply(context: Context) -> Any:
        asked = max(i for i, m in enumerate(context.messages) if m.role == "user")
        done = [m for m in context.messages[asked:] if m.role == "toolResult"]
        if len(done) == 2:
            return faux_message(faux_text("both launched"))
        city = ["Oslo", "Lima"][len(done)]
        return faux_message(faux_tool_call("launch", {"city": city}, id="call_0"))

    fm = FauxModel([reply] * 100)

    async def launch(call_id: str, args: dict[str, Any], *_: Any) -> str:
        return f"launched {args['city']}"

    def make_agent(session_id: str) -> Agent[Any]:
        tool = AgentTool("launch", "Launch", "launch", SCHEMA, launch)
        return Agent(
            model=fm.model, stream_fn=fm.stream_fn, tools=[tool],
            session_store=store, session_id=session_id,
        )  # fmt: skip

    with serving(create_app(make_agent, session_store=store)) as url:
        client = httpx.Client(base_url=url, timeout=60)
        events = agui_run(client, agui_input("g", "r", "go"))
        check_agui_order(events)
        starts = [e.tool_call_id for e in events if isinstance(e, agui.ToolCallStartEvent)]
        args: dict[str, str] = {}
        for e in events:
            if isinstance(e, agui.ToolCallArgsEvent):
                args[e.tool_call_id] = args.get(e.tool_call_id, "") + e.delta
        assert [json.loads(args[i])["city"] for i in starts] == ["Oslo", "Lima"]
        results = {e.tool_call_id: e.content for e in events if e.type == "TOOL_CALL_RESULT"}
        assert [results[i] for i in starts] == ["launched Oslo", "launched Lima"]
        stored = [m.tool_call_id for m in store.load("g") if isinstance(m, ToolResultMessage)]
        assert stored == starts  # the ids the client may answer are the session's
        had = agui.AssistantMessage(
            id="a1",
            tool_calls=[
                agui.ToolCall(id=i, function=agui.FunctionCall(name="launch", arguments=args[i]))
                for i in starts
            ],
        )
        again = agui_run(client, agui_input("g", "r2", "go", had, "go again"))
        check_agui_order(again)  # the client keeps its messages: no id it has comes again
        new = [e.tool_call_id for e in again if isinstance(e, agui.ToolCallStartEvent)]
        assert len(new) == 2 and not set(new) & set(starts)

        chunks = ui_chat(client, {"id": "v", "messages": [user("go")]})
        parts = [c["toolCallId"] for c in chunks if c["type"] == "tool-input-start"]
        assert len(set(parts)) == len(parts) == 2
        outputs = {c["toolCallId"]: c["output"] for c in chunks if "output" in c}
        assert [outputs[i] for i in parts] == ["launched Oslo", "launched Lima"]
        client.close()
