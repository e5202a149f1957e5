"""Agent runs as semantic-kernel, swarm, DSPy's ReAct and mastra's Agent check theirs, on
the faux provider, with tools writing real files where a tool has an effect to see.

semantic-kernel (python/tests/unit/kernel/test_kernel.py, the auto function invocation
filter): malformed arguments answered so the model tries again, a function that is not
offered, a missing argument, a filter that ends the loop or rewrites a result. swarm
(tests/test_core.py): a plain reply, a tool called once with its arguments, a handoff, a
run that does not execute the tools it was asked for. DSPy (tests/predict/test_react.py):
a tool that keeps failing under an iteration bound, and what the model reads of its
error. mastra (packages/core/src/agent/__tests__): a "tool calls" finish without a call,
a guardrail's own error, and the conversation a session keeps. The choices where ours
differs are in docs/agent.md ("Runs, as peers check them")."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from yiemagent import (
    AfterToolCallContext,
    AfterToolCallResult,
    Agent,
    AgentEndEvent,
    AgentEvent,
    AgentTool,
    AssistantMessage,
    BeforeToolCallContext,
    BeforeToolCallResult,
    GuardrailContext,
    GuardrailTripped,
    SqliteSessionStore,
    TextContent,
    ToolExecutionEndEvent,
    ToolResultMessage,
    UserMessage,
)
from yiemagent.ai.providers.faux import (
    FauxModel,
    faux_malformed_tool_call,
    faux_message,
    faux_tool_call,
)
from yiemagent.types import text_of

WEATHER_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"location": {"type": "string"}},
    "required": ["location"],
}


def weather_tool(calls: list[dict[str, Any]]) -> AgentTool:
    def execute(call_id: str, args: dict[str, Any], signal: Any, on_update: Any) -> str:
        calls.append(dict(args))
        return "It's sunny today."

    return AgentTool("get_weather", "weather", "The weather.", WEATHER_SCHEMA, execute)


def note_tool(folder: Path) -> AgentTool:
    """Appends `text` to folder/notes.txt; answers how many notes there are."""

    def execute(call_id: str, args: dict[str, Any], signal: Any, on_update: Any) -> str:
        with (folder / "notes.txt").open("a", encoding="utf-8") as notes:
            notes.write(args["text"] + "\n")
        count = len((folder / "notes.txt").read_text(encoding="utf-8").splitlines())
        return f"{count} notes"

    schema = {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]}
    return AgentTool("note", "note", "Write a note.", schema, execute, parallel=True)


def results(agent: Agent[Any]) -> list[tuple[str, bool, str]]:
    return [
        (m.tool_name, m.is_error, text_of(m.content))
        for m in agent.state.messages
        if isinstance(m, ToolResultMessage)
    ]


def end_reasons(events: list[AgentEvent]) -> list[str]:
    return [e.reason for e in events if isinstance(e, AgentEndEvent)]


def faux_agent(fm: FauxModel, **kwargs: Any) -> tuple[Agent[Any], list[AgentEvent]]:
    agent: Agent[Any] = Agent(model=fm.model, stream_fn=fm.stream_fn, **kwargs)
    events: list[AgentEvent] = []
    agent.subscribe(lambda e, s: events.append(e))
    return agent, events


# ── semantic-kernel ─────────────────────────────────────────────────────────


async def test_malformed_arguments_are_answered_and_the_model_tries_again() -> None:
    # test_invoke_function_call_with_continuation_on_malformed_arguments
    calls: list[dict[str, Any]] = []
    fm = FauxModel(
        [
            faux_malformed_tool_call("get_weather", '{"location": "Oslo",', id="test_id"),
            faux_message(faux_tool_call("get_weather", {"location": "Oslo"})),
            "Sunny in Oslo.",
        ]
    )
    agent, events = faux_agent(fm, tools=[weather_tool(calls)])

    reply = await agent.prompt("weather in Oslo?")

    assert calls == [{"location": "Oslo"}]  # never run on the fragment
    [first, second] = results(agent)
    assert first[1] and "arguments are not valid JSON" in first[2]
    assert 'Received: "{\\"location\\": \\"Oslo\\","' in first[2]
    assert second == ("get_weather", False, "It's sunny today.")
    [answer] = [m for m in fm.contexts[1].messages if isinstance(m, ToolResultMessage)]
    assert answer.tool_call_id == "test_id" and answer.tool_name == "get_weather"
    assert text_of(reply.content) == "Sunny in Oslo." and end_reasons(events) == ["stop"]


async def test_a_function_not_offered_is_answered_with_the_ones_that_are() -> None:
    # test_invoke_function_call_non_allowed_func_throws: the model calls outside the list
    calls: list[dict[str, Any]] = []
    fm = FauxModel([faux_message(faux_tool_call("delete_everything", {})), "sorry"])
    agent, events = faux_agent(fm, tools=[weather_tool(calls)])

    await agent.prompt("go")

    assert results(agent) == [
        (
            "delete_everything",
            True,
            'Tool "delete_everything" not found. Available tools: get_weather',
        )
    ]
    assert fm.call_count == 2 and end_reasons(events) == ["stop"] and calls == []


async def test_a_missing_required_argument_is_named_and_the_function_does_not_run() -> None:
    # test_invoke_function_call_not_enough_parsed_args
    calls: list[dict[str, Any]] = []
    fm = FauxModel([faux_message(faux_tool_call("get_weather", {})), "ok"])
    agent, _ = faux_agent(fm, tools=[weather_tool(calls)])

    await agent.prompt("go")

    [(_, is_error, text)] = results(agent)
    assert is_error and "'location' is a required property" in text and calls == []


async def test_a_filter_that_terminates_ends_the_loop_with_the_function_result(
    tmp_path: Path,
) -> None:
    # the auto function invocation filter's context.terminate = True, after next(context)
    def stop_on_three(ctx: AfterToolCallContext, signal: Any) -> AfterToolCallResult | None:
        if text_of(ctx.result.content) == "3 notes":
            return AfterToolCallResult(terminate=True)
        return None

    fm = FauxModel(
        [faux_message(faux_tool_call("note", {"text": str(i)})) for i in range(5)] + ["never"]
    )
    agent, events = faux_agent(fm, tools=[note_tool(tmp_path)], after_tool_call=stop_on_three)

    reply = await agent.prompt("take notes")

    assert (tmp_path / "notes.txt").read_text(encoding="utf-8") == "0\n1\n2\n"
    assert fm.call_count == 3  # no model call after the terminating result
    assert end_reasons(events) == ["terminate"]
    assert reply.stop_reason == "tool_use_terminated"
    assert text_of(reply.content) == "Tool execution completed.\n3 notes"
    assert results(agent)[-1] == ("note", False, "3 notes")  # kept for the next prompt


async def test_one_terminating_call_in_a_batch_does_not_end_the_loop(tmp_path: Path) -> None:
    # semantic-kernel ends the loop when any call of a batch sets terminate; ours only when
    # every call does (R-4.10, docs/agent.md): the model still reads the other results.
    def stop_on_first(ctx: AfterToolCallContext, signal: Any) -> AfterToolCallResult | None:
        return AfterToolCallResult(terminate=True) if ctx.args["text"] == "a" else None

    fm = FauxModel(
        [
            faux_message(
                faux_tool_call("note", {"text": "a"}), faux_tool_call("note", {"text": "b"})
            ),
            "two notes taken",
        ]
    )
    agent, events = faux_agent(fm, tools=[note_tool(tmp_path)], after_tool_call=stop_on_first)

    reply = await agent.prompt("take notes")

    assert sorted((tmp_path / "notes.txt").read_text(encoding="utf-8").split()) == ["a", "b"]
    assert text_of(reply.content) == "two notes taken" and end_reasons(events) == ["stop"]


async def test_a_filter_rewrites_the_result_the_model_reads() -> None:
    # the AutoFunctionInvocationFiltering sample: context.function_result = overridden
    calls: list[dict[str, Any]] = []

    def override(ctx: AfterToolCallContext, signal: Any) -> AfterToolCallResult:
        return AfterToolCallResult(content=[TextContent("Result from auto function filter")])

    fm = FauxModel([faux_message(faux_tool_call("get_weather", {"location": "x"})), "ok"])
    agent, _ = faux_agent(fm, tools=[weather_tool(calls)], after_tool_call=override)

    await agent.prompt("go")

    assert calls == [{"location": "x"}]  # the function ran
    assert results(agent) == [("get_weather", False, "Result from auto function filter")]
    [sent] = [m for m in fm.contexts[1].messages if isinstance(m, ToolResultMessage)]
    assert text_of(sent.content) == "Result from auto function filter"


async def test_a_filter_that_skips_the_function_answers_with_an_error() -> None:
    # semantic-kernel's filter may answer without calling next(); ours blocks the call, and
    # the model reads the reason as an error result, never as the tool's answer (docs/agent.md)
    calls: list[dict[str, Any]] = []

    def skip(ctx: BeforeToolCallContext, signal: Any) -> BeforeToolCallResult:
        return BeforeToolCallResult(block=True, reason="weather lookups are paused")

    fm = FauxModel([faux_message(faux_tool_call("get_weather", {"location": "x"})), "ok"])
    agent, _ = faux_agent(fm, tools=[weather_tool(calls)], before_tool_call=skip)

    await agent.prompt("go")

    assert calls == []
    assert results(agent) == [("get_weather", True, "weather lookups are paused")]


async def test_a_default_fills_an_argument_the_model_left_out() -> None:
    # test_kernel_function_from_method: a parameter's default when the arguments lack it
    from yiemagent import tool

    seen: list[tuple[str, str]] = []

    @tool
    def forecast(city: str, unit: str = "celsius") -> str:
        """The forecast.

        Args:
            city: where
            unit: celsius or fahrenheit
        """
        seen.append((city, unit))
        return f"20 {unit}"

    fm = FauxModel([faux_message(faux_tool_call("forecast", {"city": "Oslo"})), "ok"])
    agent, _ = faux_agent(fm, tools=[forecast])

    await agent.prompt("go")

    assert seen == [("Oslo", "celsius")]
    assert results(agent) == [("forecast", False, "20 celsius")]


async def test_a_call_without_a_name_is_answered_as_an_unknown_tool() -> None:
    # test_invoke_function_call_no_name_throws: the call is answered, the run goes on
    calls: list[dict[str, Any]] = []
    fm = FauxModel([faux_message(faux_tool_call("", {"location": "x"})), "ok"])
    agent, events = faux_agent(fm, tools=[weather_tool(calls)])

    await agent.prompt("go")

    assert results(agent) == [("", True, 'Tool "" not found. Available tools: get_weather')]
    assert calls == [] and end_reasons(events) == ["stop"]


# ── swarm ───────────────────────────────────────────────────────────────────


async def test_a_result_that_is_no_text_is_answered_as_an_error_and_the_run_goes_on() -> None:
    # swarm's handle_function_result raises TypeError("Failed to cast response to string")
    # and the run ends; here the call gets an error result naming the problem
    from yiemagent import tool

    class Unprintable:
        def __str__(self) -> str:
            raise ValueError("no text")

    @tool
    def lookup() -> object:
        """Looks something up."""
        return Unprintable()

    def raw(call_id: str, args: Any, signal: Any, on_update: Any) -> Any:
        return 42

    fm = FauxModel([faux_message(faux_tool_call("lookup", {}), faux_tool_call("raw", {})), "ok"])
    agent, events = faux_agent(
        fm, tools=[lookup, AgentTool("raw", "raw", "Raw.", {"type": "object"}, raw)]
    )

    reply = await agent.prompt("go")

    assert results(agent) == [
        ("lookup", True, "Error serializing to JSON: ValueError: no text"),
        ("raw", True, "Tool raw returned int; expected an AgentToolResult or a str"),
    ]
    assert reply.text == "ok" and end_reasons(events) == ["stop"]


async def test_a_plain_reply_is_the_last_message() -> None:
    # test_run_with_simple_message
    fm = FauxModel(["sample response content"])
    agent, _ = faux_agent(fm)

    reply = await agent.prompt("Hello, how are you?")

    assert isinstance(agent.state.messages[-1], AssistantMessage)
    assert agent.state.messages[-1] is reply
    assert text_of(reply.content) == "sample response content"
    assert [type(m) for m in agent.state.messages] == [UserMessage, AssistantMessage]


async def test_a_tool_is_called_once_with_the_arguments_the_model_wrote() -> None:
    # test_tool_call
    calls: list[dict[str, Any]] = []
    fm = FauxModel(
        [
            faux_message("", faux_tool_call("get_weather", {"location": "San Francisco"})),
            "sample response content",
        ]
    )
    agent, _ = faux_agent(fm, tools=[weather_tool(calls)])

    reply = await agent.prompt("What's the weather like in San Francisco?")

    assert calls == [{"location": "San Francisco"}]
    assert text_of(reply.content) == "sample response content"


async def test_calls_held_for_approval_are_not_executed_and_name_their_arguments() -> None:
    # test_execute_tools_false: the run stops with the call unrun, its arguments readable
    calls: list[dict[str, Any]] = []
    held = weather_tool(calls)
    held.requires_approval = True
    fm = FauxModel(
        [faux_message(faux_tool_call("get_weather", {"location": "San Francisco"})), "sunny"]
    )
    agent, events = faux_agent(fm, tools=[held])

    await agent.prompt("What's the weather like in San Francisco?")

    assert calls == [] and fm.call_count == 1
    assert end_reasons(events) == ["awaiting_approval"]
    [pending] = agent.pending_approvals
    assert (pending.tool_name, pending.arguments) == ("get_weather", {"location": "San Francisco"})
    last = agent.state.messages[-1]
    assert isinstance(last, AssistantMessage)
    [call] = [b for b in last.content if not isinstance(b, TextContent)]
    assert call.name == "get_weather"  # type: ignore[union-attr]

    agent.approve(pending.tool_call_id)
    await agent.resume()
    assert calls == [{"location": "San Francisco"}]
    assert text_of(agent.state.messages[-1].content) == "sunny"  # type: ignore[union-attr]


async def test_a_handoff_leaves_the_next_reply_to_the_other_agent() -> None:
    # test_handoff: response.agent == agent2 and the last reply is agent2's
    fm = FauxModel([faux_message(faux_tool_call("transfer_to_agent2", {})), "agent 2 here"])
    agent2: Agent[Any] = Agent(
        "You are agent 2.", model=fm.model, stream_fn=fm.stream_fn, name="agent2"
    )
    agent1, events = faux_agent(fm, name="agent1", handoffs=[agent2])

    reply = await agent1.prompt("I want to talk to agent 2")

    assert agent1.state.active_agent == "agent2"
    assert reply.agent == "agent2" and text_of(reply.content) == "agent 2 here"
    assert fm.contexts[1].system_prompt == "You are agent 2."
    assert end_reasons(events) == ["stop"]


# ── DSPy ReAct ──────────────────────────────────────────────────────────────


async def test_a_failing_tool_under_an_iteration_bound() -> None:
    # test_error_retry: max_iters=2, the tool fails both times, each observation says why
    def foo(call_id: str, args: Any, signal: Any, on_update: Any) -> str:
        raise Exception("tool error")

    tool = AgentTool("foo", "foo", "Add two numbers.", {"type": "object"}, foo)
    fm = FauxModel(
        [
            faux_message(faux_tool_call("foo", {"a": 1, "b": 2})),
            faux_message(faux_tool_call("foo", {"a": 1, "b": 2})),
            "3",
        ]
    )
    agent, events = faux_agent(fm, tools=[tool], max_turns=2)

    await agent.prompt("a=1, b=2")

    assert fm.call_count == 2  # the third response is never asked for
    assert results(agent) == [("foo", True, "tool error"), ("foo", True, "tool error")]
    assert end_reasons(events) == ["max_turns"]


async def test_the_model_reads_the_error_not_a_traceback() -> None:
    # test_tool_error_observation_format: DSPy sends "Execution error in failing_tool:" and
    # the traceback; ours sends the exception's text (docs/tools.md, "When a call fails")
    def failing_tool(call_id: str, args: Any, signal: Any, on_update: Any) -> str:
        raise ValueError("tool blew up")

    tool = AgentTool("failing_tool", "f", "Fails.", {"type": "object"}, failing_tool)
    fm = FauxModel([faux_message(faux_tool_call("failing_tool", {})), "n/a"])
    agent, _ = faux_agent(fm, tools=[tool])

    await agent.prompt("What happens?")

    [sent] = [m for m in fm.contexts[1].messages if isinstance(m, ToolResultMessage)]
    assert sent.is_error and text_of(sent.content) == "tool blew up"
    assert "Traceback" not in json.dumps([text_of(sent.content)])


# ── mastra ──────────────────────────────────────────────────────────────────


async def test_a_tool_calls_finish_without_a_call_ends_the_run() -> None:
    # empty-tool-calls-loop.test.ts (stream): finishReason "tool-calls" with no call
    calls: list[dict[str, Any]] = []
    fm = FauxModel([faux_message(stop_reason="toolUse")] * 5 + ["again"])
    agent, events = faux_agent(fm, tools=[weather_tool(calls)], max_turns=5)

    await agent.prompt("Hello")

    assert fm.call_count == 1 and calls == []
    assert end_reasons(events) == ["stop"]


async def test_a_tool_calls_finish_without_a_call_ends_an_llm_call_run() -> None:
    # empty-tool-calls-loop.test.ts (generate): the same through a non-streaming model call
    calls: list[dict[str, Any]] = []
    asked: list[dict[str, Any]] = []

    def llm_call(formatted: dict[str, Any]) -> dict[str, Any]:
        asked.append(formatted)
        message = {"role": "assistant", "content": "", "tool_calls": []}
        return {"choices": [{"message": message, "finish_reason": "tool_calls"}]}

    agent: Agent[Any] = Agent(llm_call=llm_call, tools=[weather_tool(calls)], max_turns=5)
    events: list[AgentEvent] = []
    agent.subscribe(lambda e, s: events.append(e))

    await agent.prompt("Hello")

    assert len(asked) == 1 and calls == []
    assert end_reasons(events) == ["stop"]


async def test_a_guardrail_that_raises_ends_the_run_with_its_error() -> None:
    # fatal-error.test.ts: an input processor's abort.fatal(err) rejects generate() with err;
    # ours raises GuardrailTripped naming the guardrail and the error (docs/agent.md)
    class QuotaExceededError(Exception):
        pass

    def check_budget(ctx: GuardrailContext) -> None:
        raise QuotaExceededError("over quota")

    fm = FauxModel(["ok", "ok"])
    agent, events = faux_agent(fm, input_guardrails=[check_budget])

    with pytest.raises(GuardrailTripped) as tripped:
        await agent.prompt("hello")
    assert str(tripped.value) == (
        "input guardrail 'check_budget' tripped: QuotaExceededError: over quota"
    )
    assert tripped.value.guardrail == "check_budget"
    assert end_reasons(events) == ["guardrail"]
    with pytest.raises(GuardrailTripped):  # and again, the agent still usable
        await agent.prompt("hello")


async def test_a_session_keeps_the_tool_calls_and_results_for_the_next_agent(
    tmp_path: Path,
) -> None:
    # memory: a thread's messages, tool results included, are there for the next generate()
    store = SqliteSessionStore(tmp_path / "memory.db")
    fm = FauxModel([faux_message(faux_tool_call("note", {"text": "milk"})), "noted"])
    first, _ = faux_agent(fm, tools=[note_tool(tmp_path)], session_store=store, session_id="t1")
    await first.prompt("remember milk")
    store.close()

    store = SqliteSessionStore(tmp_path / "memory.db")
    fm2 = FauxModel(["you asked me to remember milk"])
    second, _ = faux_agent(fm2, tools=[note_tool(tmp_path)], session_store=store, session_id="t1")
    await second.prompt("what did I ask?")
    other, _ = faux_agent(FauxModel(["?"]), session_store=store, session_id="t2")
    await other.prompt("hi")
    store.close()

    sent = fm2.contexts[0].messages
    assert [m.role for m in sent] == ["user", "assistant", "toolResult", "assistant", "user"]
    assert text_of(sent[2].content) == "1 notes"
    assert [m.role for m in other.state.messages] == ["user", "assistant"]  # threads apart


async def test_parallel_results_reach_the_model_in_call_order(tmp_path: Path) -> None:
    # the stream's tool-result chunks in completion order, the prompt's in call order
    second_done = asyncio.Event()

    async def slow_first(call_id: str, args: Any, signal: Any, on_update: Any) -> str:
        if args["text"] == "first":
            await asyncio.wait_for(second_done.wait(), timeout=30)
        else:
            second_done.set()
        return str(args["text"])

    schema = {"type": "object", "properties": {"text": {"type": "string"}}}
    tool = AgentTool("echo", "echo", "Echo.", schema, slow_first, parallel=True)
    fm = FauxModel(
        [
            faux_message(
                faux_tool_call("echo", {"text": "first"}, id="c1"),
                faux_tool_call("echo", {"text": "second"}, id="c2"),
            ),
            "ok",
        ]
    )
    agent, events = faux_agent(fm, tools=[tool])

    await agent.prompt("go")

    ended = [e.tool_call_id for e in events if isinstance(e, ToolExecutionEndEvent)]
    assert ended == ["c2", "c1"]
    sent = [m.tool_call_id for m in fm.contexts[1].messages if isinstance(m, ToolResultMessage)]
    assert sent == ["c1", "c2"]
