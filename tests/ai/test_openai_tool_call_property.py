"""Property (R-4.1): however a server splits and interleaves the argument
fragments of parallel tool calls (later chunks carrying only the index), each call is
assembled with exactly its own id, name and arguments — through the real `openai` SDK."""

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
from tests.ai.servers import ReplayServer, openai_chunks, sse_reply
from yiemagent.ai.providers.openai_completions import stream_openai_completions
from yiemagent.types.messages import AssistantMessage, UserMessage
from yiemagent.types.model import AssistantMessageEvent, Context, Model, StreamOptions

pytestmark = pytest.mark.timeout(120)

Case = tuple[list[dict[str, Any]], list[dict[str, Any]]]
"""(the calls' arguments, the tool_call deltas in stream order)."""


@st.composite
def interleaved_calls(draw: st.DrawFn) -> Case:
    """Each call's first chunk (id, name, first fragment) opens it in index order; later
    fragments interleave freely."""
    calls = draw(st.lists(arguments, min_size=1, max_size=4))
    queues: list[list[dict[str, Any]]] = []
    for index, args in enumerate(calls):
        pieces = fragments(draw, json.dumps(args), max_cuts=5)
        first = {
            "index": index,
            "id": f"call_{index}",
            "type": "function",
            "function": {"name": f"tool_{index}", "arguments": pieces[0]},
        }
        rest = [{"index": index, "function": {"arguments": p}} for p in pieces[1:]]
        queues.append([first, *rest])
    return calls, interleave(draw, queues)


def stream_deltas(server: ReplayServer, deltas: list[dict[str, Any]]) -> AssistantMessage:
    server.enqueue(
        sse_reply(openai_chunks(*({"tool_calls": [d]} for d in deltas), finish_reason="tool_calls"))
    )
    model = Model(id="m", provider="vllm", api="openai-completions", base_url=server.url + "/v1")
    return streamed(
        lambda: stream_openai_completions(
            model, Context("", [UserMessage("go")]), StreamOptions(api_key="k-1234")
        ).result()
    )


@property_settings(max_examples=40)
@given(case=interleaved_calls())
def test_parallel_tool_calls_never_cross_wire(stream_server: ReplayServer, case: Case) -> None:
    calls, deltas = case
    message = stream_deltas(stream_server, deltas)
    assert_each_call_kept_its_own(message, calls, id_prefix="call_")


@property_settings(max_examples=40)
@given(case=interleaved_calls())
def test_each_calls_deltas_join_to_its_arguments_before_its_end(
    stream_server: ReplayServer, case: Case
) -> None:
    """As pi-mono's stream test reads them: a call's `toolcall_delta`s, joined at its
    `toolcall_end`, are its whole arguments, however the server interleaved the calls."""
    calls, deltas = case
    stream_server.enqueue(
        sse_reply(openai_chunks(*({"tool_calls": [d]} for d in deltas), finish_reason="tool_calls"))
    )
    model = Model(
        id="m", provider="vllm", api="openai-completions", base_url=stream_server.url + "/v1"
    )

    async def events() -> list[AssistantMessageEvent]:
        stream = stream_openai_completions(
            model, Context("", [UserMessage("go")]), StreamOptions(api_key="k-1234")
        )
        return [event async for event in stream]

    _, ended = joined_at_end(asyncio.run(events()))
    assert ended == calls


@st.composite
def named_in_pieces(draw: st.DrawFn) -> Case:
    """Each call's name comes as a server sends it: once, in pieces over its first
    fragments (Gemini's compatible API), or restated whole on every fragment (MiniMax on
    NVIDIA NIM); calls follow one another."""
    calls = draw(st.lists(arguments, min_size=1, max_size=3))
    deltas: list[dict[str, Any]] = []
    for index, args in enumerate(calls):
        name = f"tool_{index}"
        pieces = fragments(draw, json.dumps(args))
        style = draw(st.sampled_from(["once", "pieces", "restated"]))
        if style == "pieces":
            names = fragments(draw, name, max_cuts=3)
            pieces = [""] * (len(names) - 1) + pieces  # the name first, then the arguments
        else:
            names = [name] * (len(pieces) if style == "restated" else 1)
        for k, piece in enumerate(pieces):
            function = {"arguments": piece}
            if k < len(names):
                function["name"] = names[k]
            delta: dict[str, Any] = {"index": index, "function": function}
            if k == 0:
                delta.update(id=f"call_{index}", type="function")
            deltas.append(delta)
    return calls, deltas


@property_settings(max_examples=40)
@given(case=named_in_pieces())
def test_a_name_sent_in_pieces_or_restated_is_the_whole_name_once(
    stream_server: ReplayServer, case: Case
) -> None:
    calls, deltas = case
    message = stream_deltas(stream_server, deltas)
    assert_each_call_kept_its_own(message, calls, id_prefix="call_")
