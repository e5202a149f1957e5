"""What a server's error body says reaches the error message, in each server's form:
Gemini's OpenAI-compatible endpoint sends its errors as a JSON list of one object,
`[{"error": {"code", "message", "status"}}]` (its REST API's form; magentic#382,
vscode#299295), and OpenRouter an upstream provider's error under `metadata.raw` behind
"Provider returned error". The message said only "Error code: 400" or "Provider returned
error", leaving out why. Through the real `openai` SDK against `ReplayServer` on
127.0.0.1."""

from __future__ import annotations

import json

import pytest

from tests.ai.servers import ReplayServer, json_reply, sse_reply
from yiemagent.ai.providers.openai_completions import stream_openai_completions
from yiemagent.types.messages import UserMessage
from yiemagent.types.model import Context, Model, StreamOptions

pytestmark = pytest.mark.timeout(120)

PAIRING = (
    "Please ensure that the number of function response parts is equal to the number of"
    " function call parts of the function call turn."
)
UNKNOWN_FIELD = (
    'Invalid JSON payload received. Unknown name "parallel_tool_calls": Cannot find field.'
)


def gemini(server: ReplayServer) -> Model:
    return Model(
        id="gemini-2.5-flash",
        provider="google",
        api="openai-completions",
        base_url=server.url + "/v1beta/openai",
    )


@pytest.mark.parametrize("said", [PAIRING, UNKNOWN_FIELD])
async def test_a_gemini_error_says_what_gemini_said(server: ReplayServer, said: str) -> None:
    body = [{"error": {"code": 400, "message": said, "status": "INVALID_ARGUMENT"}}]
    server.enqueue(json_reply(400, body))
    stream = stream_openai_completions(
        gemini(server), Context("", [UserMessage("hi")]), StreamOptions(api_key="k")
    )
    message = await stream.result()
    assert message.error_message == f"HTTP 400 from the server: {said}"


async def test_a_spent_quota_in_a_list_is_not_retried(server: ReplayServer) -> None:
    """A 429 for a spent quota is not retried (waiting does not refill it), also when the
    error comes in a list."""
    error = {
        "code": 429,
        "message": "You exceeded your current quota.",
        "type": "insufficient_quota",
    }
    server.enqueue(json_reply(429, [{"error": error}]))
    stream = stream_openai_completions(
        gemini(server), Context("", [UserMessage("hi")]), StreamOptions(api_key="k")
    )
    message = await stream.result()
    assert message.error_message == "HTTP 429 from the server: You exceeded your current quota."
    assert server.settled_request_count() == 1


UPSTREAM = "This model's maximum context length is 65536 tokens. Please reduce the length."


@pytest.mark.parametrize(
    "raw",
    [
        json.dumps({"error": {"message": UPSTREAM, "type": "invalid_request_error"}}),
        UPSTREAM,
        {"error": {"message": UPSTREAM}},
    ],
)
async def test_openrouters_provider_error_says_what_the_provider_said(
    server: ReplayServer, raw: object
) -> None:
    """OpenRouter answers an upstream provider's refusal with "Provider returned error" and
    puts the provider's own error in `metadata.raw` (a JSON text, or text): the message
    said only "Provider returned error", never why."""
    metadata = {"raw": raw, "provider_name": "DeepSeek"}
    error = {"message": "Provider returned error", "code": 400, "metadata": metadata}
    server.enqueue(json_reply(400, {"error": error}))
    model = Model(
        id="deepseek/deepseek-chat",
        provider="openrouter",
        api="openai-completions",
        base_url=server.url + "/api/v1",
    )
    stream = stream_openai_completions(
        model, Context("", [UserMessage("hi")]), StreamOptions(api_key="k")
    )
    message = await stream.result()
    assert message.error_message == (
        f"HTTP 400 from the server: Provider returned error (DeepSeek: {UPSTREAM})"
    )


async def test_openrouters_error_in_the_stream_says_what_the_provider_said(
    server: ReplayServer,
) -> None:
    raw = json.dumps({"error": {"message": "upstream model crashed"}})
    error = {"message": "Provider returned error", "code": 502, "metadata": {"raw": raw}}
    events = [
        'data: {"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":'
        '[{"index":0,"delta":{"content":"par"},"finish_reason":null}]}',
        "data: " + json.dumps({"error": error}),
    ]
    server.enqueue(sse_reply(events))
    model = Model(id="m", provider="openrouter", api="openai-completions", base_url=server.url)
    stream = stream_openai_completions(
        model, Context("", [UserMessage("hi")]), StreamOptions(api_key="k")
    )
    message = await stream.result()
    assert message.error_message is not None
    assert "Provider returned error (upstream model crashed)" in message.error_message
