"""A model's reasoning goes back to it in the field it came in (`reasoning_content`,
`reasoning`), which DeepSeek and Kimi require; Groq and Cerebras stream it so but refuse
the field on an assistant message (HTTP 400 "'messages.2' : for 'role:assistant' the
following must be satisfied[('messages.2' : property 'reasoning' is unsupported, did you
mean 'role'?)]", karthink/gptel#774; Cerebras: "messages.2.assistant.reasoning_content:
property '…' is unsupported", Kilo-Org/kilocode#10375). Every request after a turn that
reasoned failed, so a tool loop of gpt-oss or Qwen3 on Groq could not get past its first
call. The request goes once more without the field on any message, remembered for that
server and model, with one warning. Through the real `openai` SDK and an Agent against
`ReplayServer` on 127.0.0.1, which answers as Groq does."""

from __future__ import annotations

import logging
from typing import Any

import pytest

from tests.ai.servers import ReplayServer, json_reply, openai_chunks, sse_reply
from yiemagent import Agent
from yiemagent.agent import AgentRunError
from yiemagent.tools import tool
from yiemagent.types.model import Model

pytestmark = pytest.mark.timeout(120)

KEY = "gsk-test-0123456789abcdef"
LOGGER = "yiemagent.ai.providers._refused_settings"


@tool
def add(a: int, b: int) -> int:
    """`a` plus `b`."""
    return a + b


def groq_refusal(index: int, field: str) -> Any:
    message = (
        f"'messages.{index}' : for 'role:assistant' the following must be satisfied"
        f"[('messages.{index}' : property '{field}' is unsupported, did you mean 'role'?)]"
    )
    return json_reply(400, {"error": {"message": message, "type": "invalid_request_error"}})


def cerebras_refusal(index: int, field: str) -> Any:
    path = f"messages.{index}.assistant.{field}"
    body = {
        "message": f"{path}: property '{path}' is unsupported",
        "type": "invalid_request_error",
        "param": "validation_error",
        "code": "wrong_api_format",
    }
    return json_reply(400, body)


def reasoned_call(field: str) -> Any:
    call = {"index": 0, "id": "call_1", "type": "function"}
    call["function"] = {"name": "add", "arguments": '{"a": 2, "b": 3}'}
    return sse_reply(
        openai_chunks(
            {field: "2 plus 3: use add."}, {"tool_calls": [call]}, finish_reason="tool_calls"
        )
    )


@pytest.mark.parametrize(
    ("field", "refusal"),
    [("reasoning", groq_refusal), ("reasoning_content", cerebras_refusal)],
)
async def test_a_refused_reasoning_field_is_left_off_the_messages_and_remembered(
    server: ReplayServer,
    caplog: pytest.LogCaptureFixture,
    monkeypatch: pytest.MonkeyPatch,
    field: str,
    refusal: Any,
) -> None:
    monkeypatch.setenv("GROQ_API_KEY", KEY)
    model = Model(
        id=f"gpt-oss-{field}", provider="groq", api="openai-completions", base_url=server.url
    )
    server.enqueue(
        reasoned_call(field),
        refusal(2, field),
        sse_reply(openai_chunks({"content": "5"})),
        reasoned_call(field),
        sse_reply(openai_chunks({"content": "5 again"})),
    )
    agent = Agent("x", model=model, tools=[add])
    with caplog.at_level(logging.WARNING, logger=LOGGER):
        first = await agent.prompt("2+3?")
        second = await agent.prompt("once more")
    assert (first.text, second.text) == ("5", "5 again")
    bodies = [request.body for request in server.requests]
    assert len(bodies) == 5
    assert bodies[1]["messages"][2][field] == "2 plus 3: use add."  # what was refused
    for body in bodies[2:]:  # the retry, and every later request of the process
        assert not any(field in message for message in body["messages"])
        assert any(message.get("tool_calls") for message in body["messages"])
    warnings = [r.getMessage() for r in caplog.records if r.name == LOGGER]
    assert warnings == [
        f"gpt-oss-{field} refuses {field} on its messages: earlier turns' reasoning is not sent"
    ]
    # the reasoning is kept in the transcript all the same
    assert any(
        block.type == "thinking"
        for m in agent.state.messages
        for block in getattr(m, "content", [])
        if not isinstance(block, str)
    )


async def test_a_refused_property_the_messages_do_not_hold_stays_the_error(
    server: ReplayServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A refusal naming a property none of the messages has (the body's own `store`, say)
    is the request's error, sent once."""
    monkeypatch.setenv("GROQ_API_KEY", KEY)
    model = Model(id="llama", provider="groq", api="openai-completions", base_url=server.url)
    server.enqueue(groq_refusal(0, "timestamp"))
    agent = Agent("x", model=model)
    with pytest.raises(AgentRunError, match="property 'timestamp' is unsupported"):
        await agent.prompt("hi")
    assert server.settled_request_count() == 1
