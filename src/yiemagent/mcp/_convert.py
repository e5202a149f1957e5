"""MCP results ↔ yiemagent tool results (DESIGN §12).

Client side (`result_from_mcp`): text and image blocks map one to one (the loop turns an
image whose data is not base64 into a text naming it, as for every tool); an embedded
resource becomes its text (or an image, for an image blob); audio, binary blobs and
resource links become a one-line text naming them. Structured content goes to `details`,
and also as JSON text when there is no other content. Text beyond `max_chars` is cut, also
an error's, as the run's `max_tool_result_chars` cuts a result (`cut_tool_result`: each
text in its middle, its end kept, with one note), so a result cut here is not cut there
again. `isError` raises `MCPToolError`, which the pipeline turns into the call's error
result (its text the result's texts, or its structured content as JSON when it has none).
A result is never empty.

Server side (`result_to_mcp`): a `ToolResultMessage` becomes a `CallToolResult`: text and
image blocks, `isError` from the message, and `details`, when it is a JSON object, in
`_meta` under `DETAILS_META`, not as `structuredContent`: details are the application's,
never the model's, and clients hand a model the structured content in place of the text
(pydantic-ai, Claude Code), so the model would read the metadata and not the answer. The
client side reads them back into `details`.
"""

from __future__ import annotations

import base64
import binascii
import json
from typing import TYPE_CHECKING, Any

from yiemagent.mcp._errors import MCPToolError
from yiemagent.types import AgentToolResult, ImageContent, TextContent, ToolResultMessage
from yiemagent.types.text import cut_middle
from yiemagent.types.tools import TOOL_RESULT_LEFT_OUT, cut_tool_result, is_json_of

if TYPE_CHECKING:
    from mcp.types import CallToolResult, ContentBlock

__all__ = [
    "DETAILS_META",
    "content_from_mcp",
    "result_from_mcp",
    "result_to_mcp",
]


DETAILS_META = "yiemagent/details"
"""The `_meta` key of a served result that holds its tool's `details`."""


def _blob_size(data: str) -> str:
    try:
        n = len(base64.b64decode(data, validate=False))
    except (binascii.Error, ValueError):
        n = len(data)
    return f"{n} bytes"


def content_from_mcp(block: ContentBlock) -> TextContent | ImageContent:
    """One MCP content block as a yiemagent content block (an image is checked by the
    loop, as every tool's is)."""
    from mcp import types

    if isinstance(block, types.TextContent):
        return TextContent(block.text)
    if isinstance(block, types.ImageContent):
        return ImageContent(block.data, block.mime_type)
    if isinstance(block, types.AudioContent):
        return TextContent(f"[audio {block.mime_type}, {_blob_size(block.data)}]")
    if isinstance(block, types.EmbeddedResource):
        resource = block.resource
        mime = resource.mime_type or "application/octet-stream"
        if isinstance(resource, types.TextResourceContents):
            return TextContent(f"[resource {resource.uri}]\n{resource.text}")
        if mime.startswith("image/"):
            return ImageContent(resource.blob, mime)
        return TextContent(f"[resource {resource.uri}: {mime}, {_blob_size(resource.blob)}]")
    if isinstance(block, types.ResourceLink):
        described = f" — {block.description}" if block.description else ""
        return TextContent(f"[resource link {block.name}: {block.uri}{described}]")
    kind = getattr(block, "type", type(block).__name__)
    return TextContent(f"[unsupported MCP content {kind}]")


def result_from_mcp(
    result: CallToolResult, tool_name: str, *, max_chars: int | None = None
) -> AgentToolResult:
    """A `CallToolResult` as an `AgentToolResult`.

    Args:
        result: what the server answered.
        tool_name: the tool's name, for the texts of empty results.
        max_chars: the most characters of text the result, or the error, keeps (None:
            all). Text beyond it is cut in its middle (`cut_tool_result`) with a line saying
            how much was left out: every later
            model call of the run and the session carries the result, so one that does not
            fit the model's context would make each of them fail.

    Returns:
        Content blocks in the server's order; `details` is the structured content (a dict,
        else `{"structured_content": value}`), else a yiemagent server's tool details
        (`_meta`, `DETAILS_META`), else `{}`.

    Raises:
        MCPToolError: `result.is_error`; its text joins the result's texts.
    """
    content = [content_from_mcp(block) for block in result.content]
    structured = result.structured_content
    if result.is_error:
        text = "\n".join(b.text for b in content if isinstance(b, TextContent)).strip()
        if not text and structured is not None:  # a failure said only as data
            text = json.dumps(structured, ensure_ascii=False, default=str)
        if max_chars is not None:  # an error is carried along as much as an output
            text = cut_middle(text, max_chars, left_out=TOOL_RESULT_LEFT_OUT)
        raise MCPToolError(text or f"MCP tool {tool_name} failed without saying why")
    details: Any = {}
    if structured is not None:
        details = structured if isinstance(structured, dict) else {"structured_content": structured}
        if not content or not _holds(content, structured):
            # the model reads only the content: a summary beside the data, or nothing,
            # would leave the data out of its view
            content.append(TextContent(json.dumps(structured, ensure_ascii=False, default=str)))
    elif isinstance(served := (result.meta or {}).get(DETAILS_META), dict):
        details = served  # a yiemagent server's tool details: the application's, as they were
    if not content:
        content = [TextContent(f"(MCP tool {tool_name} returned no content)")]
    converted = AgentToolResult(content, details)
    return converted if max_chars is None else cut_tool_result(converted, max_chars)


def _holds(content: list[TextContent | ImageContent], structured: Any) -> bool:
    """Whether `content` already shows the structured content: a text of it (or all the
    texts together) is its JSON, as the MCP spec asks a server to send it; or it is the
    `{"result": value}` an SDK wraps a returned value in, having sent the value itself as
    the content. A server may instead send a summary, or nothing."""
    if isinstance(structured, dict) and list(structured) == ["result"]:
        return True
    texts = [b.text for b in content if isinstance(b, TextContent)]
    return any(is_json_of(text, structured) for text in [*texts, "".join(texts)])


def result_to_mcp(message: ToolResultMessage) -> CallToolResult:
    """A finished tool call as the `CallToolResult` an MCP client receives."""
    from mcp import types

    blocks: list[types.ContentBlock] = []
    for block in message.content:
        if isinstance(block, TextContent):
            blocks.append(types.TextContent(type="text", text=block.text))
        elif isinstance(block, ImageContent):
            blocks.append(
                types.ImageContent(type="image", data=block.data, mime_type=block.mime_type)
            )
    if not blocks:
        blocks.append(types.TextContent(type="text", text="(no output)"))
    meta: dict[str, Any] | None = None
    if isinstance(message.details, dict) and message.details and not message.is_error:
        try:
            meta = {DETAILS_META: json.loads(json.dumps(message.details))}
        except (TypeError, ValueError):
            meta = None  # not JSON: the details stay here
    return types.CallToolResult(content=blocks, is_error=message.is_error, _meta=meta)
