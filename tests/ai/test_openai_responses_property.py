"""Property (R-4.1), the Responses API: however a server orders the events of parallel
function calls (llama.cpp's `/v1/responses` and some gateways open every call before
closing any, and interleave their argument deltas), each call is assembled with exactly its
own id, name and arguments — through the real `openai` SDK."""

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
from tests.ai.test_attachments import responses_done, responses_sse
from yiemagent.ai import AssistantMessageEvent, Context, StreamOptions, get_model, stream
from yiemagent.types.messages import UserMessage

pytestmark = pytest.mark.timeout(120)


def _item(index: int, arguments: str, status: str) -> dict[str, Any]:
    return {
        "type": "function_call",
        "id": f"fc_{index}",
        "call_id": f"call_{index}",
        "name": f"tool_{index}",
        "arguments": arguments,
        "status": status,
    }


@st.composite
def interleaved(draw: st.DrawFn) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(the calls' arguments, the stream's events): each call is added, then its deltas,
    then its done events, in order for that call; the calls' events interleave freely. The
    final item holds the whole arguments, or (some servers) none."""
    calls = draw(st.lists(arguments, min_size=1, max_size=4))
    whole_in_done = draw(st.booleans())
    queues: list[list[dict[str, Any]]] = []
    for index, args in enumerate(calls):
        text = json.dumps(args)
        events: list[dict[str, Any]] = [
            {
                "type": "response.output_item.added",
                "output_index": index,
                "item": _item(index, "", "in_progress"),
            }
        ]
        events += [
            {
                "type": "response.function_call_arguments.delta",
                "item_id": f"fc_{index}",
                "output_index": index,
                "delta": piece,
            }
            for piece in fragments(draw, text)
        ]
        final = _item(index, text if whole_in_done else "", "completed")
        events.append({"type": "response.output_item.done", "output_index": index, "item": final})
        queues.append(events)
    return calls, interleave(draw, queues)


@property_settings(max_examples=60)
@given(case=interleaved())
def test_interleaved_function_calls_never_cross_wire(
    stream_server: ReplayServer, case: tuple[list[dict[str, Any]], list[dict[str, Any]]]
) -> None:
    calls, events = case
    stream_server.enqueue(sse_reply(responses_sse(*events, responses_done())))
    model = get_model("openai-responses/gpt-4o-mini", base_url=stream_server.url + "/v1")

    message = streamed(
        lambda: stream(
            model, Context("", [UserMessage("go")]), StreamOptions(api_key="k-1234")
        ).result()
    )

    assert_each_call_kept_its_own(message, calls, id_prefix="call_")


@property_settings(max_examples=60)
@given(case=interleaved())
def test_each_calls_deltas_join_to_its_arguments_before_its_end(
    stream_server: ReplayServer, case: tuple[list[dict[str, Any]], list[dict[str, Any]]]
) -> None:
    """As pi-mono's stream test reads them: a call's `toolcall_delta`s, joined at its
    `toolcall_end`, are its whole arguments, however the server interleaved the calls. A
    call opened before the one before it was done was closed by it with part of its
    arguments, and the rest were never streamed."""
    calls, events = case
    stream_server.enqueue(sse_reply(responses_sse(*events, responses_done())))
    model = get_model("openai-responses/gpt-4o-mini", base_url=stream_server.url + "/v1")

    async def run() -> list[AssistantMessageEvent]:
        answer = stream(model, Context("", [UserMessage("go")]), StreamOptions(api_key="k-1234"))
        return [event async for event in answer]

    _, ended = joined_at_end(asyncio.run(run()))
    assert ended == calls
