"""Tool calls held for a person's approval (DESIGN §14) through the Agent on the faux model:
a parallel batch with one held call, approve and reject, `defer=True`, `requires_approval`
as a function, `@tool` and tool files, prompts refused while calls are pending, abort."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from yiemagent import (
    Agent,
    AgentEndEvent,
    ApprovalPendingError,
    BeforeToolCallResult,
    ConfigError,
    InMemorySessionStore,
    ToolResultMessage,
    ToolStore,
    tool,
)
from yiemagent.ai.providers.faux import FauxModel, faux_message, faux_tool_call
from yiemagent.types import text_of

from ._kit import recording_tool, transcript_problems


def three_calls() -> Any:
    return faux_message(
        faux_tool_call("a", {"n": 1}, id="c1"),
        faux_tool_call("b", {"n": 2}, id="c2"),
        faux_tool_call("c", {"n": 3}, id="c3"),
    )


def events_of(agent: Agent[Any]) -> list[Any]:
    events: list[Any] = []
    agent.subscribe(lambda e, _s: events.append(e))
    return events


def results(agent: Agent[Any]) -> dict[str, ToolResultMessage]:
    return {m.tool_call_id: m for m in agent.state.messages if isinstance(m, ToolResultMessage)}


async def test_parallel_batch_of_three_one_held_then_approved() -> None:
    ran: list[str] = []
    tools = [
        recording_tool("a", ran, delay_s=0.05),
        recording_tool("b", ran, requires_approval=True),
        recording_tool("c", ran, delay_s=0.05),
    ]
    fm = FauxModel([three_calls(), "all three done"])
    agent = Agent(model=fm.model, stream_fn=fm.stream_fn, tools=tools)
    events = events_of(agent)

    reply = await agent.prompt("do a, b and c")
    assert sorted(ran) == ["c1", "c3"]  # the two others ran, the held one did not
    ends = [e for e in events if isinstance(e, AgentEndEvent)]
    assert [e.reason for e in ends] == ["awaiting_approval"]
    assert reply.tool_calls and fm.call_count == 1
    pending = agent.pending_approvals
    assert [(p.tool_call_id, p.tool_name, p.arguments) for p in pending] == [("c2", "b", {"n": 2})]
    assert pending[0].assistant_message.tool_calls[1].id == "c2"
    assert pending[0].decision is None
    assert set(results(agent)) == {"c1", "c3"}
    ends_before = [e.type for e in events].count("tool_execution_end")
    assert ends_before == 2  # the held call has no end event yet

    agent.approve("c2")
    assert agent.pending_approvals[0].decision is not None
    answer = await agent.resume()
    assert answer.text == "all three done"
    assert sorted(ran) == ["c1", "c2", "c3"]
    assert agent.pending_approvals == []
    assert [e.reason for e in events if isinstance(e, AgentEndEvent)][-1] == "stop"
    assert "b ran with {'n': 2}" in text_of(results(agent)["c2"].content)
    # the provider's second call got every call answered exactly once, in a valid transcript
    assert transcript_problems(fm.contexts[1].messages) == []
    assert [
        m.tool_call_id for m in fm.contexts[1].messages if isinstance(m, ToolResultMessage)
    ] == [
        "c1",
        "c3",
        "c2",
    ]


async def test_reject_gives_an_error_result_with_the_reason_to_the_model() -> None:
    ran: list[str] = []
    tools = [recording_tool("a", ran), recording_tool("b", ran, requires_approval=True)]
    fm = FauxModel(
        [
            faux_message(faux_tool_call("a", {}, id="c1"), faux_tool_call("b", {}, id="c2")),
            "understood, not deleting",
        ]
    )
    agent = Agent(model=fm.model, stream_fn=fm.stream_fn, tools=tools)
    await agent.prompt("go")
    agent.reject("c2", reason="not on a Friday")
    answer = await agent.resume()
    assert answer.text == "understood, not deleting"
    assert ran == ["c1"]
    seen = [m for m in fm.contexts[1].messages if isinstance(m, ToolResultMessage)]
    rejected = next(m for m in seen if m.tool_call_id == "c2")
    assert rejected.is_error
    assert text_of(rejected.content) == "Tool call rejected by the user: not on a Friday"
    assert transcript_problems(fm.contexts[1].messages) == []


@pytest.mark.parametrize("decide", ["approve", "reject"])
async def test_a_decision_binds_the_held_call_not_a_later_call_reusing_its_id(
    decide: str,
) -> None:
    # Models and servers reuse ids ("call_0" every turn). openai-agents asks again for a
    # new call under an approved id; a decision is for the call a person saw.
    ran: list[str] = []
    tools = [recording_tool("pay", ran, requires_approval=True)]
    fm = FauxModel(
        [
            faux_message(faux_tool_call("pay", {"n": 10}, id="call_0")),
            faux_message(faux_tool_call("pay", {"n": 9000}, id="call_0")),
            "paid twice",
        ]
    )
    agent = Agent(model=fm.model, stream_fn=fm.stream_fn, tools=tools)
    await agent.prompt("pay the bill")
    if decide == "approve":
        agent.approve("call_0")
    else:
        agent.reject("call_0", reason="no")

    await agent.resume()

    assert ran == (["call_0"] if decide == "approve" else [])
    held = agent.pending_approvals
    assert [(p.tool_call_id, p.arguments, p.decision) for p in held] == [
        ("call_0_2", {"n": 9000}, None)  # the transcript's second call_0 has an id of its own
    ]
    assert fm.call_count == 2


async def test_defer_from_before_tool_call_and_approved_calls_go_through_hooks_and_timeouts() -> (
    None
):
    ran: list[str] = []
    seen_approved: list[tuple[str, bool]] = []

    def before(ctx: Any, _signal: Any) -> BeforeToolCallResult | None:
        seen_approved.append((ctx.tool_call.id, ctx.approved))
        if ctx.tool_call.name == "slow" and not ctx.approved:
            return BeforeToolCallResult(defer=True)
        return None

    tools = [recording_tool("slow", ran, delay_s=5.0, timeout_s=0.2)]
    fm = FauxModel([faux_message(faux_tool_call("slow", {"n": "7"}, id="s1")), "timed out, sorry"])
    agent = Agent(model=fm.model, stream_fn=fm.stream_fn, tools=tools, before_tool_call=before)
    await agent.prompt("go")
    assert [p.tool_call_id for p in agent.pending_approvals] == ["s1"]
    assert ran == []
    agent.approve("s1")
    await agent.resume()
    # the hook ran again with approved=True, the arguments were validated ("7" → 7), and the
    # tool's timeout applied
    assert seen_approved == [("s1", False), ("s1", True)]
    assert ran == ["s1"]
    result = results(agent)["s1"]
    assert result.is_error and "timed out after 0.2 s" in text_of(result.content)


async def test_requires_approval_as_a_function_of_the_arguments() -> None:
    ran: list[str] = []
    big = recording_tool("pay", ran, requires_approval=lambda args: args.get("n", 0) > 100)
    fm = FauxModel(
        [
            faux_message(
                faux_tool_call("pay", {"n": 5}, id="p1"), faux_tool_call("pay", {"n": 500}, id="p2")
            ),
            "paid",
        ]
    )
    agent = Agent(model=fm.model, stream_fn=fm.stream_fn, tools=[big], tool_execution="sequential")
    await agent.prompt("pay both")
    assert ran == ["p1"]
    assert [p.arguments for p in agent.pending_approvals] == [{"n": 500}]


async def test_tool_decorator_and_tool_files_hold_calls(tmp_path: Path) -> None:
    @tool(requires_approval=True)
    def delete_file(path: str) -> str:
        """Delete a file."""
        return f"deleted {path}"

    assert delete_file.requires_approval is True
    (tmp_path / "wipe.py").write_text(
        "from yiemagent import tool\n\n"
        "@tool(requires_approval=lambda args: args['force'])\n"
        "def wipe(force: bool) -> str:\n"
        '    """Wipe the disk."""\n'
        "    return 'wiped'\n\n"
        "def get_tool():\n"
        "    return wipe\n"
    )
    store = ToolStore("files")
    store.load_dir(tmp_path)
    store.register(delete_file)
    fm = FauxModel(
        [
            faux_message(
                faux_tool_call("wipe", {"force": False}, id="w1"),
                faux_tool_call("wipe", {"force": True}, id="w2"),
                faux_tool_call("delete_file", {"path": "x"}, id="d1"),
            ),
            "done",
        ]
    )
    agent = Agent(model=fm.model, stream_fn=fm.stream_fn, tool_store=store)
    await agent.prompt("go")
    assert [p.tool_call_id for p in agent.pending_approvals] == ["w2", "d1"]
    assert text_of(results(agent)["w1"].content) == "wiped"


async def test_prompts_are_refused_while_calls_are_pending_and_decisions_are_checked() -> None:
    ran: list[str] = []
    fm = FauxModel([faux_message(faux_tool_call("b", {}, id="c9")), "ok", "next"])
    agent = Agent(
        model=fm.model,
        stream_fn=fm.stream_fn,
        tools=[recording_tool("b", ran, requires_approval=True)],
    )
    await agent.prompt("go")
    with pytest.raises(ApprovalPendingError, match=r"b \(c9\)") as caught:
        await agent.prompt("something else")
    assert caught.value.pending == ["c9"]
    assert str(caught.value) == (
        "cannot start a new prompt: 1 tool call(s) await approval: b (c9); "
        "approve(id) or reject(id, reason) each one, then await resume()"
    )
    with pytest.raises(ApprovalPendingError):
        agent.send("queued")
    with pytest.raises(ApprovalPendingError) as caught:
        await agent.resume()  # no decision yet
    assert caught.value.pending == ["c9"]
    assert str(caught.value) == (
        "cannot resume: b (c9) still need a decision: approve(id) or reject(id, reason) "
        "each one first"
    )
    with pytest.raises(ConfigError, match="no tool call 'nope' awaits approval; pending: c9"):
        agent.approve("nope")
    assert fm.call_count == 1  # nothing reached the provider with the call unanswered
    agent.approve("c9")
    assert (await agent.resume()).text == "ok"
    assert (await agent.prompt("and now")).text == "next"
    with pytest.raises(ConfigError):
        agent.reject("c9")  # answered: no longer pending


async def test_abort_leaves_nothing_held_and_reset_clears_pending() -> None:
    ran: list[str] = []
    slow = recording_tool("slow", ran, delay_s=2.0)
    held = recording_tool("held", ran, requires_approval=True)
    fm = FauxModel(
        [faux_message(faux_tool_call("slow", {}, id="s"), faux_tool_call("held", {}, id="h")), "x"]
    )
    agent = Agent(model=fm.model, stream_fn=fm.stream_fn, tools=[slow, held])

    import asyncio

    held_seen = asyncio.Event()
    agent.subscribe(
        lambda e, _s: (
            held_seen.set() if e.type == "tool_execution_start" and e.tool_call_id == "h" else None
        )
    )
    run = asyncio.create_task(agent.prompt("go"))
    await asyncio.wait_for(held_seen.wait(), timeout=10)  # h is held, s is about to run
    await asyncio.sleep(0.1)
    agent.abort()
    await run
    assert agent.pending_approvals == []
    answered = results(agent)
    assert set(answered) == {"s", "h"} and answered["h"].is_error
    assert transcript_problems(agent.state.messages) == []

    fm2 = FauxModel([faux_message(faux_tool_call("held", {}, id="h2"))])
    agent2 = Agent(
        model=fm2.model, stream_fn=fm2.stream_fn, tools=[held], session_store=InMemorySessionStore()
    )
    await agent2.prompt("go")
    assert agent2.pending_approvals
    agent2.reset()
    assert agent2.pending_approvals == []
