"""The Responses API refuses `max_output_tokens` below 16 (HTTP 400, "integer below minimum
value. Expected a value >= 16"): a smaller `max_tokens` goes as 16, through the real `openai`
SDK to a server on 127.0.0.1, and every other value as it is."""

from __future__ import annotations

import pytest
from hypothesis import given, strategies as st

from tests.ai.servers import ReplayServer, sse_reply
from tests.ai.test_attachments import responses_done, responses_sse
from yiemagent.ai import Context, StreamOptions, get_model, stream
from yiemagent.ai.providers.openai_responses import MIN_OUTPUT_TOKENS, build_request_body
from yiemagent.types.messages import UserMessage

pytestmark = pytest.mark.timeout(120)

KEY = "sk-test-0123456789abcdef"


def answer() -> list[str]:
    item = {"type": "message", "id": "msg_1", "role": "assistant", "content": []}
    return responses_sse(
        {"type": "response.output_item.added", "output_index": 0, "item": item},
        {"type": "response.output_text.delta", "item_id": "msg_1", "delta": "Hi"},
        responses_done(),
    )


@pytest.mark.parametrize(("asked", "sent"), [(1, 16), (15, 16), (16, 16), (200, 200)])
async def test_max_output_tokens_is_at_least_the_apis_minimum(
    server: ReplayServer, asked: int, sent: int
) -> None:
    server.enqueue(sse_reply(answer()))
    model = get_model("openai-responses/gpt-4o-mini", base_url=server.url + "/v1")
    options = StreamOptions(api_key=KEY, max_tokens=asked)
    message = await stream(model, Context("", [UserMessage("hi")]), options).result()
    assert message.stop_reason == "stop", message.error_message
    assert message.text == "Hi"
    assert server.requests[-1].body["max_output_tokens"] == sent


@given(st.integers(1, 10**7))
def test_any_max_tokens_goes_as_the_api_takes_it(max_tokens: int) -> None:
    model = get_model("openai-responses/gpt-5-mini")
    body = build_request_body(
        model, Context("", [UserMessage("hi")]), StreamOptions(max_tokens=max_tokens)
    )
    assert body["max_output_tokens"] >= MIN_OUTPUT_TOKENS
    assert body["max_output_tokens"] == max(max_tokens, MIN_OUTPUT_TOKENS)
