"""Gemini's OpenAI-compatible endpoint sends its errors as a JSON list of one object,
`[{"error": {"code", "message", "status"}}]` (its REST API's form; magentic#382,
vscode#299295). The error said only "HTTP 400 from the server: Error code: 400", leaving
out why. Through the real `openai` SDK against `ReplayServer` on 127.0.0.1."""

from __future__ import annotations

import pytest

from tests.ai.servers import ReplayServer, json_reply
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
