"""The agent-level cases langchain-ai/langgraph (libs/prebuilt/tests/test_react_agent.py),
huggingface/smolagents (tests/test_agents.py) and strands-agents (tools/executors/
test_concurrent.py) check, on our Agent: the model chosen per call, the history trimmed
for the model and kept whole, a person's answer to a held call read by the model, a run
bounded in turns, calls with arguments of the wrong shape, a raising tool and a parameter
named `_`, a parallel batch answered in call order while its ends come as they finish,
and the system prompt: none, a text sent as it is, or one computed for each call.

Where ours differs by choice: a run that reaches `max_turns` ends there (reason
"max_turns", every call answered), where smolagents asks the model once more for a final
answer and langgraph raises `GraphRecursionError` (docs/agent.md, "Queues")."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from yiemagent import (
    Agent,
    AgentContext,
    AgentEndEvent,
    AgentTool,
    AssistantMessage,
    ToolCall,
    ToolResultMessage,
    TurnUpdate,
    UserMessage,
    tool,
)
from yiemagent.ai.providers.faux import FauxModel, faux_message, faux_tool_call
from yiemagent.types import text_of


def faux_agent(fm: FauxModel, **kwargs: Any) -> Agent[Any]:
    return Agent(model=fm.model, stream_fn=fm.stream_fn, **kwargs)


def answered(agent: Agent[Any]) -> list[tuple[str, bool, str]]:
    return [
        (m.tool_call_id, m.is_error, text_of(m.content))
        for m in agent.state.messages
        if isinstance(m, ToolResultMessage)
    ]


def get_weather(location: str) -> str:
    """Use this tool to get the weather."""
    return f"It's sunny in {location}!"


async def test_the_model_may_be_chosen_anew_for_each_call() -> None:
    small = FauxModel(
        [faux_message(faux_tool_call("get_weather", {"location": "sf"}))], model_id="small"
    )
    large = FauxModel(["sunny, says the large model"], model_id="large")

    def bigger_after_tools(turn: Any) -> TurnUpdate | None:
        return TurnUpdate(model=large.model) if turn.tool_results else None

    agent = Agent(model=small.model, tools=[get_weather], prepare_next_turn=bigger_after_tools)
    reply = await agent.prompt("weather in sf?")
    assert (small.call_count, large.call_count) == (1, 1)
    assert reply.text == "sunny, says the large model" and reply.model == "large"
    sent = large.contexts[0].messages
    assert [m.role for m in sent] == ["user", "assistant", "toolResult"]
    assert agent.state.model is not None and agent.state.model.id == "small"  # for this run only


async def test_the_history_trimmed_for_the_model_stays_whole_in_the_transcript() -> None:
    fm = FauxModel(["first", "second", "third"])

    def last_two(messages: list[Any], signal: Any) -> list[Any]:
        return messages[-2:] if len(messages) > 2 else messages

    agent = faux_agent(fm, transform_context=last_two)
    for question in ("one", "two", "three"):
        await agent.prompt(question)
    assert [text_of(m.content) for m in fm.contexts[2].messages] == ["second", "three"]
    assert [text_of(m.content) for m in agent.state.messages] == [
        "one",
        "first",
        "two",
        "second",
        "three",
        "third",
    ]


async def test_a_persons_answer_to_a_held_call_is_what_the_model_reads() -> None:
    ran: list[str] = []

    @tool(requires_approval=True)
    def human_assistance(query: str) -> str:
        """Request assistance from a human."""
        ran.append(query)
        return "never"

    fm = FauxModel(
        [
            faux_message(faux_tool_call("human_assistance", {"query": "may I?"}, id="h1")),
            "understood",
        ]
    )
    agent = faux_agent(fm, tools=[human_assistance])
    await agent.prompt("ask a human")
    agent.reject("h1", reason="No, use the staging server")
    reply = await agent.resume()

    assert ran == [] and reply.text == "understood"
    assert answered(agent) == [
        ("h1", True, "Tool call rejected by the user: No, use the staging server")
    ]
    result = fm.contexts[1].messages[-1]
    assert isinstance(result, ToolResultMessage) and result.tool_call_id == "h1"


async def test_a_run_that_keeps_calling_tools_ends_at_max_turns_every_call_answered() -> None:
    fm = FauxModel(
        [faux_message(faux_tool_call("get_weather", {"location": f"city{i}"})) for i in range(5)]
    )
    ends: list[AgentEndEvent] = []
    agent = faux_agent(fm, tools=[get_weather], max_turns=3)
    agent.subscribe(lambda e: ends.append(e) if isinstance(e, AgentEndEvent) else None)
    reply = await agent.prompt("weather everywhere")

    assert fm.call_count == 3
    assert [e.reason for e in ends] == ["max_turns"]
    assert reply.stop_reason == "toolUse"
    calls = [
        c.id for m in agent.state.messages if isinstance(m, AssistantMessage) for c in m.tool_calls
    ]
    assert [i for i, _, _ in answered(agent)] == calls and len(calls) == 3


@pytest.mark.parametrize(
    ("arguments", "problem"),
    [
        ({}, "root: 'prompt' is a required property"),
        ({"arg": "bar"}, "root: 'prompt' is a required property"),
        ([1, 2, 3], "root: arguments must be a JSON object, got a JSON array"),
        ({"prompt": 7}, "$.prompt: 7 is not of type 'string'"),
    ],
)
async def test_arguments_of_the_wrong_shape_are_answered_and_the_tool_never_runs(
    arguments: Any, problem: str
) -> None:
    ran: list[Any] = []

    def recorded(prompt: str) -> str:
        """Tool that returns same string

        Args:
            prompt: The string to return
        """
        ran.append(prompt)
        return prompt

    fm = FauxModel(
        [faux_message(ToolCall("call_1", "recorded", arguments)), "sorry, wrong arguments"]
    )
    agent = faux_agent(fm, tools=[recorded])
    reply = await agent.prompt("echo")
    ((call_id, is_error, text),) = answered(agent)
    assert ran == [] and call_id == "call_1" and is_error
    assert text.startswith('Invalid arguments for tool "recorded":')
    assert f"- {problem}" in text.splitlines()
    assert reply.text == "sorry, wrong arguments"


async def test_a_raising_tool_with_a_parameter_named_underscore_is_an_error_result() -> None:
    def _sample_tool(_: str) -> float:
        """Tool that fails

        Args:
            _: The pointless string
        """
        return 1 / 0

    fm = FauxModel([faux_message(faux_tool_call("_sample_tool", {"_": "sample"})), "done"])
    agent = faux_agent(fm, tools=[_sample_tool])
    await agent.prompt("go")
    assert fm.contexts[0].tools[0].input_schema["required"] == ["_"]
    assert [(e, t) for _, e, t in answered(agent)] == [(True, "division by zero")]


async def test_a_parallel_batch_ends_as_calls_finish_and_is_answered_in_call_order() -> None:
    second_done = asyncio.Event()

    async def slow_first(call_id: str, args: Any, signal: Any, on_update: Any) -> str:
        await asyncio.wait_for(second_done.wait(), timeout=10)
        return "first"

    async def quick_second(call_id: str, args: Any, signal: Any, on_update: Any) -> str:
        second_done.set()
        return "second"

    schema: dict[str, Any] = {"type": "object", "properties": {}}
    tools = [
        AgentTool("slow_first", "Slow", "waits for the other", schema, slow_first, parallel=True),
        AgentTool("quick_second", "Quick", "answers at once", schema, quick_second, parallel=True),
    ]
    calls = [faux_tool_call("slow_first", id="a"), faux_tool_call("quick_second", id="b")]
    fm = FauxModel([faux_message(*calls), "done"])
    agent = faux_agent(fm, tools=tools)
    ends: list[str] = []
    agent.subscribe(
        lambda e: ends.append(e.tool_call_id) if e.type == "tool_execution_end" else None
    )
    await agent.prompt("both")

    assert ends == ["b", "a"]
    assert answered(agent) == [("a", False, "first"), ("b", False, "second")]
    sent = [m for m in fm.contexts[1].messages if isinstance(m, ToolResultMessage)]
    assert [m.tool_call_id for m in sent] == ["a", "b"]


async def test_several_calls_are_each_observed_in_order_in_one_turn() -> None:
    def process(input: str) -> str:
        """Processes the input."""
        return f"Processed: {input}"

    calls = [faux_tool_call("process", {"input": v}, id=f"call_{v}") for v in ("value1", "value2")]
    fm = FauxModel([faux_message(*calls), "done"])
    agent = faux_agent(fm, tools=[process])
    turns: list[list[str]] = []
    agent.subscribe(
        lambda e: (
            turns.append([text_of(r.content) for r in e.tool_results])
            if e.type == "turn_end"
            else None
        )
    )
    await agent.prompt("process both")
    assert turns == [["Processed: value1", "Processed: value2"], []]
    assert isinstance(agent.state.messages[0], UserMessage)


async def test_no_system_prompt_sends_none_and_a_text_one_is_sent_as_it_is() -> None:
    bare = FauxModel(["hi"])
    await Agent(None, bare.model, stream_fn=bare.stream_fn).prompt("hello")
    assert bare.contexts[0].system_prompt == ""

    told = FauxModel(["hi"])
    prompt = "Foo { not a template } {{ nor this }}"
    await Agent(prompt, told.model, stream_fn=told.stream_fn).prompt("hello")
    assert told.contexts[0].system_prompt == prompt


async def test_a_system_prompt_computed_for_each_call_from_what_the_model_will_see() -> None:
    def counted(state: Any) -> AgentContext:
        turns = sum(1 for m in state.messages if isinstance(m, UserMessage))
        return AgentContext(f"Prompt number {turns}", state.messages, state.tools)

    fm = FauxModel(["one", "two"])
    agent = faux_agent(fm, prepare_context=counted)
    await agent.prompt("first")
    await agent.prompt("second")
    assert [c.system_prompt for c in fm.contexts] == ["Prompt number 1", "Prompt number 2"]
    assert agent.state.system_prompt == "You are a helpful assistant."  # the agent's own stays
