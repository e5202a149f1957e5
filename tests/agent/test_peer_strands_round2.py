"""More cases strands-agents/sdk-python checks (tests/strands/agent/test_agent_cancellation.py,
test_agent_hooks.py, tools/executors/test_executor.py, event_loop/test_event_loop.py,
test_recover_message_on_max_tokens_reached.py), on our Agent: a run stopped while the
model streams, from another thread, several times over, or after the model asked for tools
and before they ran, the agent usable after each; the order hooks and events come in; a
hook holding a call for a decision and the run resumed; a follow-up added when the run
would end; a reply cut off at the token limit whose call never runs; a structured answer
after a tool call, a run's output type in place of the agent's, a run aborted during a
tool resumed from its results, a tool replaced or removed during the run, and a decision
for a call that is not held.

Where ours differs by choice: `abort()` while idle is a no-op (docs/agent.md, R-6.5),
where strands' `cancel()` before `invoke` cancels the next invocation; and an
`after_tool_call` hook cannot ask for the tool to run again (strands' `retry=True`): a
retry belongs in the tool's own `execute`, so every attempt stays under the one call's
time limit and the model reads one result per call (docs/tools.md, "When a call fails")."""

from __future__ import annotations

import asyncio
import contextlib
import threading
from typing import Any

import pytest
from pydantic import BaseModel

from yiemagent import (
    AfterToolCallResult,
    Agent,
    AgentTool,
    AgentToolResult,
    ApprovalPendingError,
    AssistantMessage,
    BeforeToolCallResult,
    ConfigError,
    ToolResultMessage,
    ToolStore,
    UserMessage,
    tool,
)
from yiemagent.ai.providers.faux import (
    FauxModel,
    faux_message,
    faux_tool_call,
    faux_truncated_tool_call,
)
from yiemagent.types import text_of

SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"x": {"type": "integer"}, "y": {"type": "integer"}},
}


def faux_agent(fm: FauxModel, **kwargs: Any) -> Agent[Any]:
    return Agent(model=fm.model, stream_fn=fm.stream_fn, **kwargs)


def calculator_tool(ran: list[dict[str, Any]]) -> AgentTool:
    def execute(call_id: str, args: dict[str, Any], signal: Any, on_update: Any) -> str:
        ran.append(args)
        return str(args.get("x", 0) + args.get("y", 0))

    return AgentTool("calculator", "Calculator", "adds x and y", SCHEMA, execute)


def results(agent: Agent[Any]) -> list[ToolResultMessage]:
    return [m for m in agent.state.messages if isinstance(m, ToolResultMessage)]


LONG_ANSWER = " ".join(f"chunk {i}" for i in range(200))


async def test_an_abort_while_the_model_streams_returns_the_aborted_message() -> None:
    fm = FauxModel([LONG_ANSWER, "Hello again"], chunk_size=4, delay_s=0.01)
    agent = faux_agent(fm)
    updates = 0

    def stop_after_three_chunks(event: Any) -> None:
        nonlocal updates
        if event.type == "message_update":
            updates += 1
            if updates == 3:
                agent.abort()

    agent.subscribe(stop_after_three_chunks)
    reply = await agent.prompt("Hello")
    assert reply.stop_reason == "aborted"
    assert reply.text and len(reply.text) < len(LONG_ANSWER)  # what streamed before is kept
    assert not agent.is_busy

    again = await agent.prompt("Hello again")
    assert again.stop_reason == "stop" and again.text == "Hello again"


async def test_an_abort_from_another_thread_stops_the_run() -> None:
    fm = FauxModel([LONG_ANSWER], chunk_size=4, delay_s=0.01)
    agent = faux_agent(fm)
    streaming = threading.Event()
    agent.subscribe(lambda event: streaming.set() if event.type == "message_update" else None)

    def abort_when_streaming() -> None:
        if streaming.wait(timeout=10):
            agent.abort()

    thread = threading.Thread(target=abort_when_streaming)
    thread.start()
    reply = await agent.prompt("Hello")
    thread.join()
    assert reply.stop_reason == "aborted"


