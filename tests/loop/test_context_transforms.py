"""`transform_context` as pydantic-ai's history processors (tests/test_history_processor.py)
check theirs, through an `Agent`: what it is given, what the model then sees, and what the
transcript keeps.

Where yiemagent differs by choice (docs/agent.md, "What `transform_context` changes"): the
transform shapes what the model is sent, never the transcript, so a message it drops or
adds is gone or present for that model call only (pydantic-ai stores the processed
history as the run's); and a processed history ending with an assistant message is sent
as it is (a prefill some APIs take; pydantic-ai refuses it). A transform that leaves the
model nothing to read ends the run in error, as pydantic-ai refuses an empty processed
history."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from hypothesis import given, settings, strategies as st

from yiemagent import (
    Agent,
    AgentRunError,
    AgentTool,
    AgentToolResult,
    AssistantMessage,
    ToolResultMessage,
    UserMessage,
)
from yiemagent.ai.providers.faux import FauxModel, faux_message, faux_text, faux_tool_call
from yiemagent.types import text_of


def texts(messages: list[Any]) -> list[str]:
    """Each message as "role:text" (a tool result's text after its role)."""
    return [f"{m.role}:{text_of(m.content)}" for m in messages]


def faux_agent(fm: FauxModel, **kwargs: Any) -> Agent:
    return Agent(model=fm.model, stream_fn=fm.stream_fn, **kwargs)


def history() -> list[Any]:
    return [
        UserMessage("Question 1"),
        faux_message(faux_text("Answer 1")),
        UserMessage("Question 2"),
        faux_message(faux_text("Answer 2")),
    ]


async def test_it_is_given_the_whole_transcript_with_the_new_prompt_last() -> None:
    # test_history_processor_no_op
    given: list[list[str]] = []

    def transform(messages: list[Any], signal: Any) -> list[Any]:
        given.append(texts(messages))
        return messages

    fm = FauxModel(["Answer 3"])
    agent = faux_agent(fm, messages=history(), transform_context=transform)
    await agent.prompt("Question 3")

    expected = [*texts(history()), "user:Question 3"]
    assert given == [expected]
    assert texts(fm.contexts[0].messages) == expected


async def test_what_it_returns_is_sent_and_the_transcript_stays_whole() -> None:
    # test_history_processor_run_replaces_message_history / _messages_sent_to_provider:
    # pydantic-ai stores the processed history; yiemagent only sends it
    fm = FauxModel(["Answer 3"])
    agent = faux_agent(fm, messages=history(), transform_context=lambda m, s: m[-1:])
    await agent.prompt("Question 3")

    assert texts(fm.contexts[0].messages) == ["user:Question 3"]
    assert texts(agent.state.messages) == [
        *texts(history()),
        "user:Question 3",
        "assistant:Answer 3",
    ]


async def test_a_message_it_adds_is_sent_for_that_call_and_never_stored() -> None:
    # test_history_processor_injects_into_new_stream
    def inject(messages: list[Any], signal: Any) -> list[Any]:
        return [*messages[:-1], UserMessage("Inserted"), messages[-1]]

    fm = FauxModel(["one", "two"])
    agent = faux_agent(fm, messages=[UserMessage("Old")], transform_context=inject)
    agent.state.messages = [UserMessage("Old"), faux_message(faux_text("old answer"))]
    await agent.prompt("New question")
    await agent.prompt("Another")

    assert texts(fm.contexts[0].messages) == [
        "user:Old",
        "assistant:old answer",
        "user:Inserted",
        "user:New question",
    ]
    # the second call sees one "Inserted", not the first call's as well
    assert texts(fm.contexts[1].messages).count("user:Inserted") == 1
    assert "user:Inserted" not in texts(agent.state.messages)


async def test_it_runs_before_every_model_call_of_a_run_also_after_tool_results() -> None:
    # test_history_processor_on_streamed_run and the tool loops of the resumed-run cases
    seen: list[int] = []

    def count(messages: list[Any], signal: Any) -> list[Any]:
        seen.append(len(messages))
        return messages

    def execute(call_id: str, args: Any, signal: Any, on_update: Any) -> AgentToolResult:
        return AgentToolResult(content="42")

    lookup = AgentTool("lookup", "lookup", "looks up", {"type": "object"}, execute)
    fm = FauxModel([faux_message(faux_tool_call("lookup", {})), "It is 42."])
    agent = faux_agent(fm, tools=[lookup], transform_context=count)
    await agent.prompt("what is it?")

    assert seen == [1, 3]  # the prompt; then it, the call and its result
    assert isinstance(fm.contexts[1].messages[-1], ToolResultMessage)


class KeepLast:
    """A callable class, as pydantic-ai's test_callable_class_history_processor_*."""

    async def __call__(self, messages: list[Any], signal: Any) -> list[Any]:
        return messages[-1:]


async def _keep_last_async(messages: list[Any]) -> list[Any]:
    return messages[-1:]


def _returns_a_coroutine(messages: list[Any], signal: Any) -> Any:
    return _keep_last_async(messages)


@pytest.mark.parametrize(
    "transform",
    [
        pytest.param(_keep_last_async, id="async-def-without-the-signal"),
        pytest.param(_returns_a_coroutine, id="plain-function-returning-a-coroutine"),
        pytest.param(KeepLast(), id="callable-class-with-async-call"),
        pytest.param(lambda messages: messages[-1:], id="lambda-of-the-messages-alone"),
        pytest.param(lambda messages, signal: tuple(messages[-1:]), id="returns-a-tuple"),
    ],
)
async def test_each_shape_of_transform_is_awaited_and_its_list_sent(transform: Any) -> None:
    # test_async_history_processor, test_sync_history_processor_returning_coroutine,
    # test_callable_class_history_processor_no_op, test_history_processor_mixed_signatures
    fm = FauxModel(["Answer 3"])
    agent = faux_agent(fm, messages=history(), transform_context=transform)
    await agent.prompt("Question 3")

    assert texts(fm.contexts[0].messages) == ["user:Question 3"]


async def test_resume_without_a_prompt_is_transformed_too() -> None:
    # test_history_processor_resuming_without_prompt
    fm = FauxModel(["Answer"])
    agent = faux_agent(
        fm,
        messages=[UserMessage("Old"), faux_message(faux_text("old")), UserMessage("Latest")],
        transform_context=lambda m, s: m[-1:],
    )
    await agent.resume()

    assert texts(fm.contexts[0].messages) == ["user:Latest"]
    assert texts(agent.state.messages)[-1] == "assistant:Answer"


async def test_a_history_ending_with_an_assistant_message_is_sent_as_it_is() -> None:
    # test_history_processor_history_ending_in_response: pydantic-ai refuses it; here it
    # goes to the provider, which may take it as a prefill or refuse it itself
    prefill = faux_message(faux_text("The answer is"))
    fm = FauxModel([" 42."])
    agent = faux_agent(fm, transform_context=lambda m, s: [*m, prefill])
    await agent.prompt("Complete it")

    assert texts(fm.contexts[0].messages) == ["user:Complete it", "assistant:The answer is"]
    assert isinstance(agent.state.messages[-1], AssistantMessage)


@pytest.mark.parametrize("returned", [[], ()])
async def test_a_transform_that_leaves_no_message_ends_the_run_in_error(returned: Any) -> None:
    # test_history_processor_empty_history: the model is never called with nothing to read
    calls: list[int] = []

    def drop_all_once(messages: list[Any], signal: Any) -> Any:
        calls.append(len(messages))
        return returned if len(calls) == 1 else messages

    fm = FauxModel(["the answer"])
    agent = faux_agent(fm, messages=history(), transform_context=drop_all_once)

    with pytest.raises(AgentRunError) as info:
        await agent.prompt("Question 3")

    assert fm.call_count == 0
    assert "transform_context returned no messages (it was given 5)" in str(info.value)
    # nothing lost: the prompt is in the transcript, and the agent takes the next one
    assert "user:Question 3" in texts(agent.state.messages)
    assert text_of((await agent.prompt("again")).content) == "the answer"


async def test_a_custom_convert_to_llm_that_leaves_no_message_ends_the_run_in_error() -> None:
    fm = FauxModel(["never sent"])
    agent = faux_agent(fm, convert_to_llm=lambda messages: [])

    with pytest.raises(AgentRunError, match="convert_to_llm returned no messages"):
        await agent.prompt("hello")
    assert fm.call_count == 0


@settings(max_examples=40, deadline=None)
@given(st.data())
def test_any_transform_changes_what_is_sent_never_the_transcript(data: st.DataObject) -> None:
    # the transcript after a run with a tool call is the same whatever the transform
    # dropped, repeated or reordered; each call sent exactly what the transform returned
    picks: list[list[int]] = []

    def transform(messages: list[Any], signal: Any) -> list[Any]:
        chosen = data.draw(
            st.lists(st.integers(0, len(messages) - 1), min_size=1, max_size=6), "indices"
        )
        picks.append(chosen)
        return [messages[i] for i in chosen]

    def execute(call_id: str, args: Any, signal: Any, on_update: Any) -> AgentToolResult:
        return AgentToolResult(content="42")

    async def run(with_transform: bool) -> tuple[list[str], FauxModel]:
        fm = FauxModel([faux_message(faux_tool_call("lookup", {}, id="c1")), "It is 42."])
        agent = faux_agent(
            fm,
            messages=history(),
            tools=[AgentTool("lookup", "lookup", "looks up", {"type": "object"}, execute)],
            transform_context=transform if with_transform else None,
        )
        await agent.prompt("Question 3")
        return texts(agent.state.messages), fm

    plain, _ = asyncio.run(run(False))
    transformed, fm = asyncio.run(run(True))

    assert transformed == plain
    assert len(fm.contexts) == len(picks) == 2
    full = [*history(), UserMessage("Question 3")]
    assert texts(fm.contexts[0].messages) == [texts(full)[i] for i in picks[0]]
