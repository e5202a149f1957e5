"""An MCP server whose tools answer with structured content beside, or instead of, text
that does not hold it (DESIGN §12), as some servers do.

    python mcp_structured_server.py

The official SDK's low-level `Server` over stdio. Tools:
- `issues`: a summary text ("2 issues listed") and the issues as structured content;
- `data_only`: structured content and no content at all;
- `echoed`: the structured content and its JSON as text (what the spec asks for);
- `empty_data`: an empty structured object and no content;
- `off_schema`: structured content its declared output schema does not allow;
- `text_only`: declares an output schema, answers with text and no structured content;
- `data_error`: a failure (`isError`) said only in structured content, off its output schema;
- `deep_text`: structured content beside a text of arrays nested past Python's recursion limit.
"""

from __future__ import annotations

import json
from typing import Any

import anyio
import mcp_types as types
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server

ISSUES = {"issues": [{"id": 7, "title": "crash on start"}, {"id": 9, "title": "typo"}]}
NO_INPUT: dict[str, Any] = {"type": "object", "properties": {}}
TOOLS = [
    "issues",
    "data_only",
    "echoed",
    "empty_data",
    "off_schema",
    "text_only",
    "data_error",
    "deep_text",
]
DEEP_TEXT = "[" * 5000 + "]" * 5000
COUNT = {"type": "object", "properties": {"count": {"type": "integer"}}, "required": ["count"]}
OUTPUT_SCHEMAS = {"off_schema": COUNT, "text_only": COUNT, "data_error": COUNT}


async def list_tools(
    ctx: Any, params: types.PaginatedRequestParams | None
) -> types.ListToolsResult:
    return types.ListToolsResult(
        tools=[
            types.Tool(
                name=name,
                description=f"{name}.",
                input_schema=NO_INPUT,
                output_schema=OUTPUT_SCHEMAS.get(name),
            )
            for name in TOOLS
        ]
    )


async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
    if params.name == "issues":
        summary = types.TextContent(type="text", text="2 issues listed")
        return types.CallToolResult(content=[summary], structured_content=ISSUES)
    if params.name == "deep_text":
        deep = types.TextContent(type="text", text=DEEP_TEXT)
        return types.CallToolResult(content=[deep], structured_content=ISSUES)
    if params.name == "data_only":
        return types.CallToolResult(content=[], structured_content=ISSUES)
    if params.name == "echoed":
        text = types.TextContent(type="text", text=json.dumps(ISSUES, indent=2))
        return types.CallToolResult(content=[text], structured_content=ISSUES)
    if params.name == "off_schema":  # its output schema says count is an integer
        text = types.TextContent(type="text", text="about 3")
        return types.CallToolResult(content=[text], structured_content={"count": "about 3"})
    if params.name == "data_error":
        failure = {"error": "rate limited", "retry_after_s": 30}
        return types.CallToolResult(content=[], structured_content=failure, is_error=True)
    if params.name == "text_only":
        return types.CallToolResult(content=[types.TextContent(type="text", text="3 of them")])
    return types.CallToolResult(content=[], structured_content={})


server = Server("yiem-structured-server", on_list_tools=list_tools, on_call_tool=call_tool)


async def main() -> None:
    async with stdio_server() as (read, write):
        await server.run(read, write, server.create_initialization_options())


if __name__ == "__main__":
    anyio.run(main)
