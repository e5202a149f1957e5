"""Cases from openai-agents' and pydantic-ai's newest fixes, on the faux provider:
a hook object that is falsy is still the hook (openai-agents #4153 and #4305: `if hook:`
took a falsy per-handoff input filter, client or policy for none), the model's values stay
out of logs (#4182, #4396: tool arguments and output values were written into log lines
and errors), a handoff keeps a turn that had no content (#4230), an answer of empty text
parts is no output (pydantic-ai #7568), and a run started from a plain tool
(pydantic-ai #7277 refuses `run_sync` there).

Where ours differs it is by choice: a plain tool may run another agent with
`prompt_sync` (it runs on a worker thread, with no event loop of its own; pydantic-ai
refuses it), while its own agent answers it busy, as any prompt during a run."""

from __future__ import annotations

import logging
import math
from typing import Any

import pytest
from pydantic import BaseModel

from yiemagent import (
    Agent,
    AgentContext,
    AgentLoopConfig,
    AgentTool,
    AgentToolResult,
    AssistantMessage,
    BeforeToolCallResult,
    ConfigError,
    Handoff,
    TextContent,
    ToolResultMessage,
    UserMessage,
    agent_loop,
    tool,
)
from yiemagent.ai.providers.faux import FauxModel, faux_message, faux_tool_call
from yiemagent.types import text_of

SCHEMA: dict[str, Any] = {"type": "object", "properties": {}}
SECRET = "SECRET_TOOL_ARGUMENT_123"


class Falsy:
    """A callable whose truth value is False, as an object with `__len__` of 0 is."""

    def __init__(self, function: Any) -> None:
        self.function, self.calls = function, 0

    def __len__(self) -> int:
        return 0

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        self.calls += 1
        return self.function(*args, **kwargs)


async def test_a_falsy_stream_fn_is_the_one_called() -> None:
    # the model's own provider would answer "from the model"; the given function answers
    default = FauxModel(["from the model"] * 2)
    given = FauxModel(["from the given stream_fn"] * 2)
    stream_fn = Falsy(given.stream_fn)
    agent = Agent(model=default.model, stream_fn=stream_fn)
    assert (await agent.prompt("go")).text == "from the given stream_fn"
    config = AgentLoopConfig(model=default.model)
    stream = agent_loop([UserMessage("hi")], AgentContext("", [], []), config, stream_fn=stream_fn)
    new = await stream.result()
    assert isinstance(new[-1], AssistantMessage) and new[-1].text == "from the given stream_fn"
    assert stream_fn.calls == 2 and default.call_count == 0


async def test_falsy_hooks_are_called() -> None:
    ran: list[str] = []

    def execute(call_id: str, args: Any, signal: Any, on_update: Any) -> str:
        ran.append(call_id)
        return "ran"

    before = Falsy(lambda ctx, signal: BeforeToolCallResult(block=True, reason="not now"))
    after = Falsy(lambda ctx, signal: None)
    transform = Falsy(lambda messages, signal: messages)
    stop = Falsy(lambda turn: bool(turn.tool_results))
    fm = FauxModel([faux_message(faux_tool_call("t", {})), "never asked"])
    agent = Agent(
        model=fm.model,
        stream_fn=fm.stream_fn,
        tools=[AgentTool("t", "t", "t", SCHEMA, execute)],
        before_tool_call=before,
        after_tool_call=after,
        transform_context=transform,
        should_stop_after_turn=stop,
    )
    await agent.prompt("go")
    assert (before.calls, transform.calls, stop.calls) == (1, 1, 1)
    assert after.calls == 0  # a blocked call is not finalized
    assert ran == [] and fm.call_count == 1
    [result] = [m for m in agent.state.messages if isinstance(m, ToolResultMessage)]
    assert text_of(result.content) == "not now"


