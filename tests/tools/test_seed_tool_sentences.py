"""Seed 000's tool registry and tool files, sentence by sentence (DESIGN R-4.12..R-4.15):
listTools called directly, loadTools' order and skips, the file contract's optional hooks
scoped per file, per-store clearing, and the self-tooling workflow across a restart."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from yiemagent import (
    AgentContext,
    AgentLoopConfig,
    AssistantMessage,
    Model,
    ToolCall,
    ToolStore,
    execute_tool_calls,
    list_tools_tool,
    validate_arguments_against_schema,
    write_tool_tool,
)

from ._kit import run_tool, text_of

FILE = """
import datetime


def validate_arguments(args):
    return None if args["{key}"] else "{key} must not be empty"


def prepare_arguments(args):
    return {{"{key}": str(args.get("{key}", "")).strip()}}


def execute(tool_call_id, args, signal, on_update):
    return "{name}:" + args["{key}"]


def get_tool():
    from yiemagent import AgentTool

    return AgentTool(
        name="{name}",
        label="{label}",
        description="{description}",
        input_schema={{
            "type": "object",
            "properties": {{"{key}": {{"type": "string"}}}},
            "required": ["{key}"],
        }},
        execute=execute,
        prepare_arguments=prepare_arguments,
        validate_arguments=validate_arguments,
    )
"""


def tool_file(name: str, key: str, label: str = "Label", description: str = "Does it") -> str:
    return FILE.format(name=name, key=key, label=label, description=description)


async def run_calls(store: ToolStore, *calls: ToolCall) -> list[tuple[str, bool]]:
    message = AssistantMessage(content=list(calls), stop_reason="toolUse")
    batch = await execute_tool_calls(
        AgentContext(tools=list(store.tools.values())),
        message,
        AgentLoopConfig(model=Model(id="m", provider="p", api="faux")),
    )
    return [(text_of_message(m.content), m.is_error) for m in batch.messages]


def text_of_message(content: Any) -> str:
    return "".join(getattr(block, "text", "") for block in content)


async def test_list_tools_executed_directly_with_no_signal() -> None:
    """000 §1 step 1: `tool.execute("call-1", Dict(), nothing, x->x)`; the text lists each
    tool as `- getTime: Time Lookup — Get current local time...` (DESIGN R-4.14 adds the
    count to the heading)."""
    store = ToolStore("myAgent")
    store.register(
        _plain("getTime", "Time Lookup", "Get current local time for a city."),
    )
    store.register(_plain("getWeather", "Weather Lookup", "Fetch current weather."))
    execute: Any = list_tools_tool(store).execute  # the seed passes `nothing` as the signal
    result = await execute("call-1", {}, None, lambda partial: partial)
    lines = text_of(result).splitlines()
    assert lines == [
        "Available tools (2):",
        "- getTime: Time Lookup — Get current local time for a city.",
        "- getWeather: Weather Lookup — Fetch current weather.",
    ]


def _plain(name: str, label: str, description: str) -> Any:
    from yiemagent import AgentTool

    return AgentTool(
        name, label, description, {"type": "object", "properties": {}}, lambda *a: name
    )


async def test_load_dir_sorts_files_skips_registry_and_scopes_each_files_hooks(
    tmp_path: Path,
) -> None:
    """000 §4: scans for tool files "excluding files matching `registry` in name", "Sorts
    filenames alphabetically", each file in its own module — "`getTime.validateRequiredArgs`
    is distinct from `getWeather.validateRequiredArgs`" — and auto-registers listTools."""
    (tmp_path / "zeta.py").write_text(tool_file("getWeather", "city"))
    (tmp_path / "alpha.py").write_text(tool_file("getTime", "zone"))
    (tmp_path / "tool_registry.py").write_text('raise RuntimeError("never imported")\n')
    store = ToolStore("myAgent")
    tools = store.load_dir(tmp_path)
    assert list(tools) == ["getTime", "getWeather", "listTools"]
    results = await run_calls(
        store,
        ToolCall("1", "getTime", {"zone": "  UTC "}),
        ToolCall("2", "getWeather", {"city": " Tokyo"}),
        ToolCall("3", "getWeather", {"city": "   "}),
        ToolCall("4", "getTime", {}),
    )
    assert results[:2] == [("getTime:UTC", False), ("getWeather:Tokyo", False)]
    assert results[2][1] and "city must not be empty" in results[2][0]
    assert results[3][1] and "zone must not be empty" in results[3][0]


def test_clearing_one_store_leaves_the_other(tmp_path: Path) -> None:
    """000 §4: "clearTools(storeA) # storeB is unaffected"; loading one folder into two
    stores gives each its own tools."""
    (tmp_path / "time.py").write_text(tool_file("getTime", "zone"))
    store_a, store_b = ToolStore("A"), ToolStore("B")
    store_a.load_dir(tmp_path)
    store_b.load_dir(tmp_path)
    store_b.register(_plain("getWeather", "Weather", "Fetch weather."))
    store_a.clear()
    assert list(store_a.tools) == []
    assert list(store_b.tools) == ["getTime", "listTools", "getWeather"]
    assert store_b.tools["getTime"] is not ToolStore("C").load_dir(tmp_path)["getTime"]


async def test_a_written_tool_is_loaded_again_after_a_restart(tmp_path: Path) -> None:
    """000 §15 self-tooling workflow: writeTool generates the file; "Agent restarts (or
    hot-reloads) → loadTools(agent._tool_store, ...) picks up the new file"; `parallel`
    defaults to false."""
    folder = tmp_path / "tools"
    store = ToolStore("agent")
    writer = store.register(write_tool_tool(store, folder))
    request = {
        "name": "searchWine",
        "label": "Wine Search",
        "description": "Search a wine database.",
        "inputSchema": {
            "type": "object",
            "properties": {"query": {"type": "string"}},
            "required": ["query"],
        },
        "executeCode": "return 'Found 5 ' + args['query'] + ' wines'",
    }
    checked = validate_arguments_against_schema(writer.input_schema, request, tool_name="writeTool")
    written = await run_tool(writer, checked)
    assert not isinstance(written, str) and written.added_tool_names == ["searchWine"]
    assert store.tools["searchWine"].parallel is False

    restarted = ToolStore("agent")
    restarted.load_dir(folder)
    assert list(restarted.tools) == ["searchWine", "listTools"]
    assert restarted.tools["searchWine"].parallel is False
    results = await run_calls(restarted, ToolCall("c", "searchWine", {"query": "cabernet"}))
    assert results == [("Found 5 cabernet wines", False)]
