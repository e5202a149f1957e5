"""A run's event stream as LangChain checks `astream_events` (libs/core/tests/unit_tests/
runnables/test_runnable_events_v2.py): every start has its one end, after it and in
nesting order; the streamed chunks add up to the final message; a tool's custom events
(`dispatch_custom_event`, here `on_update`) come between its start and its end; a tool
error ends its call (`on_tool_error`, here `tool_execution_end` with `is_error`); and a
child run's events arrive inside the parent's tool call, tagged with it (`parent_ids`, here
`NestedAgentEvent.agent_path` and `tool_call_id`). Run through `agent_loop` and an Agent on
the faux provider, for any script of turns (hypothesis)."""

from __future__ import annotations

import asyncio
from typing import Any

from hypothesis import HealthCheck, given, settings, strategies as st

from yiemagent import (
    Agent,
    AgentContext,
    AgentEvent,
    AgentLoopConfig,
    AgentTool,
    AssistantMessage,
    NestedAgentEvent,
    TextContent,
    ToolResultMessage,
    UserMessage,
    agent_loop,
)
from yiemagent.ai.providers.faux import FauxModel, faux_message, faux_text, faux_tool_call
from yiemagent.types import text_of

SCHEMA: dict[str, Any] = {"type": "object", "properties": {"n": {"type": "integer"}}}
KINDS = ("ok", "raise", "progress", "unknown", "invalid")


def tool_of(parallel: bool) -> list[AgentTool]:
    def ok(call_id: str, args: Any, signal: Any, on_update: Any) -> str:
        return f"ok {args['n']}"

    def raising(call_id: str, args: Any, signal: Any, on_update: Any) -> str:
        raise RuntimeError(f"failed {args['n']}")

    async def progress(call_id: str, args: Any, signal: Any, on_update: Any) -> str:
        for step in range(3):
            on_update(step)
            await asyncio.sleep(0)
        return f"done {args['n']}"

    return [
        AgentTool(name, name, name, SCHEMA, execute, parallel=parallel)
        for name, execute in (("ok", ok), ("raise", raising), ("progress", progress))
    ]


turns = st.lists(
    st.tuples(
        st.text(max_size=24),  # the turn's text, any characters
        st.lists(st.sampled_from(KINDS), max_size=3),  # its calls
    ),
    min_size=1,
    max_size=4,
)


def script(plan: list[tuple[str, list[str]]]) -> list[AssistantMessage]:
    replies = []
    for turn, (text, kinds) in enumerate(plan):
        calls = []
        for i, kind in enumerate(kinds):
            name = {"unknown": "missing", "invalid": "ok"}.get(kind, kind)
            args = {"n": "many"} if kind == "invalid" else {"n": turn * 10 + i}
            calls.append(faux_tool_call(name, args))
        blocks = ([faux_text(text)] if text else []) + calls
        replies.append(faux_message(*blocks))
    if replies[-1].tool_calls:
        replies.append(faux_message(faux_text("the end")))
    return replies