async def test_a_falsy_handoff_input_filter_is_applied() -> None:
    # test_falsey_per_handoff_input_filter_takes_precedence
    fm = FauxModel([faux_message(faux_tool_call("transfer_to_delegate", {})), "done"])
    delegate = Agent(name="delegate", model=fm.model, stream_fn=fm.stream_fn)
    only_the_request = Falsy(lambda messages: [m for m in messages if isinstance(m, UserMessage)])
    history = [UserMessage("earlier"), AssistantMessage([TextContent("earlier answer")])]
    triage = Agent(
        name="triage",
        model=fm.model,
        stream_fn=fm.stream_fn,
        messages=history,
        handoffs=[Handoff(delegate, input_filter=only_the_request)],
    )
    assert (await triage.prompt("user_message")).text == "done"
    assert only_the_request.calls == 1
    assert [type(m) for m in fm.contexts[1].messages] == [UserMessage, UserMessage]


async def test_a_handoff_keeps_turns_that_had_no_content() -> None:
    # test_nested_history_keeps_turns_with_no_content: no turn is dropped on the way
    fm = FauxModel([faux_message(faux_tool_call("transfer_to_delegate", {})), "done"])
    delegate = Agent(name="delegate", model=fm.model, stream_fn=fm.stream_fn)
    history = [UserMessage("first question"), AssistantMessage([TextContent("")]), UserMessage("")]
    triage = Agent(
        name="triage", model=fm.model, stream_fn=fm.stream_fn, handoffs=[delegate], messages=history
    )
    await triage.prompt("second question")
    read = fm.contexts[1].messages
    assert [type(m).__name__ for m in read[:4]] == [
        "UserMessage",
        "AssistantMessage",
        "UserMessage",
        "UserMessage",
    ]
    assert text_of(read[3].content) == "second question"


class Out(BaseModel):
    value: int


async def test_the_models_values_stay_out_of_the_logs(caplog: pytest.LogCaptureFixture) -> None:
    # test_error_logging_redaction: invalid tool arguments and invalid output values are
    # read by the model (its events carry them), never written to a log line
    def add(a: int) -> int:
        """Add one."""
        return a + 1

    fm = FauxModel(
        [
            faux_message(faux_tool_call("add", {"a": SECRET})),
            faux_message(faux_tool_call("final_result", {"value": SECRET})),
            f'{{"value": "{SECRET}"}}',
            '{"value": 1}',
        ]
    )
    agent = Agent(
        model=fm.model, stream_fn=fm.stream_fn, tools=[tool(add)], output_type=Out, output_retries=3
    )
    with caplog.at_level(logging.DEBUG):
        assert (await agent.prompt("go")).output == Out(value=1)
    told = [text_of(m.content) for m in agent.state.messages if isinstance(m, ToolResultMessage)]
    assert SECRET in told[0] and SECRET in told[1]  # the model reads what it sent
    assert "invalid Out output 2 of 3 allowed" in caplog.text
    assert SECRET not in caplog.text


@pytest.mark.parametrize("output_type", [int, str, Out], ids=["int", "str", "model"])
async def test_an_answer_of_empty_text_parts_is_no_output(output_type: Any) -> None:
    # pydantic-ai #7568: only empty text parts is no text output; the model reads that
    empty = AssistantMessage([TextContent(""), TextContent("")])
    answer = '{"value": 42}' if output_type is Out else "42"
    fm = FauxModel([empty, answer])
    agent = Agent(model=fm.model, stream_fn=fm.stream_fn, output_type=output_type)
    reply = await agent.prompt("x")
    assert reply.output == {int: 42, str: "42", Out: Out(value=42)}[output_type]
    told = text_of(fm.contexts[1].messages[-1].content)
    assert "- $: the answer is empty" in told and "not JSON" not in told


async def test_an_answer_of_empty_text_parts_without_an_output_type_is_the_answer() -> None:
    fm = FauxModel([AssistantMessage([TextContent(""), TextContent("")]), "never asked"])
    agent = Agent(model=fm.model, stream_fn=fm.stream_fn)
    assert (await agent.prompt("x")).text.strip() == "" and fm.call_count == 1


