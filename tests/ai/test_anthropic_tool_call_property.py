"""Property (R-4.1), the Messages API: however an Anthropic-compatible server orders the
events of parallel tool_use blocks (proxies that translate an OpenAI stream open every
call's block before closing any and interleave their `input_json_delta`s by `index`),
each call is assembled with exactly its own id, name and input — through the real
`anthropic` SDK."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from hypothesis import given, strategies as st

from tests.ai._stream_kit import (
    arguments,
    assert_each_call_kept_its_own,
    fragments,
    interleave,
    joined_at_end,
    property_settings,
    streamed,
)
from tests.ai.servers import ReplayServer, sse_reply
from tests.ai.test_anthropic_compat import KEY, claude, sse
from yiemagent.ai.providers.anthropic_messages import stream_anthropic_messages
from yiemagent.types.messages import UserMessage
from yiemagent.types.model import AssistantMessageEvent, Context, StreamOptions

pytestmark = pytest.mark.timeout(120)


@st.composite
def interleaved(draw: st.DrawFn) -> tuple[str, list[dict[str, Any]], list[tuple[str, Any]]]:
    """(the text before the calls, the calls' inputs, the content block events): a text
    block, then each tool_use block started, its deltas and its stop, in order for that
    block; the blocks' events interleave freely once started in index order."""
    text = draw(st.text("abc ", min_size=1, max_size=6))
    calls = draw(st.lists(arguments, min_size=1, max_size=4))
    queues: list[list[tuple[str, Any]]] = [
        [
            ("content_block_start", {"index": 0, "content_block": {"type": "text", "text": ""}}),
            ("content_block_delta", {"index": 0, "delta": {"type": "text_delta", "text": text}}),
            ("content_block_stop", {"index": 0}),
        ]
    ]
    for number, args in enumerate(calls):
        index = number + 1
        block = {"type": "tool_use", "id": f"toolu_{number}", "name": f"tool_{number}",
                 "input": {}}  # fmt: skip
        events: list[tuple[str, Any]] = [
            ("content_block_start", {"index": index, "content_block": block})
        ]
        events += [
            ("content_block_delta",
             {"index": index, "delta": {"type": "input_json_delta", "partial_json": piece}})
            for piece in fragments(draw, json.dumps(args))
        ]  # fmt: skip
        events.append(("content_block_stop", {"index": index}))
        queues.append(events)
    return text, calls, interleave(draw, queues)


@property_settings(max_examples=60)
@given(case=interleaved())
def test_interleaved_tool_use_blocks_never_cross_wire(
    stream_server: ReplayServer, case: tuple[str, list[dict[str, Any]], list[tuple[str, Any]]]
) -> None:
    text, calls, blocks = case
    stream_server.enqueue(sse_reply(sse(*blocks, stop="tool_use")))

    message = streamed(
        lambda: stream_anthropic_messages(
            claude(stream_server), Context("sys", [UserMessage("hi")]), StreamOptions(api_key=KEY)
        ).result()
    )

    assert message.text == text
    assert_each_call_kept_its_own(message, calls, id_prefix="toolu_")


@property_settings(max_examples=60)
@given(case=interleaved())
def test_each_blocks_deltas_join_to_it_before_its_end(
    stream_server: ReplayServer, case: tuple[str, list[dict[str, Any]], list[tuple[str, Any]]]
) -> None:
    """As pi-mono's stream test reads them: a block's deltas, joined at its end, are the
    whole block, however the server interleaved the blocks. A block that started while
    another was open closed that one early, and its later deltas were never streamed."""
    text, calls, blocks = case
    stream_server.enqueue(sse_reply(sse(*blocks, stop="tool_use")))

    async def run() -> list[AssistantMessageEvent]:
        answer = stream_anthropic_messages(
            claude(stream_server), Context("sys", [UserMessage("hi")]), StreamOptions(api_key=KEY)
        )
        return [event async for event in answer]

    texts, ended = joined_at_end(asyncio.run(run()))
    assert texts == [text]
    assert ended == calls
