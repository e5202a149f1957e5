"""The prompt inputs strands-agents checks (tests/strands/agent/test_agent.py:
test_agent_empty_invoke, test_agent_with_assistant_role_message,
test_agent_with_multiple_messages_on_invoke, test_agent_with_invalid_input[_list]), on our
Agent: a transcript ending in the user's message answered without a new prompt, an
assistant message as the prompt, several messages as one prompt, and inputs that are no
prompt refused with a message that says what a prompt may be.

Where ours differs by choice: `prompt()` needs a message, and continuing without one is
`resume()` (strands' `agent()` and `agent([])` continue); an OpenAI-style dict is read as a
user message only, so `{"role": "assistant", ...}` is refused where an `AssistantMessage`
is taken (docs/agent.md, "Prompts")."""

from __future__ import annotations

from typing import Any

import pytest

from yiemagent import Agent, AssistantMessage, MessageInputError, UserMessage
from yiemagent.ai.providers.faux import FauxModel
from yiemagent.types import text_of


def faux_agent(fm: FauxModel, **kwargs: Any) -> Agent[Any]:
    return Agent(model=fm.model, stream_fn=fm.stream_fn, **kwargs)


async def test_a_transcript_ending_in_the_users_message_is_answered_by_resume() -> None:
    fm = FauxModel(["hello!"])
    agent = faux_agent(fm, messages=[UserMessage("hello!")])
    with pytest.raises(MessageInputError, match="use resume"):
        await agent.prompt([])
    reply = await agent.resume()
    assert reply.text == "hello!"
    assert [m.role for m in agent.state.messages] == ["user", "assistant"]


async def test_an_assistant_message_as_the_prompt_is_answered_after_it() -> None:
    fm = FauxModel(["world!"])
    agent = faux_agent(fm)
    reply = await agent.prompt(AssistantMessage("hello..."))
    assert reply.text == "world!"
    assert [(m.role, text_of(m.content)) for m in fm.contexts[0].messages] == [
        ("assistant", "hello...")
    ]
    assert len(agent.state.messages) == 2


async def test_several_messages_of_both_roles_make_one_prompt() -> None:
    fm = FauxModel(["world!"])
    agent = faux_agent(fm)
    reply = await agent.prompt([UserMessage("hello"), AssistantMessage("...")])
    assert reply.text == "world!"
    assert [m.role for m in agent.state.messages] == ["user", "assistant", "assistant"]


@pytest.mark.parametrize("method", ["prompt", "send", "steer", "follow_up"])
@pytest.mark.parametrize("given", [None, 42, b"bytes", 1.5], ids=["None", "int", "bytes", "float"])
async def test_an_input_that_is_no_prompt_says_what_a_prompt_may_be(
    method: str, given: Any
) -> None:
    fm = FauxModel(["answered"])
    agent = faux_agent(fm)
    with pytest.raises(MessageInputError) as info:
        result = getattr(agent, method)(given)
        if method == "prompt":
            await result
    text = str(info.value)
    assert "a text, a message or a list of them" in text
    assert type(given).__name__ in text
    assert fm.call_count == 0 and not agent.has_queued_messages()
    assert (await agent.prompt("and now?")).text == "answered"


async def test_a_list_holding_no_message_names_the_item() -> None:
    agent = faux_agent(FauxModel(["answered"]))
    with pytest.raises(MessageInputError, match=r"prompt: 1 is not a message"):
        await agent.prompt([UserMessage("fine"), 1])
    with pytest.raises(MessageInputError, match="expected a message with role 'user'"):
        await agent.prompt([{"role": "assistant", "content": "hello..."}])
    assert agent.state.messages == []