async def test_aborting_three_times_is_one_abort() -> None:
    fm = FauxModel([LONG_ANSWER, "fine"], chunk_size=4, delay_s=0.01)
    agent = faux_agent(fm)
    seen: list[str] = []

    def stop_thrice(event: Any) -> None:
        seen.append(event.type)
        if event.type == "message_update" and seen.count("message_update") == 1:
            for _ in range(3):
                agent.abort()

    agent.subscribe(stop_thrice)
    reply = await agent.prompt("Hello")
    assert reply.stop_reason == "aborted"
    assert seen.count("agent_end") == 1 and seen[-1] == "agent_end"
    assert (await agent.prompt("again")).text == "fine"


async def test_an_abort_while_idle_changes_nothing_and_the_next_prompt_runs() -> None:
    fm = FauxModel(["Hello! How can I help you?"])
    agent = faux_agent(fm)
    agent.abort()
    agent.abort()
    reply = await agent.prompt("Hello")
    assert reply.stop_reason == "stop" and reply.text == "Hello! How can I help you?"


async def test_an_abort_after_the_model_asked_for_tools_answers_every_call_unrun() -> None:
    ran: list[dict[str, Any]] = []
    calls = [
        faux_tool_call("calculator", {"x": 5, "y": 3}, id="tool_1"),
        faux_tool_call("calculator", {"x": 1, "y": 1}, id="tool_2"),
    ]
    fm = FauxModel([faux_message(*calls), "Hello! How can I help you?", "8"])
    agent = faux_agent(fm, tools=[calculator_tool(ran)])

    def abort_on_tool_use(event: Any) -> None:
        message = getattr(event, "message", None)
        asked = isinstance(message, AssistantMessage) and bool(message.tool_calls)
        if event.type == "message_end" and asked:
            agent.abort()

    unsubscribe = agent.subscribe(abort_on_tool_use)
    reply = await agent.prompt("Calculate 5 + 3")
    unsubscribe()

    assert reply.stop_reason == "aborted"
    assert ran == []
    assert [m.role for m in agent.state.messages] == [
        "user",
        "assistant",
        "toolResult",
        "toolResult",
    ]
    for result, call_id in zip(results(agent), ["tool_1", "tool_2"], strict=True):
        assert result.tool_call_id == call_id and result.is_error
        assert "abort" in text_of(result.content).lower()
    assert fm.call_count == 1

    again = await agent.prompt("try again")  # the transcript is valid for the next call
    assert again.text == "Hello! How can I help you?"
    sent = fm.contexts[1].messages
    assert [m.role for m in sent] == ["user", "assistant", "toolResult", "toolResult", "user"]


async def test_hooks_and_events_come_in_the_order_of_the_call() -> None:
    order: list[str] = []
    fm = FauxModel([faux_message(faux_tool_call("calculator", {"x": 1, "y": 2})), "3"])

    def before(ctx: Any, signal: Any) -> None:
        order.append("before_tool_call")

    def after(ctx: Any, signal: Any) -> None:
        order.append("after_tool_call")

    agent = faux_agent(
        fm, tools=[calculator_tool([])], before_tool_call=before, after_tool_call=after
    )
    kept = {"agent_start", "agent_end", "message_end", "tool_execution_start", "tool_execution_end"}

    def record(event: Any) -> None:
        if event.type in kept:
            role = getattr(getattr(event, "message", None), "role", "")
            order.append(f"{event.type}:{role}" if role else event.type)

    agent.subscribe(record)
    await agent.prompt("1 + 2?")
    assert order == [
        "agent_start",
        "message_end:user",
        "message_end:assistant",
        "tool_execution_start",
        "before_tool_call",
        "after_tool_call",
        "tool_execution_end",
        "message_end:toolResult",
        "message_end:assistant",
        "agent_end",
    ]


async def test_a_hook_holding_a_call_for_a_decision_pauses_and_resume_runs_it() -> None:
    ran: list[dict[str, Any]] = []
    approved_seen: list[bool] = []

    def ask_first(ctx: Any, signal: Any) -> BeforeToolCallResult | None:
        approved_seen.append(ctx.approved)
        return None if ctx.approved else BeforeToolCallResult(defer=True)

    fm = FauxModel([faux_message(faux_tool_call("calculator", {"x": 2, "y": 2}, id="t1")), "4"])
    agent = faux_agent(fm, tools=[calculator_tool(ran)], before_tool_call=ask_first)
    await agent.prompt("2 + 2?")
    assert ran == [] and [p.tool_call_id for p in agent.pending_approvals] == ["t1"]

    agent.approve("t1")
    reply = await agent.resume()
    assert ran == [{"x": 2, "y": 2}] and reply.text == "4"
    assert approved_seen == [False, True]
    assert [text_of(m.content) for m in results(agent)] == ["4"]


