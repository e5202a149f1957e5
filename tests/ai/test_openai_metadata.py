"""`StreamOptions.metadata` to OpenAI: the Responses API tags the response with it; Chat
Completions refuses it for a completion it does not store (HTTP 400, "The 'metadata'
parameter is only allowed when 'store' is enabled"), and stores none, so it is not sent
there and the user is told once. Through the real `openai` SDK to a server on 127.0.0.1."""

from __future__ import annotations

import logging

import pytest

from tests.ai.servers import ReplayServer, openai_chunks, sse_reply
from tests.ai.test_attachments import responses_done, responses_sse
from yiemagent.ai import Context, StreamOptions, get_model, stream
from yiemagent.types.messages import UserMessage

pytestmark = pytest.mark.timeout(120)

KEY = "sk-test-0123456789abcdef"
METADATA = {"team": "search", "run": 7}


async def test_chat_completions_sends_no_metadata_and_says_so_once(
    server: ReplayServer, caplog: pytest.LogCaptureFixture
) -> None:
    model = get_model("openai/gpt-4.1-mini", base_url=server.url + "/v1")
    options = StreamOptions(api_key=KEY, metadata=METADATA)
    with caplog.at_level(logging.WARNING, logger="yiemagent.ai.providers.openai_completions"):
        for _ in range(2):
            server.enqueue(sse_reply(openai_chunks({"role": "assistant", "content": "ok"})))
            message = await stream(model, Context("", [UserMessage("hi")]), options).result()
            assert message.stop_reason == "stop", message.error_message
    assert [("metadata" in r.body, r.body.get("store")) for r in server.requests] == [
        (False, None),
        (False, None),
    ]
    said = [r.getMessage() for r in caplog.records if "metadata" in r.getMessage()]
    assert len(said) == 1 and said[0].startswith("gpt-4.1-mini: metadata is not sent")


async def test_responses_tags_the_response_with_metadata(server: ReplayServer) -> None:
    item = {"type": "message", "id": "msg_1", "role": "assistant", "content": []}
    server.enqueue(
        sse_reply(
            responses_sse(
                {"type": "response.output_item.added", "output_index": 0, "item": item},
                {"type": "response.output_text.delta", "item_id": "msg_1", "delta": "ok"},
                responses_done(),
            )
        )
    )
    model = get_model("openai-responses/gpt-4.1-mini", base_url=server.url + "/v1")
    options = StreamOptions(api_key=KEY, metadata=METADATA)
    message = await stream(model, Context("", [UserMessage("hi")]), options).result()
    assert message.stop_reason == "stop", message.error_message
    body = server.requests[0].body
    assert body["metadata"] == {"team": "search", "run": "7"} and body["store"] is False
