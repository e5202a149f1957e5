"""An MCP server whose tools ask the client for a model's answer (`sampling/createMessage`)
or its roots (`roots/list`), or send log messages and progress, in the middle of a call, as
the MCP SDK's tests/client/test_sampling_callback.py, test_list_roots_callback.py and
test_logging_callback.py do.

    python mcp_asking_server.py

The official SDK's `MCPServer` over stdio. Tools:
- `summarise_or_fail` / `summarise_or_default`: ask for a sampled answer, failing on the
  refusal or going on without it;
- `roots_or_default`: ask for the client's roots, going on without them;
- `chatty`: log messages of several levels and shapes, progress, then its answer.
"""

from __future__ import annotations

import warnings

from mcp.server.mcpserver import Context, MCPServer
from mcp.types import SamplingMessage, TextContent

warnings.simplefilter("ignore")  # the SDK marks sampling and logging deprecated

server = MCPServer("yiem-asking-server", log_level="WARNING")


async def _sample(ctx: Context, text: str) -> str:
    question = SamplingMessage(role="user", content=TextContent(type="text", text=text))
    result = await ctx.session.create_message(
        [question], max_tokens=16, related_request_id=ctx.request_id
    )
    return f"sampled: {result.content}"


@server.tool(description="Summarise a text with the client's model; fail without it.")
async def summarise_or_fail(text: str, ctx: Context) -> str:
    return await _sample(ctx, text)


@server.tool(description="Summarise a text with the client's model, or cut it short.")
async def summarise_or_default(text: str, ctx: Context) -> str:
    try:
        return await _sample(ctx, text)
    except Exception as exc:
        return f"{text[:5]}... (no sampling: {exc})"


@server.tool(description="List the client's roots, or say there are none.")
async def roots_or_default(ctx: Context) -> str:
    try:
        roots = await ctx.session.list_roots()
    except Exception as exc:
        return f"no roots ({exc})"
    return ", ".join(str(root.uri) for root in roots.roots)


@server.tool(description="Log at several levels, report progress, then answer.")
async def chatty(ctx: Context) -> str:
    await ctx.debug("starting")
    await ctx.info({"step": 1, "of": 2})
    await ctx.report_progress(1, 2, "half way")
    await ctx.warning(["a", "list"])
    await ctx.error("not really an error")
    await ctx.report_progress(2, 2, "done")
    return "chatty is done"


if __name__ == "__main__":
    server.run("stdio")
