"""An MCP server that breaks the protocol on purpose, for the tests of DESIGN §8 and §12.

    python mcp_odd_server.py

It is the official SDK's low-level `Server` over the SDK's stdio transport; only what it
writes is changed on the way out, as a broken server would write it:

- `tools/list` lists `echo` (sound) beside tools whose schemas are broken: an input schema
  that is a string (`schema_string`), of type string (`schema_not_object`), against the
  meta-schema (`schema_invalid`, `schema_bad_property`), or missing (`schema_missing`), and
  an output schema that is not a schema (`output_schema_invalid`,
  `output_schema_bad_property`);
- the answer to `echo` of `"stray"` carries an id that matches no request, that of
  `"garbled"` a result that is not an object, that of `"old_version"` says `"jsonrpc": "1.0"`,
  that of `"no_id"` an error with `"id": null`,
  and that of `"bad_result"` an object that is no `CallToolResult`;
- after `echo` of `"mute_lists"`, `tools/list` is never answered.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import anyio
import mcp_types as types
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server
from mcp.shared.message import SessionMessage

BROKEN_INPUT: dict[str, Any] = {
    "schema_string": "an object with a text",
    "schema_not_object": {"type": "string"},
    "schema_invalid": {"type": "object", "properties": 5},
    "schema_bad_property": {"type": "object", "properties": {"text": {"type": 5}}},
}
OBJECT = {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]}


muted: list[bool] = []


async def list_tools(
    ctx: Any, params: types.PaginatedRequestParams | None
) -> types.ListToolsResult:
    if muted:
        await anyio.sleep_forever()
    names = [
        "echo",
        *BROKEN_INPUT,
        "schema_missing",
        "output_schema_invalid",
        "output_schema_bad_property",
    ]
    return types.ListToolsResult(
        tools=[types.Tool(name=name, description=f"{name}.", input_schema=OBJECT) for name in names]
    )


async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
    text = str((params.arguments or {}).get("text", ""))
    if text == "mute_lists":
        muted.append(True)
    return types.CallToolResult(content=[types.TextContent(type="text", text=text)])


server = Server("yiem-odd-server", on_list_tools=list_tools, on_call_tool=call_tool)


def _break(message: Any) -> Any:
    """The message as the broken server writes it."""
    if not isinstance(message, types.JSONRPCResponse):
        return message
    result = message.result
    for tool in result.get("tools", []):
        name = tool["name"]
        if name in BROKEN_INPUT:
            tool["inputSchema"] = BROKEN_INPUT[name]
        elif name == "schema_missing":
            del tool["inputSchema"]
        elif name == "output_schema_invalid":
            tool["outputSchema"] = {"type": "nothing"}
        elif name == "output_schema_bad_property":
            tool["outputSchema"] = {"type": "object", "properties": {"text": {"type": 5}}}
    content = result.get("content") or [{}]
    said = content[0].get("text")
    if said == "stray":
        return types.JSONRPCResponse(jsonrpc="2.0", id=f"{message.id}-stray", result=result)
    if said == "garbled":
        return types.JSONRPCResponse.model_construct(jsonrpc="2.0", id=message.id, result="oops")
    if said == "old_version":
        return types.JSONRPCResponse.model_construct(jsonrpc="1.0", id=message.id, result=result)
    if said == "no_id":
        error = types.ErrorData(code=-32603, message="lost track of the request")
        return types.JSONRPCError(jsonrpc="2.0", id=None, error=error)
    if said == "bad_result":
        return types.JSONRPCResponse(jsonrpc="2.0", id=message.id, result={"content": "no list"})
    return message


class _Breaking:
    """The SDK's write stream, with each message broken by `_break` on its way out."""

    def __init__(self, inner: Any) -> None:
        self._inner = inner

    async def send(self, item: SessionMessage) -> None:
        await self._inner.send(SessionMessage(_break(item.message), item.metadata))

    async def aclose(self) -> None:
        await self._inner.aclose()

    async def __aenter__(self) -> _Breaking:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()


@asynccontextmanager
async def breaking_stdio() -> AsyncIterator[tuple[Any, Any]]:
    async with stdio_server() as (read, write):
        yield read, _Breaking(write)


async def main() -> None:
    async with breaking_stdio() as (read, write):
        await server.run(read, write, server.create_initialization_options())


if __name__ == "__main__":
    anyio.run(main)
