"""DeepSeek (V3.2 on, thinking) and Kimi require `reasoning_content` on every assistant
message of a thinking conversation ("The `reasoning_content` in the thinking mode must be
passed back to the API."; Kimi: "thinking is enabled but reasoning_content is missing in
assistant tool call message at index 2"). Their own APIs get it always; behind OpenRouter
(which passes the refusal in `metadata.raw`), LiteLLM or any proxy nothing names them, so
a session that another model began, or one whose reasoning was not kept, failed every
request. The request goes once more with an empty `reasoning_content` on each assistant
message that has no reasoning, remembered for that server and model, with one warning.
Through the real `openai` SDK against `ReplayServer` on 127.0.0.1."""

from __future__ import annotations

import json
import logging
from typing import Any

import pytest

from tests.ai.servers import ReplayServer, json_reply, openai_chunks, sse_reply
from yiemagent.ai.providers.openai_completions import stream_openai_completions
from yiemagent.types.messages import (
    AssistantMessage,
    Message,
    TextContent,
    ToolCall,
    ToolResultMessage,
    UserMessage,
)
from yiemagent.types.model import Context, Model, StreamOptions

pytestmark = pytest.mark.timeout(120)

LOGGER = "yiemagent.ai.providers._refused_settings"
DEEPSEEK = "The `reasoning_content` in the thinking mode must be passed back to the API."
KIMI = (
    "thinking is enabled but reasoning_content is missing in assistant tool call message at index 2"
)


def through_openrouter(said: str) -> Any:
    raw = json.dumps({"error": {"message": said, "type": "invalid_request_error"}})
    error = {
        "message": "Provider returned error",
        "code": 400,
        "metadata": {"raw": raw, "provider_name": "DeepSeek"},
    }
    return json_reply(400, {"error": error})


def directly(said: str) -> Any:
    return json_reply(400, {"error": {"message": said, "type": "invalid_request_error"}})


TRANSCRIPT: list[Message] = [
    UserMessage("weather in Paris?"),
    AssistantMessage(
        [TextContent("Checking."), ToolCall("call_1", "weather", {"city": "Paris"})],
        stop_reason="toolUse",
        provider="anthropic",
        model="claude-sonnet-4-5",
    ),
    ToolResultMessage("call_1", "weather", [TextContent("sunny")]),
]


@pytest.mark.parametrize(("said", "refusal"), [(DEEPSEEK, through_openrouter), (KIMI, directly)])
async def test_an_empty_reasoning_content_goes_where_one_is_required(
    server: ReplayServer, caplog: pytest.LogCaptureFixture, said: str, refusal: Any
) -> None:
    model = Model(
        id=f"thinker-{len(said)}",
        provider="openrouter",
        api="openai-completions",
        base_url=server.url + "/api/v1",
    )
    server.enqueue(
        refusal(said),
        sse_reply(openai_chunks({"content": "Sunny."})),
        sse_reply(openai_chunks({"content": "Still sunny."})),
    )
    with caplog.at_level(logging.WARNING, logger=LOGGER):
        for _ in range(2):
            stream = stream_openai_completions(
                model, Context("", TRANSCRIPT), StreamOptions(api_key="k")
            )
            message = await stream.result()
            assert message.error_message is None
    bodies = [request.body for request in server.requests]
    assert len(bodies) == 3
    assert "reasoning_content" not in bodies[0]["messages"][1]
    for body in bodies[1:]:  # the retry, and the next call at once
        assistant = body["messages"][1]
        assert assistant["reasoning_content"] == ""
        assert assistant["tool_calls"][0]["id"] == "call_1"
    warnings = [r.getMessage() for r in caplog.records if r.name == LOGGER]
    assert warnings == [
        f"{model.id} requires reasoning_content on every assistant message:"
        " an empty one is sent where none is known"
    ]


async def test_a_refusal_when_every_message_has_it_stays_the_error(server: ReplayServer) -> None:
    model = Model(id="kimi-k2", provider="vllm", api="openai-completions", base_url=server.url)
    server.enqueue(directly(KIMI), directly(KIMI))
    stream = stream_openai_completions(
        model, Context("", [UserMessage("hi")]), StreamOptions(api_key="k")
    )
    message = await stream.result()
    assert message.error_message == f"HTTP 400 from the server: {KIMI}"
    assert server.settled_request_count() == 1