def check_stream(events: list[AgentEvent], new: list[Any], fm: FauxModel) -> None:
    kinds = [e.type for e in events]
    assert kinds[0] == "agent_start" and kinds[-1] == "agent_end"
    assert kinds.count("agent_start") == kinds.count("agent_end") == 1
    # turns alternate start, end; messages never interleave (a message_start's end comes
    # before the next message_start)
    opened: list[str] = []
    for kind in kinds:
        if kind in ("turn_start", "message_start"):
            assert kind not in opened
            opened.append(kind)
        elif kind in ("turn_end", "message_end"):
            assert opened and opened.pop() == kind.replace("end", "start")
    assert opened == []
    # every streamed chunk adds up to the final message's text
    chunks: list[str] = []
    finals: list[AssistantMessage] = []
    for event in events:
        if event.type == "message_update":
            delta = event.assistant_message_event
            if delta.type == "text_delta":
                chunks.append(delta.delta)
        elif event.type == "message_end" and isinstance(event.message, AssistantMessage):
            texts = [b.text for b in event.message.content if isinstance(b, TextContent)]
            assert "".join(chunks) == "".join(texts)
            chunks = []
            finals.append(event.message)
    assert finals == [m for m in new if isinstance(m, AssistantMessage)]
    # each call: one start, its updates, one end, then its result message
    for message in finals:
        for call in message.tool_calls:
            own = [
                (i, e) for i, e in enumerate(events) if getattr(e, "tool_call_id", None) == call.id
            ]
            own_kinds = [e.type for _, e in own]
            assert own_kinds[0] == "tool_execution_start"
            assert (
                own_kinds.count("tool_execution_start")
                == own_kinds.count("tool_execution_end")
                == 1
            )
            end_at, end = next((i, e) for i, e in own if e.type == "tool_execution_end")
            assert set(own_kinds[1:]) <= {"tool_execution_update", "tool_execution_end"}
            assert own_kinds[-1] == "tool_execution_end"
            if call.name == "progress" and not end.is_error:
                updates = [e.partial_result for _, e in own if e.type == "tool_execution_update"]
                assert updates == [0, 1, 2]
            result_at = next(
                i
                for i, e in enumerate(events)
                if e.type == "message_end"
                and isinstance(e.message, ToolResultMessage)
                and e.message.tool_call_id == call.id
            )
            assert result_at > end_at
            result = events[result_at].message
            assert result.is_error == end.is_error
            assert end.is_error == (
                call.name in ("raise", "missing") or call.arguments["n"] == "many"
            )
    assert fm.call_count == len(finals)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(turns, st.booleans(), st.integers(min_value=1, max_value=5))
def test_any_run_s_events_nest_and_add_up(
    plan: list[tuple[str, list[str]]], parallel: bool, chunk_size: int
) -> None:
    async def run() -> None:
        fm = FauxModel(script(plan), chunk_size=chunk_size)
        config = AgentLoopConfig(model=fm.model)
        context = AgentContext("", [], tool_of(parallel))
        stream = agent_loop([UserMessage("go")], context, config, stream_fn=fm.stream_fn)
        events = [event async for event in stream]
        check_stream(events, await stream.result(), fm)

    asyncio.run(run())


async def test_a_child_agent_s_events_arrive_inside_the_parent_s_call() -> None:
    # a child runnable's events carry the parent's run id; here the sub-agent's events
    # carry its path and the parent's call id, and come between that call's start and end
    child_fm = FauxModel(["child says hi"], chunk_size=3)
    child = Agent(name="child", model=child_fm.model, stream_fn=child_fm.stream_fn)
    fm = FauxModel([faux_message(faux_tool_call("child", {"input": "hello"})), "parent done"])
    parent = Agent(name="parent", model=fm.model, stream_fn=fm.stream_fn, tools=[child.as_tool()])
    events: list[AgentEvent] = []
    parent.subscribe(lambda e, _s: events.append(e))
    await parent.prompt("go")
    [call] = [
        c for m in parent.state.messages if isinstance(m, AssistantMessage) for c in m.tool_calls
    ]
    kinds = [e.type for e in events]
    start = kinds.index("tool_execution_start")
    end = kinds.index("tool_execution_end")
    nested = [(i, e) for i, e in enumerate(events) if isinstance(e, NestedAgentEvent)]
    assert nested and all(start < i < end for i, _ in nested)
    assert {(e.agent_path, e.tool_call_id) for _, e in nested} == {(("parent", "child"), call.id)}
    inner = [e.event.type for _, e in nested]
    assert inner[0] == "agent_start" and inner[-1] == "agent_end"
    deltas = [
        e.event.assistant_message_event.delta
        for _, e in nested
        if e.event.type == "message_update" and e.event.assistant_message_event.type == "text_delta"
    ]
    assert "".join(deltas) == "child says hi"
    [result] = [m for m in parent.state.messages if isinstance(m, ToolResultMessage)]
    assert text_of(result.content) == "child says hi"
