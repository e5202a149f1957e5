"""Prompt inputs that are refused before a run starts, with the package's own errors
(DESIGN §10: every exception raised on purpose derives from `YiemAgentError`), in the
cases pi-mono's and pydantic-ai's agents check for their prompt arguments: images beside
something other than a text, an empty prompt, a run's `instructions` that are no text, and
an OpenAI user dict that is none. Nothing is sent, and the agent takes the next prompt."""

from __future__ import annotations

from typing import Any

import pytest

from yiemagent import (
    Agent,
    ConfigError,
    ImageContent,
    MessageInputError,
    UserMessage,
    YiemAgentError,
    user_message_from_openai,
)
from yiemagent.ai.providers.faux import FauxModel
from yiemagent.types import text_of

PIXEL = (
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQ"
    "AAAABJRU5ErkJggg=="
)


@pytest.mark.parametrize(
    ("call", "problem"),
    [
        (lambda a: a.prompt("look", images=["not an image"]), "images must be ImageContent"),
        (
            lambda a: a.prompt([UserMessage("look")], images=[ImageContent(PIXEL, "image/png")]),
            "images go with a text prompt",
        ),
        (lambda a: a.prompt([]), "a prompt needs at least one message"),
    ],
    ids=["image-not-an-image", "images-beside-messages", "empty-list"],
)
async def test_a_prompt_that_is_none_is_a_message_input_error(call: Any, problem: str) -> None:
    fm = FauxModel(["answered"])
    agent = Agent(model=fm.model, stream_fn=fm.stream_fn)

    with pytest.raises(MessageInputError, match=problem) as info:
        await call(agent)

    assert isinstance(info.value, YiemAgentError) and isinstance(info.value, ValueError)
    assert fm.call_count == 0 and agent.state.messages == []
    assert text_of((await agent.prompt("and now?")).content) == "answered"


@pytest.mark.parametrize("instructions", [123, ["be brief"], b"bytes"])
async def test_instructions_that_are_no_text_are_refused_before_the_run(instructions: Any) -> None:
    fm = FauxModel(["answered"])
    agent = Agent(None, model=fm.model, stream_fn=fm.stream_fn)  # no system prompt of its own

    with pytest.raises(ConfigError, match="instructions must be a str, or None for none"):
        await agent.prompt("hi", instructions=instructions)
    with pytest.raises(ConfigError, match="instructions must be a str"):
        await agent.resume(instructions=instructions)

    assert fm.call_count == 0 and agent.state.messages == []
    await agent.prompt("hi", instructions="be brief")
    assert fm.contexts[0].system_prompt == "be brief"


@pytest.mark.parametrize(
    ("message", "problem"),
    [
        ("hi", "expected an OpenAI message dict"),
        ({"role": "assistant", "content": "hi"}, "expected a message with role 'user'"),
        ({"role": "user", "content": 3}, "must be a string or a list"),
        (
            {"role": "user", "content": [{"type": "image_url", "image_url": {"url": "http://x"}}]},
            "is not a base64 data: URL",
        ),
    ],
)
def test_an_openai_dict_that_is_no_user_message_is_a_message_input_error(
    message: Any, problem: str
) -> None:
    with pytest.raises(MessageInputError, match=problem):
        user_message_from_openai(message)


@pytest.mark.parametrize("method", ["steer", "follow_up", "send"])
@pytest.mark.parametrize(
    ("message", "problem"),
    [
        ([], "() needs at least one message"),
        (123, "() must be a text, a message or a list of them, not int"),
        ([UserMessage("fine"), 1], "(): 1 is not a message"),
    ],
    ids=["empty-list", "a-number", "a-list-holding-a-number"],
)
async def test_a_queued_message_that_is_none_names_the_method_called(
    method: str, message: Any, problem: str
) -> None:
    fm = FauxModel(["answered"])
    agent = Agent(model=fm.model, stream_fn=fm.stream_fn)

    with pytest.raises(MessageInputError) as info:
        getattr(agent, method)(message)

    assert str(info.value).startswith(method + problem)
    assert "prompt" not in str(info.value)  # the user called steer/follow_up/send
    assert not agent.has_queued_messages()  # nothing of the list was queued
    assert text_of((await agent.prompt("and now?")).content) == "answered"
