"""openai-agents' soft cancel (tests/test_soft_cancel.py: `cancel(mode="after_turn")`) on the
Agent: `should_stop_after_turn` reading a flag the caller sets (R-5.4). The turn under way
finishes (its tool calls run and are answered), no model call follows, the transcript is
stored, and what was queued waits for the next run; `abort()` is the immediate cancel."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from yiemagent import Agent, AgentTool, ToolResultMessage, Usage
from yiemagent.ai.providers.faux import FauxModel, faux_message, faux_tool_call
from yiemagent.sessions import SqliteSessionStore
from yiemagent.types import text_of

from ._kit import EventWaiter, faux_agent

SCHEMA: dict[str, Any] = {"type": "object", "properties": {"n": {"type": "integer"}}}


class SoftCancel:
    """`should_stop_after_turn` for a caller's "stop after this turn"."""

    def __init__(self) -> None:
        self.requested = False

    def cancel(self) -> None:
        self.requested = True

    def __call__(self, turn: Any) -> bool:
        return self.requested


def cancelling_tool(soft: SoftCancel, ran: list[int]) -> AgentTool:
    async def execute(call_id: str, args: Any, signal: Any, on_update: Any) -> str:
        soft.cancel()  # the user asks to stop while the tool runs
        soft.cancel()  # twice: no different
        await asyncio.sleep(0.01)
        ran.append(args["n"])
        return f"done {args['n']}"

    return AgentTool("work", "work", "works", SCHEMA, execute, parallel=True)


def calling(*ns: int, tokens: int = 0) -> Any:
    message = faux_message(*(faux_tool_call("work", {"n": n}) for n in ns))
    message.usage = Usage(input=tokens, output=tokens, total_tokens=2 * tokens)
    return message


def results_of(agent: Any) -> list[ToolResultMessage]:
    return [m for m in agent.state.messages if isinstance(m, ToolResultMessage)]


async def test_the_turn_under_way_finishes_and_no_model_call_follows() -> None:
    soft, ran = SoftCancel(), []
    fm = FauxModel([calling(1, 2, 3), "never asked"])
    agent = faux_agent(fm, tools=[cancelling_tool(soft, ran)], should_stop_after_turn=soft)
    waiter = EventWaiter(agent)

    reply = await agent.prompt("go")

    assert fm.call_count == 1 and sorted(ran) == [1, 2, 3]
    assert [(r.is_error, text_of(r.content)) for r in results_of(agent)] == [
        (False, "done 1"),
        (False, "done 2"),
        (False, "done 3"),
    ]
    assert reply.stop_reason == "toolUse"
    assert waiter.events[-1].reason == "should_stop"


async def test_an_immediate_abort_instead_leaves_the_tool_no_result_of_its_own() -> None:
    started = asyncio.Event()

    async def execute(call_id: str, args: Any, signal: Any, on_update: Any) -> str:
        started.set()
        await asyncio.sleep(5)
        return "never"

    tool = AgentTool("work", "work", "works", SCHEMA, execute)
    fm = FauxModel([calling(1), "never asked"])
    agent = faux_agent(fm, tools=[tool])

    run = asyncio.ensure_future(agent.prompt("go"))
    await asyncio.wait_for(started.wait(), 5)
    agent.abort()
    reply = await asyncio.wait_for(run, 5)

    assert reply.stop_reason == "aborted"
    (result,) = results_of(agent)
    assert result.is_error and "never" not in text_of(result.content)


async def test_the_stopped_runs_messages_and_usage_are_stored(tmp_path: Path) -> None:
    soft, ran = SoftCancel(), []
    fm = FauxModel([calling(1, tokens=7), "from the stored results"])
    store = SqliteSessionStore(tmp_path / "s.db")
    agent = Agent(
        model=fm.model,
        stream_fn=fm.stream_fn,
        tools=[cancelling_tool(soft, ran)],
        should_stop_after_turn=soft,
        session_store=store,
        session_id="chat",
    )

    await agent.prompt("go")
    stored = store.load("chat")

    assert [m.role for m in stored] == ["user", "assistant", "toolResult"]
    assert stored[1].usage.input == 7 and stored[1].usage.output == 7
    await agent.close()

    again = Agent(
        model=fm.model,
        stream_fn=fm.stream_fn,
        tools=[cancelling_tool(SoftCancel(), [])],
        session_store=store,
        session_id="chat",
    )
    assert (await again.prompt("go on")).text == "from the stored results"
    assert [m.role for m in fm.contexts[1].messages] == ["user", "assistant", "toolResult", "user"]
    await again.close()
    store.close()


async def test_a_cancel_asked_before_the_run_lets_its_first_turn_finish() -> None:
    soft, ran = SoftCancel(), []
    soft.cancel()
    fm = FauxModel([calling(1), "never asked"])
    agent = faux_agent(fm, tools=[cancelling_tool(soft, ran)], should_stop_after_turn=soft)

    await agent.prompt("go")

    assert fm.call_count == 1 and ran == [1]


async def test_queued_follow_ups_wait_for_the_next_run() -> None:
    soft, ran = SoftCancel(), []
    fm = FauxModel([calling(1), "next's answer", "the follow-up's answer"])
    agent = faux_agent(fm, tools=[cancelling_tool(soft, ran)], should_stop_after_turn=soft)
    agent.follow_up("and then this")

    await agent.prompt("go")

    assert fm.call_count == 1 and agent.has_queued_messages()
    soft.requested = False
    reply = await agent.prompt("next")
    assert reply.text == "the follow-up's answer" and not agent.has_queued_messages()
    users = [text_of(m.content) for m in agent.state.messages if m.role == "user"]
    assert users == ["go", "next", "and then this"]
