"""A reasoning effort the server does not take for the model: OpenAI answers HTTP 400
`unsupported_value` listing the efforts it takes ("'minimal' is not supported with the
'gpt-5.1' model. Supported values are: 'none', 'low', 'medium', and 'high'."), and so do
compatible servers. The call goes once more with the nearest listed effort, remembered for
that server and model; the user reads one warning. Any other 400 stays the call's error.

Through the real `openai` SDK, on both OpenAI APIs, against `ReplayServer` on 127.0.0.1,
which answers the scripted 400 as the API words it, then a stream."""

from __future__ import annotations

import logging
from typing import Any

import pytest
from hypothesis import given, strategies as st

from tests.ai.servers import ReplayServer, json_reply, openai_chunks, sse_reply
from tests.ai.test_attachments import responses_done, responses_sse
from yiemagent.ai import Context, StreamOptions, get_model, stream
from yiemagent.ai.providers._refused_settings import EFFORT_ORDER, nearest_effort
from yiemagent.types.messages import AssistantMessage, UserMessage
from yiemagent.types.model import Model, ThinkingLevel

pytestmark = pytest.mark.timeout(120)

KEY = "sk-test-0123456789abcdef"
LOGGER = "yiemagent.ai.providers._refused_settings"


def refused(message: str, param: str | None) -> Any:
    error = {"message": message, "type": "invalid_request_error", "param": param,
             "code": "unsupported_value"}  # fmt: skip
    return json_reply(400, {"error": error})


def openai_refusal(asked: str, model_id: str, param: str) -> Any:
    return refused(
        f"Unsupported value: '{asked}' is not supported with the '{model_id}' model. "
        "Supported values are: 'none', 'low', 'medium', and 'high'.",
        param,
    )


def chat_answer() -> Any:
    return sse_reply(openai_chunks({"role": "assistant", "content": "ok"}))


def responses_answer() -> Any:
    item = {"type": "message", "id": "msg_1", "role": "assistant", "content": []}
    return sse_reply(
        responses_sse(
            {"type": "response.output_item.added", "output_index": 0, "item": item},
            {"type": "response.output_text.delta", "item_id": "msg_1", "delta": "ok"},
            responses_done(),
        )
    )


async def call(model: Model, level: ThinkingLevel) -> AssistantMessage:
    options = StreamOptions(api_key=KEY, reasoning=level)
    return await stream(model, Context("", [UserMessage("hi")]), options).result()


async def test_chat_completions_sends_the_nearest_effort_the_model_takes(
    server: ReplayServer, caplog: pytest.LogCaptureFixture
) -> None:
    model = get_model("openai/gpt-5", base_url=server.url + "/v1")
    server.enqueue(openai_refusal("minimal", "gpt-5", "reasoning_effort"), chat_answer())
    with caplog.at_level(logging.WARNING, logger=LOGGER):
        first = await call(model, "minimal")
        server.enqueue(chat_answer())
        second = await call(model, "minimal")  # remembered: sent as "low" at once
    assert first.stop_reason == "stop" and first.text == "ok", first.error_message
    assert second.stop_reason == "stop", second.error_message
    sent = [request.body["reasoning_effort"] for request in server.requests]
    assert sent == ["minimal", "low", "low"]
    said = [r.getMessage() for r in caplog.records if r.name == LOGGER]
    assert said == ["gpt-5 takes no reasoning effort 'minimal' (only none, low, medium, high): "
                    "'low' is sent instead"]  # fmt: skip


async def test_responses_sends_the_nearest_effort_the_model_takes(server: ReplayServer) -> None:
    model = get_model("openai-responses/gpt-5.1", base_url=server.url + "/v1")
    server.enqueue(openai_refusal("xhigh", "gpt-5.1", "reasoning.effort"), responses_answer())
    message = await call(model, "xhigh")
    assert message.stop_reason == "stop" and message.text == "ok", message.error_message
    sent = [request.body["reasoning"] for request in server.requests]
    assert [r["effort"] for r in sent] == ["xhigh", "high"]
    assert sent[1]["summary"] == "auto"  # the rest of the request as it was


