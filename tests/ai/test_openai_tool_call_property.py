"""Property (R-4.1): however a server splits and interleaves the argument
fragments of parallel tool calls (later chunks carrying only the index), each call is
assembled with exactly its own id, name and arguments — through the real `openai` SDK."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from tests.ai.servers import ReplayServer, openai_chunks, sse_reply
from yiemagent.ai.providers.openai_completions import stream_openai_completions
from yiemagent.types.messages import UserMessage
from yiemagent.types.model import Context, Model, StreamOptions

pytestmark = pytest.mark.timeout(120)

values = st.one_of(
    st.text(max_size=8),
    st.integers(-1000, 1000),
    st.booleans(),
    st.lists(st.integers(0, 9), max_size=3),
)
arguments = st.dictionaries(st.text("abcxyz_", min_size=1, max_size=5), values, max_size=3)


@st.composite
def interleaved_calls(draw: st.DrawFn) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(the calls, the tool_call deltas in stream order)."""
    calls = draw(st.lists(arguments, min_size=1, max_size=4))
    pending: list[list[dict[str, Any]]] = []
    for index, args in enumerate(calls):
        text = json.dumps(args)
        cuts = sorted(draw(st.sets(st.integers(1, max(1, len(text) - 1)), max_size=5)))
        pieces = [text[a:b] for a, b in zip([0, *cuts], [*cuts, len(text)], strict=True)]
        first = {
            "index": index,
            "id": f"call_{index}",
            "type": "function",
            "function": {"name": f"tool_{index}", "arguments": pieces[0]},
        }
        rest = [{"index": index, "function": {"arguments": p}} for p in pieces[1:]]
        pending.append([first, *rest])
    # a call's first chunk opens it in index order; later fragments interleave freely
    order: list[dict[str, Any]] = []
    opened = 0
    while any(pending):
        choices = [i for i in range(len(pending)) if pending[i] and (i < opened or i == opened)]
        pick = draw(st.sampled_from(choices))
        order.append(pending[pick].pop(0))
        opened = max(opened, pick + 1)
    return calls, order


@pytest.fixture(scope="module")
def server() -> Iterator[ReplayServer]:
    with ReplayServer() as replay:
        yield replay


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(case=interleaved_calls())
def test_parallel_tool_calls_never_cross_wire(
    server: ReplayServer, case: tuple[list[dict[str, Any]], list[dict[str, Any]]]
) -> None:
    calls, deltas = case
    server.enqueue(
        sse_reply(openai_chunks(*({"tool_calls": [d]} for d in deltas), finish_reason="tool_calls"))
    )
    model = Model(id="m", provider="vllm", api="openai-completions", base_url=server.url + "/v1")

    async def run() -> Any:
        stream = stream_openai_completions(
            model, Context("", [UserMessage("go")]), StreamOptions(api_key="k-1234")
        )
        return await stream.result()

    message = asyncio.run(run())
    assert message.stop_reason == "toolUse", message.error_message
    assert [(c.id, c.name, c.arguments) for c in message.tool_calls] == [
        (f"call_{i}", f"tool_{i}", args) for i, args in enumerate(calls)
    ]
    assert all(c.partial_json is None for c in message.tool_calls)


@st.composite
def named_in_pieces(draw: st.DrawFn) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(the calls, the deltas) where each call's name comes as a server sends it: once, in
    pieces over its first fragments (Gemini's compatible API), or restated whole on every
    fragment (MiniMax on NVIDIA NIM); calls follow one another."""
    calls = draw(st.lists(arguments, min_size=1, max_size=3))
    deltas: list[dict[str, Any]] = []
    for index, args in enumerate(calls):
        name = f"tool_{index}"
        text = json.dumps(args)
        cuts = sorted(draw(st.sets(st.integers(1, len(text) - 1), max_size=4)))
        pieces = [text[a:b] for a, b in zip([0, *cuts], [*cuts, len(text)], strict=True)]
        style = draw(st.sampled_from(["once", "pieces", "restated"]))
        if style == "pieces":
            name_cuts = sorted(draw(st.sets(st.integers(1, len(name) - 1), max_size=3)))
            names = [
                name[a:b] for a, b in zip([0, *name_cuts], [*name_cuts, len(name)], strict=True)
            ]
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


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(case=named_in_pieces())
def test_a_name_sent_in_pieces_or_restated_is_the_whole_name_once(
    server: ReplayServer, case: tuple[list[dict[str, Any]], list[dict[str, Any]]]
) -> None:
    calls, deltas = case
    server.enqueue(
        sse_reply(openai_chunks(*({"tool_calls": [d]} for d in deltas), finish_reason="tool_calls"))
    )
    model = Model(id="m", provider="vllm", api="openai-completions", base_url=server.url + "/v1")

    async def run() -> Any:
        stream = stream_openai_completions(
            model, Context("", [UserMessage("go")]), StreamOptions(api_key="k-1234")
        )
        return await stream.result()

    message = asyncio.run(run())
    assert message.stop_reason == "toolUse", message.error_message
    assert [(c.id, c.name, c.arguments) for c in message.tool_calls] == [
        (f"call_{i}", f"tool_{i}", args) for i, args in enumerate(calls)
    ]
