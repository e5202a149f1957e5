"""Property (R-4.1), the Messages API: however an Anthropic-compatible server orders the
events of parallel tool_use blocks (proxies that translate an OpenAI stream open every
call's block before closing any and interleave their `input_json_delta`s by `index`),
each call is assembled with exactly its own id, name and input — through the real
`anthropic` SDK."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from tests.ai.servers import ReplayServer, sse_reply
from tests.ai.test_anthropic_compat import KEY, claude, sse
from yiemagent.ai.providers.anthropic_messages import stream_anthropic_messages
from yiemagent.types.messages import UserMessage
from yiemagent.types.model import Context, StreamOptions

pytestmark = pytest.mark.timeout(120)

values = st.one_of(st.text(max_size=8), st.integers(-1000, 1000), st.booleans())
arguments = st.dictionaries(st.text("abcxyz_", min_size=1, max_size=5), values, max_size=3)


@st.composite
def interleaved(draw: st.DrawFn) -> tuple[str, list[dict[str, Any]], list[tuple[str, Any]]]:
    """(the text before the calls, the calls' inputs, the content block events): a text
    block, then each tool_use block started, its deltas and its stop, in order for that
    block; the blocks' events interleave freely once started in index order."""
    text = draw(st.text("abc ", min_size=1, max_size=6))
    calls = draw(st.lists(arguments, min_size=1, max_size=4))
    pending: list[list[tuple[str, Any]]] = [
        [
            ("content_block_start", {"index": 0, "content_block": {"type": "text", "text": ""}}),
            ("content_block_delta", {"index": 0, "delta": {"type": "text_delta", "text": text}}),
            ("content_block_stop", {"index": 0}),
        ]
    ]
    for number, args in enumerate(calls):
        index = number + 1
        raw = json.dumps(args)
        cuts = sorted(draw(st.sets(st.integers(1, len(raw) - 1), max_size=4)))
        pieces = [raw[a:b] for a, b in zip([0, *cuts], [*cuts, len(raw)], strict=True)]
        block = {"type": "tool_use", "id": f"toolu_{number}", "name": f"tool_{number}",
                 "input": {}}  # fmt: skip
        events: list[tuple[str, Any]] = [
            ("content_block_start", {"index": index, "content_block": block})
        ]
        events += [
            ("content_block_delta",
             {"index": index, "delta": {"type": "input_json_delta", "partial_json": piece}})
            for piece in pieces
        ]  # fmt: skip
        events.append(("content_block_stop", {"index": index}))
        pending.append(events)
    order: list[tuple[str, Any]] = []
    opened = 0
    while any(pending):
        choices = [i for i in range(len(pending)) if pending[i] and i <= opened]
        pick = draw(st.sampled_from(choices))
        order.append(pending[pick].pop(0))
        opened = max(opened, pick + 1)
    return text, calls, order


@pytest.fixture(scope="module")
def server() -> Iterator[ReplayServer]:
    with ReplayServer() as replay:
        yield replay


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(case=interleaved())
def test_interleaved_tool_use_blocks_never_cross_wire(
    server: ReplayServer, case: tuple[str, list[dict[str, Any]], list[tuple[str, Any]]]
) -> None:
    text, calls, blocks = case
    server.enqueue(sse_reply(sse(*blocks, stop="tool_use")))

    async def run() -> Any:
        stream = stream_anthropic_messages(
            claude(server), Context("sys", [UserMessage("hi")]), StreamOptions(api_key=KEY)
        )
        return await stream.result()

    message = asyncio.run(run())
    assert message.stop_reason == "toolUse", message.error_message
    assert message.text == text
    assert [(c.id, c.name, c.arguments) for c in message.tool_calls] == [
        (f"toolu_{i}", f"tool_{i}", args) for i, args in enumerate(calls)
    ]
    assert all(c.partial_json is None for c in message.tool_calls)
