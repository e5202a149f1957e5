"""OpenAI's reasoning models (o1, o3, o4-mini, GPT-5) behind a server that is not OpenAI's
own (Azure OpenAI, GitHub Models, a proxy) refuse what other models take: `max_tokens`
("Use 'max_completion_tokens' instead") and a `temperature` other than 1. Nothing tells
such a deployment's model apart (a deployment has its owner's name), so the request goes
once more as the server says, remembered for that server and model, with one warning.
Through the real `openai` SDK against `ReplayServer` on 127.0.0.1, which answers the 400s
Azure OpenAI sends, then a stream."""

from __future__ import annotations

import logging
from typing import Any

import pytest

from tests.ai.servers import ReplayServer, json_reply, openai_chunks, sse_reply
from yiemagent.ai import Context, StreamOptions, get_model, stream
from yiemagent.types.messages import AssistantMessage, UserMessage
from yiemagent.types.model import Model

pytestmark = pytest.mark.timeout(120)

KEY = "azure-key-0123456789abcdef"
LOGGER = "yiemagent.ai.providers._refused_settings"


def refused(message: str, param: str, code: str) -> Any:
    error = {"message": message, "type": "invalid_request_error", "param": param, "code": code}
    return json_reply(400, {"error": error})


MAX_TOKENS_REFUSED = refused(
    "Unsupported parameter: 'max_tokens' is not supported with this model."
    " Use 'max_completion_tokens' instead.",
    "max_tokens",
    "unsupported_parameter",
)
TEMPERATURE_REFUSED = refused(
    "Unsupported value: 'temperature' does not support 0.2 with this model."
    " Only the default (1) value is supported.",
    "temperature",
    "unsupported_value",
)


def ok() -> Any:
    return sse_reply(openai_chunks({"role": "assistant", "content": "ok"}))


async def call(model: Model, **options: Any) -> AssistantMessage:
    opts = StreamOptions(api_key=KEY, **options)
    return await stream(model, Context("", [UserMessage("hi")]), opts).result()


async def test_max_tokens_refused_goes_as_max_completion_tokens_and_is_remembered(
    server: ReplayServer, caplog: pytest.LogCaptureFixture
) -> None:
    model = get_model("openai-compatible/o4-mini-deploy", base_url=server.url + "/openai/v1")
    server.enqueue(MAX_TOKENS_REFUSED, ok(), ok())
    with caplog.at_level(logging.WARNING, logger=LOGGER):
        first = await call(model, max_tokens=300)
        second = await call(model, max_tokens=200)
    assert (first.error_message, first.text) == (None, "ok")
    assert (second.error_message, second.text) == (None, "ok")
    bodies = [request.body for request in server.requests]
    assert bodies[0]["max_tokens"] == 300
    assert "max_tokens" not in bodies[1] and bodies[1]["max_completion_tokens"] == 300
    assert "max_tokens" not in bodies[2] and bodies[2]["max_completion_tokens"] == 200
    warnings = [r.getMessage() for r in caplog.records if r.name == LOGGER]
    assert warnings == [
        "o4-mini-deploy refuses max_tokens: max_completion_tokens is sent in its place"
    ]


async def test_a_refused_temperature_is_left_out_and_remembered(
    server: ReplayServer, caplog: pytest.LogCaptureFixture
) -> None:
    model = get_model("openai-compatible/o3-deploy", base_url=server.url + "/openai/v1")
    server.enqueue(TEMPERATURE_REFUSED, ok(), ok())
    with caplog.at_level(logging.WARNING, logger=LOGGER):
        first = await call(model, temperature=0.2)
        second = await call(model, temperature=0.2)
    assert (first.error_message, second.error_message) == (None, None)
    bodies = [request.body for request in server.requests]
    assert bodies[0]["temperature"] == 0.2
    assert "temperature" not in bodies[1] and "temperature" not in bodies[2]
    warnings = [r.getMessage() for r in caplog.records if r.name == LOGGER]
    assert warnings == ["o3-deploy refuses temperature: it is not sent"]


async def test_both_refused_one_after_the_other_in_one_call(server: ReplayServer) -> None:
    model = get_model("openai-compatible/o1-deploy", base_url=server.url + "/openai/v1")
    server.enqueue(MAX_TOKENS_REFUSED, TEMPERATURE_REFUSED, ok())
    message = await call(model, max_tokens=100, temperature=0.5)
    assert (message.error_message, message.text) == (None, "ok")
    last = server.requests[-1].body
    assert last["max_completion_tokens"] == 100
    assert "max_tokens" not in last and "temperature" not in last


async def test_another_servers_refusal_is_not_taken_for_this_ones(server: ReplayServer) -> None:
    """Remembered per server and model: the same model name at another base URL (another
    deployment, another proxy) is asked as ever."""
    refusing = get_model("openai-compatible/gpt-4o", base_url=server.url + "/openai/v1")
    server.enqueue(MAX_TOKENS_REFUSED, ok(), ok())
    await call(refusing, max_tokens=64)
    other = get_model("openai-compatible/gpt-4o", base_url=server.url + "/v1")
    await call(other, max_tokens=64)
    assert server.requests[-1].body["max_tokens"] == 64


async def test_a_400_about_something_else_stays_the_error(server: ReplayServer) -> None:
    model = get_model("openai-compatible/o3-mini", base_url=server.url + "/openai/v1")
    server.enqueue(refused("Invalid 'messages[0].content': empty.", "messages", "invalid_value"))
    message = await call(model, max_tokens=10, temperature=0.3)
    assert message.stop_reason == "error"
    assert message.error_message is not None and "messages[0].content" in message.error_message
    assert len(server.requests) == 1
