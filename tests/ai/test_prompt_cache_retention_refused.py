"""`cache_retention="long"` asks OpenAI for `prompt_cache_retention: "24h"`, which only some
models take: the others (and GPT-5.6 on, which replaced the field) answer HTTP 400. The
call goes once more without it, remembered for that server and model; the user reads one
warning. Through the real `openai` SDK, on both OpenAI APIs, against `ReplayServer` on
127.0.0.1, which answers the scripted 400, then a stream."""

from __future__ import annotations

import logging
from typing import Any

import pytest

from tests.ai.servers import ReplayServer, json_reply, openai_chunks, sse_reply
from tests.ai.test_attachments import responses_done, responses_sse
from yiemagent.ai import Context, StreamOptions, get_model, stream
from yiemagent.types.messages import AssistantMessage, UserMessage
from yiemagent.types.model import Model, ThinkingLevel

pytestmark = pytest.mark.timeout(120)

KEY = "sk-test-0123456789abcdef"
LOGGER = "yiemagent.ai.providers._refused_settings"


def refused(message: str, param: str, code: str = "unsupported_parameter") -> Any:
    error = {"message": message, "type": "invalid_request_error", "param": param, "code": code}
    return json_reply(400, {"error": error})


RETENTION_REFUSED = refused(
    "prompt_cache_retention is not supported on this model.", "prompt_cache_retention"
)


def answer(api: str) -> Any:
    if api == "openai-completions":
        return sse_reply(openai_chunks({"role": "assistant", "content": "ok"}))
    item = {"type": "message", "id": "msg_1", "role": "assistant", "content": []}
    return sse_reply(
        responses_sse(
            {"type": "response.output_item.added", "output_index": 0, "item": item},
            {"type": "response.output_text.delta", "item_id": "msg_1", "delta": "ok"},
            responses_done(),
        )
    )


async def call(model: Model, reasoning: ThinkingLevel | None = None) -> AssistantMessage:
    options = StreamOptions(
        api_key=KEY, session_id="s-1", cache_retention="long", reasoning=reasoning
    )
    return await stream(model, Context("", [UserMessage("hi")]), options).result()


@pytest.mark.parametrize("name", ["openai/gpt-4o-mini", "openai-responses/gpt-5.6"])
async def test_a_refused_retention_is_left_out_and_remembered(
    server: ReplayServer, caplog: pytest.LogCaptureFixture, name: str
) -> None:
    model = get_model(name, base_url=server.url + "/v1")
    server.enqueue(RETENTION_REFUSED, answer(model.api))
    with caplog.at_level(logging.WARNING, logger=LOGGER):
        first = await call(model)
        server.enqueue(answer(model.api))
        second = await call(model)
    assert first.stop_reason == "stop" and first.text == "ok", first.error_message
    assert second.stop_reason == "stop", second.error_message
    sent = [r.body.get("prompt_cache_retention") for r in server.requests]
    assert sent == ["24h", None, None]
    assert all(r.body["prompt_cache_key"] == "s-1" for r in server.requests)  # kept
    said = [r.getMessage() for r in caplog.records if r.name == LOGGER]
    assert said == [f"{model.id} refuses prompt_cache_retention: it is not sent"]


async def test_a_refused_effort_and_a_refused_retention_in_one_call(
    server: ReplayServer,
) -> None:
    model = get_model("openai/gpt-5", base_url=server.url + "/v1")
    effort = refused(
        "Unsupported value: 'xhigh' is not supported with the 'gpt-5' model. Supported values"
        " are: 'minimal', 'low', 'medium', and 'high'.",
        "reasoning_effort",
        "unsupported_value",
    )
    server.enqueue(effort, RETENTION_REFUSED, answer(model.api))
    message = await call(model, "xhigh")
    assert message.stop_reason == "stop", message.error_message
    sent = [
        (r.body["reasoning_effort"], r.body.get("prompt_cache_retention")) for r in server.requests
    ]
    assert sent == [("xhigh", "24h"), ("high", "24h"), ("high", None)]
