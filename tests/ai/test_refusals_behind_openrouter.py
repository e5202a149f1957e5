"""A refusal of a setting for the model, passed on by OpenRouter: it answers HTTP 400
"Provider returned error" and puts the provider's own error in `metadata.raw` (its JSON
as text, or text). The request went no further: the refusal's handlers read only the
router's message, so a refused reasoning effort, `temperature`, `max_tokens` or reasoning
field on the messages failed every call behind OpenRouter that works against the provider
itself. Through the real `openai` SDK against `ReplayServer` on 127.0.0.1, which answers
as OpenRouter does, then a stream."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.ai.servers import ReplayServer, json_reply, openai_chunks, sse_reply
from yiemagent import Agent
from yiemagent.ai import Context, StreamOptions, stream
from yiemagent.tools import tool
from yiemagent.types.messages import UserMessage
from yiemagent.types.model import Model

pytestmark = pytest.mark.timeout(120)

KEY = "sk-or-test-0123456789abcdef"


def via_openrouter(raw: Any, provider: str = "OpenAI") -> Any:
    """OpenRouter's 400 for the provider's error `raw` (a dict goes as its JSON text)."""
    text = json.dumps(raw) if isinstance(raw, dict) else raw
    error = {"message": "Provider returned error", "code": 400,
             "metadata": {"raw": text, "provider_name": provider}}  # fmt: skip
    return json_reply(400, {"error": error})


def openai_error(message: str, param: str) -> dict[str, Any]:
    return {"error": {"message": message, "type": "invalid_request_error", "param": param,
                      "code": "unsupported_value"}}  # fmt: skip


EFFORT = openai_error(
    "Unsupported value: 'minimal' is not supported with the 'gpt-5.1' model."
    " Supported values are: 'none', 'low', 'medium', and 'high'.",
    "reasoning_effort",
)
TEMPERATURE = (
    "Unsupported value: 'temperature' does not support 0.2 with this model."
    " Only the default (1) value is supported."
)
MAX_TOKENS = openai_error(
    "Unsupported parameter: 'max_tokens' is not supported with this model."
    " Use 'max_completion_tokens' instead.",
    "max_tokens",
)


def ok() -> Any:
    return sse_reply(openai_chunks({"role": "assistant", "content": "ok"}))


def openrouter(server: ReplayServer, model_id: str = "openai/gpt-5.1") -> Model:
    return Model(
        id=model_id, provider="openrouter", api="openai-completions",
        base_url=server.url + "/api/v1", reasoning=True,
    )  # fmt: skip


@pytest.mark.parametrize(
    ("refusal", "options", "sent"),
    [
        (via_openrouter(EFFORT), {"reasoning": "minimal"},
         lambda body: body["reasoning"] == {"effort": "low"}),
        (via_openrouter(openai_error(TEMPERATURE, "temperature")), {"temperature": 0.2},
         lambda body: "temperature" not in body),
        (via_openrouter(TEMPERATURE, provider="Azure"), {"temperature": 0.2},
         lambda body: "temperature" not in body),
        (via_openrouter(MAX_TOKENS), {"max_tokens": 300},
         lambda body: "max_tokens" not in body and body["max_completion_tokens"] == 300),
    ],
    ids=["effort", "temperature", "temperature_as_text", "max_tokens"],
)  # fmt: skip
async def test_the_providers_refusal_is_adapted_to(
    server: ReplayServer, refusal: Any, options: dict[str, Any], sent: Any
) -> None:
    server.enqueue(refusal, ok())
    opts = StreamOptions(api_key=KEY, **options)
    answer = await stream(openrouter(server), Context("", [UserMessage("hi")]), opts).result()
    assert (answer.error_message, answer.text) == (None, "ok")
    first, second = (request.body for request in server.requests)
    assert not sent(first)
    assert sent(second)


@tool
def add(a: int, b: int) -> int:
    """`a` plus `b`."""
    return a + b


async def test_a_reasoning_field_groq_refuses_behind_openrouter_is_left_off(
    server: ReplayServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENROUTER_API_KEY", KEY)
    groq = {"error": {"message": "'messages.2' : for 'role:assistant' the following must be"
                      " satisfied[('messages.2' : property 'reasoning' is unsupported)]",
                      "type": "invalid_request_error"}}  # fmt: skip
    call = {"index": 0, "id": "call_1", "type": "function",
            "function": {"name": "add", "arguments": '{"a": 2, "b": 3}'}}  # fmt: skip
    server.enqueue(
        sse_reply(
            openai_chunks(
                {"reasoning": "Use add."}, {"tool_calls": [call]}, finish_reason="tool_calls"
            )
        ),
        via_openrouter(groq, provider="Groq"),
        sse_reply(openai_chunks({"content": "5"})),
    )
    agent = Agent("x", model=openrouter(server, "openai/gpt-oss-120b"), tools=[add])
    assert (await agent.prompt("2+3?")).text == "5"
    refused, retried = (request.body for request in server.requests[1:])
    assert refused["messages"][2]["reasoning"] == "Use add."
    assert not any("reasoning" in message for message in retried["messages"])
