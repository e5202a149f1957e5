"""DESIGN R-4.15 with R-4.1: writeTool driven by the per-call pipeline. A refusal is an error
result that says why; a success carries `added_tool_names`, and a tool written in one batch is
called in the next batch of the same store."""

from __future__ import annotations

from pathlib import Path

from yiemagent import (
    AbortSignal,
    AgentContext,
    AgentEvent,
    AgentLoopConfig,
    ToolStore,
    execute_tool_calls,
    write_tool_tool,
)
from yiemagent.ai.providers.faux import FauxModel, faux_message, faux_tool_call

WRITE = {
    "name": "double",
    "label": "Double",
    "description": "Doubles x",
    "inputSchema": '{"type": "object", "properties": {"x": {"type": "integer"}}}',
    "executeCode": "return str(args['x'] * 2)",
}


def listing(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir())


async def test_r4_15_through_the_pipeline(tmp_path: Path) -> None:
    store = ToolStore("agent")
    store.register(write_tool_tool(store, tmp_path))
    config = AgentLoopConfig(model=FauxModel([]).model)
    events: list[AgentEvent] = []

    async def emit(event: AgentEvent) -> None:
        events.append(event)

    async def batch(*calls: object) -> list[tuple[bool, str, list[str] | None]]:
        context = AgentContext("sys", [], list(store.tools.values()))
        message = faux_message(*calls)  # type: ignore[arg-type]
        result = await execute_tool_calls(context, message, config, AbortSignal(), emit)
        return [
            (m.is_error, "".join(getattr(c, "text", "") for c in m.content), m.added_tool_names)
            for m in result.messages
        ]

    bad = await batch(faux_tool_call("writeTool", {**WRITE, "name": "../double"}))
    assert bad[0][0] is True and "invalid tool name '../double'" in bad[0][1]
    assert listing(tmp_path) == [] and list(store.tools) == ["writeTool"]

    good = await batch(faux_tool_call("writeTool", WRITE))  # inputSchema sent as a JSON string
    assert good[0][0] is False and good[0][2] == ["double"]
    assert listing(tmp_path) == ["double.py"]

    used = await batch(faux_tool_call("double", {"x": "21"}))
    assert used == [(False, "42", None)]
    assert [e.type for e in events].count("tool_execution_end") == 3
