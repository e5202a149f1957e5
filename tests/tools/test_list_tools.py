"""DESIGN R-4.14: listTools lists the store's tools at call time, with their count."""

from __future__ import annotations

from yiemagent import AgentTool, AgentToolResult, ToolStore, list_tools_tool

from ._kit import run_tool, text_of


def make_tool(name: str, label: str, description: str) -> AgentTool:
    return AgentTool(
        name=name,
        label=label,
        description=description,
        input_schema={"type": "object", "properties": {}},
        execute=lambda *args: "ok",
    )


async def test_r4_14_lists_name_label_description_and_count_at_call_time() -> None:
    store = ToolStore()
    store.register(make_tool("getTime", "Time Lookup", "Get current local time"))
    lister = store.register(list_tools_tool(store))
    store.register(make_tool("getWeather", "Weather Lookup", "Fetch current\n  weather"))
    result = await run_tool(lister, {})
    assert isinstance(result, AgentToolResult)
    lines = text_of(result).splitlines()
    assert lines[0] == "Available tools (3):"
    assert lines[1] == "- getTime: Time Lookup — Get current local time"
    assert lines[2].startswith("- listTools: List tools — ")
    assert lines[3] == "- getWeather: Weather Lookup — Fetch current weather"
    assert result.details == {"count": 3, "names": ["getTime", "listTools", "getWeather"]}


async def test_r4_14_sees_only_its_own_store() -> None:
    mine, other = ToolStore(), ToolStore()
    other.register(make_tool("secret", "Secret", "Not yours"))
    text = text_of(await run_tool(list_tools_tool(mine), {}))
    assert text == "Available tools (0):"
    assert list_tools_tool(mine).name == "listTools"
