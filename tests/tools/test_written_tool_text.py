"""DESIGN R-4.15: a tool `writeTool` wrote that returns a value other than text (a dict, a
list) hands the model its JSON with every character as it is: "北京", "22°C" and "café"
reached the model as `\\u5317\\u4eac`, `22\\u00b0C` and `caf\\u00e9`, six characters and
several tokens for each, which small models quote back literally."""

from __future__ import annotations

import json
from pathlib import Path

from yiemagent import ToolStore, validate_arguments_against_schema, write_tool_tool

from ._kit import run_tool, text_of

VALUE = {"city": "北京", "temp": "22°C", "note": "café", "tags": ["日本語", "😀"]}


async def test_a_written_tools_value_keeps_its_characters(tmp_path: Path) -> None:
    store = ToolStore("agent")
    writer = store.register(write_tool_tool(store, tmp_path))
    request = {
        "name": "weather",
        "label": "Weather",
        "description": "The weather in Beijing",
        "inputSchema": {"type": "object", "properties": {}},
        "executeCode": f"return {VALUE!r}",
    }
    checked = validate_arguments_against_schema(writer.input_schema, request, tool_name="writeTool")
    written = await run_tool(writer, checked)
    assert not isinstance(written, str) and "weather" in (written.added_tool_names or [])

    text = text_of(await run_tool(store.tools["weather"], {}))
    assert "\\u" not in text
    assert json.loads(text) == VALUE
