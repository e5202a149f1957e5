"""Finish reasons a Chat Completions stream may carry from another API's vocabulary, passed
through by the server or a proxy (LiteLLM, one-api, Vertex AI's endpoint): Mistral's
"model_length" (the context is full), Gemini's "SAFETY", "RECITATION", "BLOCKLIST",
"PROHIBITED_CONTENT", "SPII" (blocked) and "MALFORMED_FUNCTION_CALL" (the model wrote a
call the API could not read; googleapis/python-genai#1836), Anthropic's "refusal". Each
was taken for "stop": a call cut by a full context ran with half its arguments, and a
blocked or malformed answer ended the run as an empty answer, saying nothing. Through the
real `openai` SDK against `ReplayServer` on 127.0.0.1."""

from __future__ import annotations

from typing import Any

import pytest

from tests.ai.servers import ReplayServer, openai_chunks, sse_reply
from yiemagent.ai.providers.openai_completions import stream_openai_completions
from yiemagent.types.messages import AssistantMessage, UserMessage
from yiemagent.types.model import Context, Model, StreamOptions

pytestmark = pytest.mark.timeout(120)

HALF_A_CALL = {
    "tool_calls": [
        {
            "index": 0,
            "id": "abcdefghi",
            "type": "function",
            "function": {"name": "f", "arguments": '{"x": "ab'},
        }
    ]
}


async def answer(server: ReplayServer, *deltas: dict[str, Any], reason: str) -> AssistantMessage:
    server.enqueue(sse_reply(openai_chunks(*deltas, finish_reason=reason)))
    model = Model(id="m", provider="litellm", api="openai-completions", base_url=server.url + "/v1")
    stream = stream_openai_completions(
        model, Context("", [UserMessage("hi")]), StreamOptions(api_key="k")
    )
    return await stream.result()


@pytest.mark.parametrize("reason", ["model_length", "MODEL_LENGTH"])
async def test_a_full_context_cuts_the_call_and_it_does_not_run(
    server: ReplayServer, reason: str
) -> None:
    message = await answer(server, HALF_A_CALL, reason=reason)
    assert message.stop_reason == "length"


@pytest.mark.parametrize(
    "reason", ["SAFETY", "RECITATION", "BLOCKLIST", "PROHIBITED_CONTENT", "SPII", "IMAGE_SAFETY"]
)
async def test_a_blocked_answer_is_the_content_filters_error(
    server: ReplayServer, reason: str
) -> None:
    message = await answer(server, {"content": "Sure, the"}, reason=reason)
    assert message.stop_reason == "error"
    assert message.error_message == (
        f"the provider's content filter stopped the response (finish_reason: {reason})"
    )
    assert message.text == "Sure, the"  # what came before is kept


async def test_a_malformed_function_call_says_so(server: ReplayServer) -> None:
    message = await answer(server, reason="MALFORMED_FUNCTION_CALL")
    assert message.stop_reason == "error"
    assert message.error_message == (
        "the model wrote a tool call the server could not read"
        " (finish_reason: MALFORMED_FUNCTION_CALL)"
    )


async def test_a_refusal_says_so(server: ReplayServer) -> None:
    message = await answer(server, reason="refusal")
    assert message.stop_reason == "error"
    assert message.error_message == "the model refused to answer (finish_reason: refusal)"


async def test_the_content_filters_own_reason_is_still_named(server: ReplayServer) -> None:
    message = await answer(server, {"content": "x"}, reason="content_filter")
    assert message.error_message == (
        "the provider's content filter stopped the response (finish_reason: content_filter)"
    )
