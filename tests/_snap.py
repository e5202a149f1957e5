"""A tool file whose `snap` tool returns an image, and the OpenAI-format streamed call of
it: what the tests of a model that reads images (`--vision`, an agent file's `vision`)
write in a tools folder and enqueue on a replay server."""

from __future__ import annotations

from typing import Any

PNG = (
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJ"
    "AAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg=="
)
"""A 1×1 PNG, base64: the image `snap` returns."""

SNAP_TOOL = f"""
from yiemagent import AgentTool, AgentToolResult, ImageContent

def execute(tool_call_id, args, signal, on_update):
    return AgentToolResult([ImageContent("{PNG}", "image/png")])

def get_tool():
    return AgentTool(name="snap", label="Snap", description="Take a picture",
                     input_schema={{"type": "object", "properties": {{}}}}, execute=execute)
"""
"""The tool file (`snap.py`)."""

SNAP_CALL: dict[str, Any] = {"index": 0, "id": "call_1", "type": "function",
                             "function": {"name": "snap", "arguments": "{}"}}  # fmt: skip
"""A streamed `tool_calls` entry calling `snap`, for `openai_chunks`."""