async def test_a_follow_up_added_as_the_run_ends_is_answered_in_the_same_run() -> None:
    fm = FauxModel(["first answer", "second answer"])
    agent = faux_agent(fm)
    added = False

    def follow_once(event: Any) -> None:
        nonlocal added
        if event.type == "turn_end" and not added:
            added = True
            agent.follow_up("and one more thing")

    agent.subscribe(follow_once)
    reply = await agent.prompt("question")
    assert reply.text == "second answer"
    assert fm.call_count == 2
    assert [text_of(m.content) for m in agent.state.messages if isinstance(m, UserMessage)] == [
        "question",
        "and one more thing",
    ]


async def test_a_call_cut_off_at_the_token_limit_never_runs_and_the_model_is_asked_again() -> None:
    ran: list[dict[str, Any]] = []
    cut = faux_truncated_tool_call("calculator", {"x": 123456, "y": 654321}, id="cut")
    fm = FauxModel([cut, faux_message(faux_tool_call("calculator", {"x": 1, "y": 2})), "3"])
    agent = faux_agent(fm, tools=[calculator_tool(ran)])
    reply = await agent.prompt("add")

    assert ran == [{"x": 1, "y": 2}]
    first = results(agent)[0]
    assert first.tool_call_id == "cut" and first.is_error
    assert "output token limit" in text_of(first.content)
    assert reply.text == "3" and fm.call_count == 3


class Sum(BaseModel):
    total: int


async def test_a_structured_answer_after_a_tool_call_is_the_validated_value() -> None:
    fm = FauxModel(
        [
            faux_message(faux_tool_call("calculator", {"x": 20, "y": 22})),
            faux_message(faux_tool_call("final_result", {"total": 42})),
        ]
    )
    agent = faux_agent(fm, tools=[calculator_tool([])])
    reply = await agent.prompt("20 + 22?", output_type=Sum)
    assert reply.output == Sum(total=42)
    assert [m.tool_name for m in results(agent)] == ["calculator", "final_result"]


async def test_a_tool_whose_result_says_error_is_an_error_without_raising() -> None:
    def soft_fail(call_id: str, args: dict[str, Any], signal: Any, on_update: Any) -> Any:
        return AgentToolResult(content="quota exhausted", details={"status": "error"})

    failing = AgentTool("lookup", "Lookup", "looks up", SCHEMA, soft_fail)

    def mark_errors(ctx: Any, signal: Any) -> Any:
        if ctx.result.details.get("status") == "error":
            return AfterToolCallResult(is_error=True)
        return None

    fm = FauxModel([faux_message(faux_tool_call("lookup", {})), "sorry"])
    agent = faux_agent(fm, tools=[failing], after_tool_call=mark_errors)
    reply = await agent.prompt("look it up")
    (result,) = results(agent)
    assert result.is_error and text_of(result.content) == "quota exhausted"
    assert reply.text == "sorry"


async def test_a_run_cancelled_by_its_caller_leaves_every_call_answered() -> None:
    started = asyncio.Event()

    async def slow(call_id: str, args: dict[str, Any], signal: Any, on_update: Any) -> str:
        started.set()
        await asyncio.sleep(30)
        return "never"

    fm = FauxModel([faux_message(faux_tool_call("slow", {}, id="s1")), "next"])
    agent = faux_agent(fm, tools=[AgentTool("slow", "Slow", "waits", SCHEMA, slow)])
    task = asyncio.create_task(agent.prompt("go"))
    await asyncio.wait_for(started.wait(), timeout=10)
    task.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await task
    (result,) = results(agent)
    assert result.tool_call_id == "s1" and result.is_error
    assert (await agent.prompt("again")).text == "next"


class User(BaseModel):
    name: str
    age: int


class Product(BaseModel):
    title: str


