"""End to end through `agent_loop` and the faux model: a model writes a tool with `writeTool`
and calls it on the very next turn (DESIGN R-4.15)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from yiemagent import (
    AgentContext,
    AgentLoopConfig,
    ToolResultMessage,
    TurnContext,
    TurnUpdate,
    UserMessage,
    agent_loop,
)
from yiemagent.ai.providers.faux import FauxModel, faux_message, faux_tool_call
from yiemagent.tools import ToolStore, write_tool_tool
from yiemagent.types import text_of

ADD_SPEC: dict[str, Any] = {
    "name": "addNumbers",
    "label": "Add numbers",
    "description": "Adds a and b.",
    "inputSchema": {
        "type": "object",
        "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
        "required": ["a", "b"],
    },
    "executeCode": "return str(args['a'] + args['b'])",
}


def script() -> FauxModel:
    return FauxModel(
        [
            faux_message("I will write a tool.", faux_tool_call("writeTool", ADD_SPEC, id="w1")),
            faux_message(faux_tool_call("addNumbers", {"a": "2", "b": 3}, id="a1")),
            "2 + 3 = 5",
        ]
    )


async def run(
    fm: FauxModel, store: ToolStore, *, rebuild_tools: bool
) -> tuple[list[Any], list[Any]]:
    def next_turn(turn: TurnContext) -> TurnUpdate:
        ctx = turn.context
        tools = list(store.tools.values())
        return TurnUpdate(context=AgentContext(ctx.system_prompt, ctx.messages, tools))

    config = AgentLoopConfig(model=fm.model, prepare_next_turn=next_turn if rebuild_tools else None)
    context = AgentContext("You write tools.", [], list(store.tools.values()))
    stream = agent_loop([UserMessage("add 2 and 3")], context, config, stream_fn=fm.stream_fn)
    events = [event async for event in stream]
    return events, await stream.result()


async def test_r4_15_write_tool_then_call_it_on_the_next_turn(tmp_path: Path) -> None:
    store = ToolStore("e2e")
    store.register(write_tool_tool(store, tmp_path))
    fm = script()
    events, new_messages = await run(fm, store, rebuild_tools=True)

    results = [m for m in new_messages if isinstance(m, ToolResultMessage)]
    assert [r.tool_call_id for r in results] == ["w1", "a1"]
    written, added = results
    assert not written.is_error, text_of(written.content)
    assert written.added_tool_names == ["addNumbers"]
    assert (tmp_path / "addNumbers.py").is_file()
    assert not added.is_error and text_of(added.content) == "5"
    assert [t.name for t in fm.contexts[0].tools or []] == ["writeTool"]
    assert [t.name for t in fm.contexts[1].tools or []] == ["writeTool", "addNumbers"]
    assert events[-1].type == "agent_end" and events[-1].reason == "stop"
    ends = [e for e in events if e.type == "tool_execution_end"]
    assert [e.tool_call_id for e in ends] == ["w1", "a1"]


async def test_r4_1_without_rebuilding_tools_the_new_tool_is_not_found(tmp_path: Path) -> None:
    store = ToolStore("e2e-static")
    store.register(write_tool_tool(store, tmp_path))
    fm = script()
    _, new_messages = await run(fm, store, rebuild_tools=False)
    results = [m for m in new_messages if isinstance(m, ToolResultMessage)]
    assert [r.tool_call_id for r in results] == ["w1", "a1"]
    assert results[1].is_error
    assert text_of(results[1].content) == 'Tool "addNumbers" not found. Available tools: writeTool'
