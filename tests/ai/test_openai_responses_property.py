"""Property (R-4.1), the Responses API: however a server orders the events of parallel
function calls (llama.cpp's `/v1/responses` and some gateways open every call before
closing any, and interleave their argument deltas), each call is assembled with exactly its
own id, name and arguments — through the real `openai` SDK."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from tests.ai.servers import ReplayServer, sse_reply
from tests.ai.test_attachments import responses_done, responses_sse
from yiemagent.ai import Context, StreamOptions, get_model, stream
from yiemagent.types.messages import UserMessage

pytestmark = pytest.mark.timeout(120)

values = st.one_of(st.text(max_size=8), st.integers(-1000, 1000), st.booleans())
arguments = st.dictionaries(st.text("abcxyz_", min_size=1, max_size=5), values, max_size=3)


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
    pending: list[list[dict[str, Any]]] = []
    for index, args in enumerate(calls):
        text = json.dumps(args)
        cuts = sorted(draw(st.sets(st.integers(1, len(text) - 1), max_size=4)))
        pieces = [text[a:b] for a, b in zip([0, *cuts], [*cuts, len(text)], strict=True)]
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
            for piece in pieces
        ]
        final = _item(index, text if whole_in_done else "", "completed")
        events.append({"type": "response.output_item.done", "output_index": index, "item": final})
        pending.append(events)
    order: list[dict[str, Any]] = []
    opened = 0
    while any(pending):  # calls are added in order; after that anything goes
        choices = [i for i in range(len(pending)) if pending[i] and i <= opened]
        pick = draw(st.sampled_from(choices))
        order.append(pending[pick].pop(0))
        opened = max(opened, pick + 1)
    return calls, order


@pytest.fixture(scope="module")
def server() -> Iterator[ReplayServer]:
    with ReplayServer() as replay:
        yield replay


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(case=interleaved())
def test_interleaved_function_calls_never_cross_wire(
    server: ReplayServer, case: tuple[list[dict[str, Any]], list[dict[str, Any]]]
) -> None:
    calls, events = case
    server.enqueue(sse_reply(responses_sse(*events, responses_done())))
    model = get_model("openai-responses/gpt-4o-mini", base_url=server.url + "/v1")

    async def run() -> Any:
        events = stream(model, Context("", [UserMessage("go")]), StreamOptions(api_key="k-1234"))
        return await events.result()

    message = asyncio.run(run())
    assert message.stop_reason == "toolUse", message.error_message
    assert [(c.id, c.name, c.arguments) for c in message.tool_calls] == [
        (f"call_{i}", f"tool_{i}", args) for i, args in enumerate(calls)
    ]
    assert all(c.partial_json is None for c in message.tool_calls)
