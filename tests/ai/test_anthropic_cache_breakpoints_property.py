"""Property (DESIGN §21): whatever the request holds — a system prompt or none, tools or
none, a long transcript with images, PDFs, tool calls and results carrying images — the
Messages API request has at most 4 cache breakpoints (the API refuses a fifth: "A maximum
of 4 blocks with cache_control may be provided"), every one of the chosen retention
("long": the 1 h TTL), and none with "none". Through the real `anthropic` SDK against
the module's replay server, as the API receives it."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest
from hypothesis import given, strategies as st

from tests.ai._stream_kit import property_settings, streamed
from tests.ai.servers import ReplayServer, sse_reply
from yiemagent.ai.providers.anthropic_messages import stream_anthropic_messages
from yiemagent.types.messages import (
    AssistantMessage,
    DocumentContent,
    ImageContent,
    Message,
    TextContent,
    ThinkingContent,
    ToolCall,
    ToolResultMessage,
    UserMessage,
)
from yiemagent.types.model import CacheRetention, Context, Model, StreamOptions
from yiemagent.types.tools import AgentTool

pytestmark = pytest.mark.timeout(300)

KEY = "sk-ant-test-0123456789abcdef"
PNG = (
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJ"
    "AAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg=="
)
MODEL = Model(
    id="claude-test-1",
    provider="anthropic",
    api="anthropic-messages",
    reasoning=True,
    max_tokens=4096,
    input=("text", "image", "pdf"),
)

_user_block = st.sampled_from(
    [
        TextContent("look"),
        TextContent("  "),
        ImageContent(PNG, "image/png"),
        DocumentContent("JVBERi0xLjQK", name="a.pdf"),
    ]
)


@st.composite
def transcripts(draw: st.DrawFn) -> list[Message]:
    """A transcript of 1-8 exchanges ending in a user turn or tool results."""
    messages: list[Message] = []
    for turn in range(draw(st.integers(1, 8))):
        messages.append(UserMessage(draw(st.lists(_user_block, min_size=1, max_size=3))))
        calls = [
            ToolCall(f"toolu_{turn}_{n}", "lookup", {}) for n in range(draw(st.integers(0, 2)))
        ]
        thinking = [ThinkingContent("hm", signature="sig")] if draw(st.booleans()) else []
        messages.append(
            AssistantMessage(
                [*thinking, TextContent("ok"), *calls],
                provider="anthropic",
                model=MODEL.id,
                stop_reason="toolUse" if calls else "stop",
            )
        )
        for call in calls:
            image = [ImageContent(PNG, "image/png")] if draw(st.booleans()) else []
            messages.append(ToolResultMessage(call.id, "lookup", [TextContent("r"), *image]))
    if not isinstance(messages[-1], ToolResultMessage) or draw(st.booleans()):
        messages.append(UserMessage(draw(st.lists(_user_block, min_size=1, max_size=3))))
    return messages


def breakpoints(value: Any) -> list[dict[str, Any]]:
    """Every `cache_control` in a request body, in order."""
    if isinstance(value, dict):
        found = [value["cache_control"]] if "cache_control" in value else []
        return found + [m for v in value.values() for m in breakpoints(v)]
    if isinstance(value, list):
        return [m for v in value for m in breakpoints(v)]
    return []


@property_settings(max_examples=40)
@given(
    system=st.sampled_from(["Be brief.", "", " \n"]),
    tool_count=st.integers(0, 4),
    messages=transcripts(),
    retention=st.sampled_from([None, "short", "long", "none"]),
)
def test_never_more_than_four_breakpoints_all_of_the_retention_asked(
    stream_server: ReplayServer,
    system: str,
    tool_count: int,
    messages: list[Message],
    retention: CacheRetention | None,
) -> None:
    stream_server.enqueue(sse_reply("anthropic_text.sse"))
    tools = [
        AgentTool(f"tool_{n}", "t", "a tool", {"type": "object"}, lambda *_: "")
        for n in range(tool_count)
    ]
    model = replace(MODEL, base_url=stream_server.url)
    options = StreamOptions(api_key=KEY, cache_retention=retention)
    message = streamed(
        lambda: stream_anthropic_messages(model, Context(system, messages, tools), options).result()
    )
    assert message.stop_reason == "stop", message.error_message
    marks = breakpoints(stream_server.requests[-1].body)
    assert len(marks) <= 4
    if retention == "none":
        assert marks == []
    else:
        expected = (
            {"type": "ephemeral", "ttl": "1h"} if retention == "long" else {"type": "ephemeral"}
        )
        assert marks and all(mark == expected for mark in marks)