async def test_a_runs_output_type_overrides_the_agents_for_that_run_only() -> None:
    fm = FauxModel(
        [
            faux_message(faux_tool_call("final_result", {"name": "Ada", "age": 36})),
            faux_message(faux_tool_call("final_result", {"title": "lamp"})),
            faux_message(faux_tool_call("final_result", {"name": "Alan", "age": 41})),
        ]
    )
    agent = faux_agent(fm, output_type=User)
    assert (await agent.prompt("who?")).output == User(name="Ada", age=36)
    assert (await agent.prompt("what?", output_type=Product)).output == Product(title="lamp")
    assert (await agent.prompt("who else?")).output == User(name="Alan", age=41)
    offered = [sorted(c.tools[0].input_schema["properties"]) for c in fm.contexts]
    assert offered == [["age", "name"], ["title"], ["age", "name"]]
    assert agent.state.tools == []  # the output tool is offered, never registered


async def test_a_run_without_an_output_type_offers_no_output_tool() -> None:
    fm = FauxModel(["plain answer"])
    agent = faux_agent(fm, tools=[calculator_tool([])])
    reply = await agent.prompt("hi")
    assert reply.text == "plain answer"
    assert [t.name for t in fm.contexts[0].tools] == ["calculator"]


async def test_a_run_aborted_during_a_tool_is_resumed_from_its_results() -> None:
    started = asyncio.Event()

    async def slow(call_id: str, args: dict[str, Any], signal: Any, on_update: Any) -> str:
        started.set()
        await signal.wait()
        raise RuntimeError("stopped by the abort")

    fm = FauxModel([faux_message(faux_tool_call("slow", {}, id="s1")), "picked up again"])
    agent = faux_agent(fm, tools=[AgentTool("slow", "Slow", "waits", SCHEMA, slow)])
    run = asyncio.create_task(agent.prompt("go"))
    await asyncio.wait_for(started.wait(), timeout=10)
    agent.abort()
    assert (await run).stop_reason == "aborted"
    assert [m.role for m in agent.state.messages] == ["user", "assistant", "toolResult"]

    reply = await agent.resume()
    assert reply.text == "picked up again"
    (result,) = results(agent)
    assert result.tool_call_id == "s1" and result.is_error
    sent = fm.contexts[1].messages[-1]
    assert isinstance(sent, ToolResultMessage) and sent.tool_call_id == "s1"


async def test_a_tool_replaced_during_the_run_is_the_one_the_next_call_runs() -> None:
    store = ToolStore("overwritten")

    @tool(name="calc")
    def calc_v2(x: int) -> str:
        """The second version."""
        return f"v2 {x}"

    @tool(name="calc")
    def calc_v1(x: int) -> str:
        """The first version, which replaces itself."""
        store.register(calc_v2, replace=True)
        return f"v1 {x}"

    @tool
    def once(x: int) -> str:
        """Leaves the store once run."""
        store.unregister("once")
        return "bye"

    store.register(calc_v1)
    store.register(once)
    turn = [faux_tool_call("calc", {"x": 1}), faux_tool_call("once", {"x": 1})]
    again = [faux_tool_call("calc", {"x": 2}), faux_tool_call("once", {"x": 2})]
    fm = FauxModel([faux_message(*turn), faux_message(*again), "done"])
    agent = faux_agent(fm, tool_store=store)
    await agent.prompt("go")

    got = [(m.is_error, text_of(m.content)) for m in results(agent)]
    assert got == [
        (False, "v1 1"),
        (False, "bye"),
        (False, "v2 2"),
        (True, 'Tool "once" not found. Available tools: calc'),
    ]
    assert [t.description for t in fm.contexts[1].tools] == ["The second version."]


async def test_a_decision_for_a_call_that_is_not_held_is_refused_naming_the_held_ones() -> None:
    ran: list[dict[str, Any]] = []
    fm = FauxModel([faux_message(faux_tool_call("calculator", {"x": 1}, id="held-1")), "1"])
    agent = faux_agent(
        fm,
        tools=[calculator_tool(ran)],
        before_tool_call=lambda ctx: None if ctx.approved else BeforeToolCallResult(defer=True),
    )
    await agent.prompt("1?")
    with pytest.raises(ConfigError, match="held-1"):
        agent.approve("nope")
    with pytest.raises(ApprovalPendingError):
        await agent.resume()
    with pytest.raises(ApprovalPendingError):
        await agent.prompt("something else")
    assert ran == []
    agent.approve("held-1")
    assert (await agent.resume()).text == "1" and ran == [{"x": 1}]
