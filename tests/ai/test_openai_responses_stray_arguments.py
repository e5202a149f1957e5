"""A Responses-API server that streams argument deltas for an item it never added as a
`function_call`, through the real `openai` SDK from a local replay server (DESIGN §8): the
call ends in one error naming the item, and no other call takes the stray arguments."""

from __future__ import annotations

from typing import Any

import pytest

from tests.ai.servers import ReplayServer, sse_reply
from tests.ai.test_attachments import responses_done, responses_sse
from yiemagent.ai import get_model, stream
from yiemagent.types import Context, StreamOptions, UserMessage

pytestmark = pytest.mark.timeout(120)  # the first test imports the SDK: seconds of CPU under load

CALL = {"type": "function_call", "id": "fc_1", "call_id": "call_a", "name": "lookup",
        "arguments": "", "status": "in_progress"}  # fmt: skip
MESSAGE = {"type": "message", "id": "msg_1", "role": "assistant", "content": []}


def added(index: int, item: dict[str, Any]) -> dict[str, Any]:
    return {"type": "response.output_item.added", "output_index": index, "item": item}


def arguments(item_id: str, delta: str) -> dict[str, Any]:
    return {"type": "response.function_call_arguments.delta", "item_id": item_id,
            "delta": delta}  # fmt: skip


@pytest.mark.parametrize(
    ("events", "stray"),
    [
        ([arguments("fc_9", '{"b": 2}')], "fc_9"),  # no item added at all
        ([added(0, MESSAGE), arguments("msg_1", '{"b": 2}')], "msg_1"),  # a message item
        ([added(0, CALL), arguments("fc_1", '{"key": '), arguments("fc_9", '"junk"'),
          arguments("fc_1", '"a"}')], "fc_9"),  # beside a call that streams
    ],
    ids=["unadded", "message-item", "beside-a-call"],
)  # fmt: skip
async def test_arguments_for_an_item_never_added_as_a_call_are_one_clear_error(
    server: ReplayServer, events: list[dict[str, Any]], stray: str
) -> None:
    """They were dropped without a word: the answer ended as if the server had sent none."""
    server.enqueue(sse_reply(responses_sse(*events, responses_done())))
    model = get_model("openai-responses/gpt-5-mini", base_url=server.url + "/v1")
    context = Context("", [UserMessage("look a up")])
    message = await stream(model, context, StreamOptions(api_key="sk-test-0123456789")).result()
    assert message.stop_reason == "error"
    assert message.error_message == (
        f"ValueError: the server sent function call arguments for output item {stray!r}, "
        "which it did not add as a function_call item"
    )
    assert all("junk" not in (c.partial_json or "") for c in message.tool_calls)