async def test_a_plain_tool_may_run_another_agent_but_not_its_own() -> None:
    # pydantic-ai #7277 refuses run_sync inside a run's sync callbacks
    inner_fm = FauxModel(["inner answer"])
    inner = Agent(model=inner_fm.model, stream_fn=inner_fm.stream_fn)
    outer: list[Agent[Any]] = []

    def ask_inner(call_id: str, args: Any, signal: Any, on_update: Any) -> str:
        return inner.prompt_sync("hi").text

    def ask_self(call_id: str, args: Any, signal: Any, on_update: Any) -> str:
        return outer[0].prompt_sync("hi").text

    reply = faux_message(faux_tool_call("ask_inner", {}), faux_tool_call("ask_self", {}))
    fm = FauxModel([reply, "ok"])
    agent = Agent(
        model=fm.model,
        stream_fn=fm.stream_fn,
        tools=[
            AgentTool("ask_inner", "a", "a", SCHEMA, ask_inner),
            AgentTool("ask_self", "a", "a", SCHEMA, ask_self),
        ],
    )
    outer.append(agent)
    assert (await agent.prompt("go")).text == "ok"
    results = [m for m in agent.state.messages if isinstance(m, ToolResultMessage)]
    assert (results[0].is_error, text_of(results[0].content)) == (False, "inner answer")
    assert results[1].is_error and "already running" in text_of(results[1].content)


@pytest.mark.parametrize("mode", ["sequential", "parallel"])
async def test_a_tool_added_in_a_batch_is_callable_from_the_next_reply(mode: str) -> None:
    # pydantic-ai #7271: a tool must be revealed to the model before it can be called; a
    # call in the same reply as the one that adds it is answered as not offered
    holder: list[Agent[Any]] = []

    def helper(call_id: str, args: Any, signal: Any, on_update: Any) -> str:
        return "helped"

    def reveal(call_id: str, args: Any, signal: Any, on_update: Any) -> AgentToolResult:
        holder[0].tool_store.register(AgentTool("helper", "h", "h", SCHEMA, helper))
        return AgentToolResult("revealed", added_tool_names=["helper"])

    fm = FauxModel(
        [
            faux_message(faux_tool_call("reveal", {}), faux_tool_call("helper", {})),
            faux_message(faux_tool_call("helper", {})),
            "ok",
        ]
    )
    agent = Agent(
        model=fm.model,
        stream_fn=fm.stream_fn,
        tools=[AgentTool("reveal", "r", "r", SCHEMA, reveal)],
        tool_execution=mode,
    )
    holder.append(agent)
    await agent.prompt("go")
    results = [m for m in agent.state.messages if isinstance(m, ToolResultMessage)]
    assert [(m.tool_name, m.is_error) for m in results] == [
        ("reveal", False),
        ("helper", True),
        ("helper", False),
    ]
    assert text_of(results[1].content) == 'Tool "helper" not found. Available tools: reveal'
    assert [t.name for t in fm.contexts[1].tools] == ["reveal", "helper"]
    assert results[0].added_tool_names == ["helper"]


HUGE = 10**400
"""An int no float holds: openai-agents #4101 refuses it for a time limit."""


@pytest.mark.parametrize("option", ["tool_timeout_s", "stream_idle_timeout_s"])
def test_a_time_limit_no_float_holds_is_refused_naming_it(option: str) -> None:
    # before, it was taken, and every tool call (or the first model call) then failed
    # with "int too large to convert to float"
    fm = FauxModel(["never asked"])
    with pytest.raises(ConfigError, match=f"^{option} must be > 0 seconds or None"):
        Agent(model=fm.model, stream_fn=fm.stream_fn, **{option: HUGE})
    with pytest.raises(ConfigError, match="timeout_s must be > 0 seconds"):
        AgentTool("t", "t", "t", SCHEMA, lambda *a: "x", timeout_s=HUGE)


async def test_an_endless_time_limit_is_no_limit() -> None:
    fm = FauxModel([faux_message(faux_tool_call("t", {})), "ok"])
    made = AgentTool("t", "t", "t", SCHEMA, lambda *a: "fine", timeout_s=math.inf)
    agent = Agent(
        model=fm.model,
        stream_fn=fm.stream_fn,
        tools=[made],
        tool_timeout_s=math.inf,
        stream_idle_timeout_s=math.inf,
    )
    assert (await agent.prompt("go")).text == "ok"
    [result] = [m for m in agent.state.messages if isinstance(m, ToolResultMessage)]
    assert text_of(result.content) == "fine"