async def test_a_compatible_server_that_names_no_param(server: ReplayServer) -> None:
    """Kimi's and DeepSeek's wording: no `param`, the field named in the message."""
    model = get_model("openai-compatible/kimi-k2", base_url=server.url + "/v1", reasoning=True)
    server.enqueue(
        refused(
            "Unsupported value: 'reasoning_effort' does not support 'minimal' with this model. "
            "Supported values are: 'low', 'medium', 'high' and 'max'.",
            None,
        ),
        chat_answer(),
    )
    message = await call(model, "minimal")
    assert message.stop_reason == "stop", message.error_message
    assert [r.body["reasoning_effort"] for r in server.requests] == ["minimal", "low"]


async def test_pydantic_servers_list_the_efforts_they_take(server: ReplayServer) -> None:
    """sglang's (and vLLM's) refusal: a pydantic literal error, the body itself the error."""
    model = get_model("openai-compatible/glm-5", base_url=server.url + "/v1", reasoning=True)
    said = (
        "1 validation error:\n  {'type': 'literal_error', 'loc': ('body', 'reasoning_effort'), "
        "'msg': \"Input should be 'low', 'medium' or 'high'\", 'input': 'xhigh', 'ctx': "
        "{'expected': \"'low', 'medium' or 'high'\"}}"
    )
    body = {"object": "error", "message": said, "type": "Bad Request", "param": None, "code": 400}
    server.enqueue(json_reply(400, body), chat_answer())
    message = await call(model, "xhigh")
    assert message.stop_reason == "stop", message.error_message
    assert [r.body["reasoning_effort"] for r in server.requests] == ["xhigh", "high"]


async def test_ollama_which_lists_nothing_gets_low_medium_or_high(server: ReplayServer) -> None:
    model = get_model("ollama/qwen3", base_url=server.url + "/v1", reasoning=True)
    server.enqueue(refused("invalid reasoning value: 'minimal'", None), chat_answer())
    message = await call(model, "minimal")
    assert message.stop_reason == "stop", message.error_message
    assert [r.body["reasoning_effort"] for r in server.requests] == ["minimal", "low"]


async def test_another_400_is_the_calls_error(server: ReplayServer) -> None:
    model = get_model("openai/gpt-5-mini", base_url=server.url + "/v1")
    server.enqueue(refused("Invalid 'messages': empty array.", "messages"), chat_answer())
    message = await call(model, "low")
    assert message.stop_reason == "error"
    assert message.error_message == "HTTP 400 from the server: Invalid 'messages': empty array."
    assert server.settled_request_count() == 1


async def test_a_refusal_listing_no_effort_to_use_is_the_calls_error(
    server: ReplayServer,
) -> None:
    model = get_model("openai/gpt-5-nano", base_url=server.url + "/v1")
    text = (
        "Unsupported value: 'low' is not supported with this model. Supported values are: 'none'."
    )
    server.enqueue(refused(text, "reasoning_effort"), chat_answer())
    message = await call(model, "low")
    assert message.stop_reason == "error"
    assert message.error_message == f"HTTP 400 from the server: {text}"
    assert server.settled_request_count() == 1


@given(
    asked=st.sampled_from(EFFORT_ORDER[1:]),
    supported=st.lists(st.sampled_from([*EFFORT_ORDER, "auto"]), max_size=8),
)
def test_the_nearest_effort_is_a_listed_one_no_farther_than_any_other(
    asked: str, supported: list[str]
) -> None:
    chosen = nearest_effort(asked, supported)
    usable = [value for value in supported if value in EFFORT_ORDER and value != "none"]
    if not usable:
        assert chosen is None
        return
    assert chosen in usable
    distance = abs(EFFORT_ORDER.index(chosen) - EFFORT_ORDER.index(asked))
    assert all(abs(EFFORT_ORDER.index(v) - EFFORT_ORDER.index(asked)) >= distance for v in usable)
    if asked in usable:
        assert chosen == asked
