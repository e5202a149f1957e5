"""A Responses-API server that sends a finished function call only as its
`response.output_item.done` (no `output_item.added`, no argument deltas), through the real
`openai` SDK from a local replay server (DESIGN §8): the call is kept, with its arguments,
as a message item sent the same way keeps its text."""

from __future__ import annotations

from tests.ai.servers import ReplayServer, sse_reply
from tests.ai.test_openai_responses import responses_done, responses_sse
from yiemagent.ai import get_model, stream
from yiemagent.types import Context, StreamOptions, UserMessage


async def test_a_call_sent_only_finished_is_kept(server: ReplayServer) -> None:
    """It was dropped: the answer ended "stop" with no content, the call lost."""
    call = {
        "type": "function_call", "id": "fc_1", "call_id": "call_a", "name": "lookup",
        "arguments": '{"key": "a"}', "status": "completed",
    }  # fmt: skip
    text = {
        "type": "message", "id": "msg_1", "role": "assistant", "status": "completed",
        "content": [{"type": "output_text", "text": "Looking it up.", "annotations": []}],
    }  # fmt: skip
    server.enqueue(
        sse_reply(
            responses_sse(
                {"type": "response.output_item.done", "output_index": 0, "item": text},
                {"type": "response.output_item.done", "output_index": 1, "item": call},
                responses_done(),
            )
        )
    )
    model = get_model("openai-responses/gpt-5-mini", base_url=server.url + "/v1")
    context = Context("", [UserMessage("look a up")])
    message = await stream(model, context, StreamOptions(api_key="sk-test-0123456789")).result()
    assert message.stop_reason == "toolUse", message.error_message
    assert [(c.id, c.name, c.arguments) for c in message.tool_calls] == [
        ("call_a", "lookup", {"key": "a"})
    ]
    assert message.text == "Looking it up."
