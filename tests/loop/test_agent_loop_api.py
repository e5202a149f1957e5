"""The loop's entry points (DESIGN §3): continuing a transcript, the one-call helper, and the
event stream's guarantees."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from dataclasses import dataclass
from typing import Any

import pytest

from yiemagent import (
    AgentContext,
    AgentEvent,
    AgentLoopConfig,
    AgentMessage,
    AgentTool,
    ConfigError,
    ToolResultMessage,
    UserMessage,
    agent_loop,
    agent_loop_continue,
    run_agent_loop_continue,
    stream_assistant_response,
)
from yiemagent.ai.providers.faux import FauxModel, faux_message, faux_tool_call
from yiemagent.types import text_of


async def test_agent_loop_continue_emits_no_prompt_events() -> None:
    fm = FauxModel(["continued"])
    history: list[AgentMessage] = [UserMessage("question")]
    context = AgentContext("sys", history, [])
    stream = agent_loop_continue(context, AgentLoopConfig(model=fm.model), stream_fn=fm.stream_fn)
    events = [event async for event in stream]
    types = [e.type for e in events if e.type != "message_update"]
    assert types == [
        "agent_start",
        "turn_start",
        "message_start",
        "message_end",
        "turn_end",
        "agent_end",
    ]
    new = await stream.result()
    assert [m.role for m in new] == ["assistant"]
    assert [m.role for m in context.messages] == ["user", "assistant"]
    assert [m.role for m in fm.contexts[0].messages] == ["user"]


async def test_agent_loop_continue_after_tool_results() -> None:
    call = faux_tool_call("noop", {}, id="c1")
    history: list[AgentMessage] = [
        UserMessage("q"),
        faux_message(call),
        ToolResultMessage("c1", "noop"),
    ]
    fm = FauxModel(["answer"])
    events: list[AgentEvent] = []
    new = await run_agent_loop_continue(
        AgentContext("s", history, []),
        AgentLoopConfig(model=fm.model),
        events.append,
        stream_fn=fm.stream_fn,
    )
    assert [m.role for m in new] == ["assistant"]
    assert [m.role for m in fm.contexts[0].messages] == ["user", "assistant", "toolResult"]


async def test_agent_loop_continue_refuses_an_assistant_last_message() -> None:
    fm = FauxModel(["x"])
    context = AgentContext("s", [UserMessage("q"), faux_message("a")], [])
    with pytest.raises(ConfigError, match="Cannot continue from message role: assistant"):
        agent_loop_continue(context, AgentLoopConfig(model=fm.model), stream_fn=fm.stream_fn)
    with pytest.raises(ConfigError, match="no messages"):
        agent_loop_continue(AgentContext(), AgentLoopConfig(model=fm.model))
    with pytest.raises(ConfigError):
        await run_agent_loop_continue(context, AgentLoopConfig(model=fm.model), print)
    assert fm.call_count == 0


@dataclass
class HookNote:
    """A custom message (pi: "caller responsibility"): convert_to_llm makes it user text."""

    text: str
    role: str = "hookNote"
    timestamp: int = 0


async def test_agent_loop_continue_from_a_custom_last_message() -> None:
    # pi: agentLoopContinue allows a custom message type as the last message; what the
    # model sees of it is convert_to_llm's business
    fm = FauxModel(["Response to custom message"])

    def convert(messages: list[Any]) -> list[Any]:
        return [UserMessage(m.text) if isinstance(m, HookNote) else m for m in messages]

    context = AgentContext("s", [HookNote("Hook content")], [])
    config = AgentLoopConfig(model=fm.model, convert_to_llm=convert)
    stream = agent_loop_continue(context, config, stream_fn=fm.stream_fn)
    ends = [e for e in [event async for event in stream] if e.type == "message_end"]

    new = await stream.result()
    assert [m.role for m in new] == ["assistant"] and len(ends) == 1
    seen = fm.contexts[0].messages
    assert [m.role for m in seen] == ["user"] and text_of(seen[0].content) == "Hook content"


async def test_stream_assistant_response_returns_the_message_without_appending() -> None:
    fm = FauxModel(["one call"])
    context = AgentContext("sys", [UserMessage("q")], [])
    events: list[str] = []
    message = await stream_assistant_response(
        context,
        AgentLoopConfig(model=fm.model),
        None,
        lambda e: events.append(e.type),
        fm.stream_fn,
    )
    assert message.text == "one call" and message.stop_reason == "stop"
    assert len(context.messages) == 1
    assert events[0] == "message_start" and events[-1] == "message_end"
    assert set(events[1:-1]) == {"message_update"}


async def test_stream_assistant_response_uses_yiemagent_ai_stream_by_default() -> None:
    fm = FauxModel(["through the registry"])
    message = await stream_assistant_response(
        AgentContext("s", [UserMessage("q")], []),
        AgentLoopConfig(model=fm.model),
        None,
        lambda e: None,
    )
    assert message.text == "through the registry"
    assert fm.call_count == 1


async def test_event_stream_ends_even_if_the_run_task_is_cancelled() -> None:
    tool_started = asyncio.Event()

    async def forever(tool_call_id: str, args: Any, signal: Any, on_update: Any) -> str:
        tool_started.set()
        await asyncio.Event().wait()
        return "never"

    tool = AgentTool("wait", "wait", "waits forever", {"type": "object"}, forever)
    fm = FauxModel([faux_message(faux_tool_call("wait"))])
    stream = agent_loop(
        [UserMessage("q")],
        AgentContext("s", [], [tool]),
        AgentLoopConfig(model=fm.model),
        stream_fn=fm.stream_fn,
    )
    await tool_started.wait()
    for task in asyncio.all_tasks():
        if task is not asyncio.current_task() and "drive" in repr(task.get_coro()):
            task.cancel()
    events = [event async for event in stream]
    assert events[-1].type == "agent_end"
    assert events[-1].reason == "aborted"  # type: ignore[union-attr]
    assert [m.role for m in await stream.result()][:2] == ["user", "assistant"]


async def test_a_wait_for_the_next_event_that_times_out_loses_no_event() -> None:
    # A consumer polling with a timeout (a spinner between events) keeps reading the same
    # iterator after a wait runs out, and still gets every event up to agent_end.
    release = asyncio.Event()

    async def slow(tool_call_id: str, args: Any, signal: Any, on_update: Any) -> str:
        await release.wait()
        return "done"

    tool = AgentTool("slow", "slow", "waits to be released", {"type": "object"}, slow)
    fm = FauxModel([faux_message(faux_tool_call("slow")), "answer"])
    stream = agent_loop(
        [UserMessage("q")],
        AgentContext("s", [], [tool]),
        AgentLoopConfig(model=fm.model),
        stream_fn=fm.stream_fn,
    )
    events = stream.__aiter__()
    seen: list[str] = []
    timeouts = 0
    while True:
        try:
            event = await asyncio.wait_for(events.__anext__(), timeout=0.05)
        except TimeoutError:
            timeouts += 1
            release.set()  # the tool is running and silent: let it finish
            continue
        except StopAsyncIteration:
            break
        seen.append(event.type)

    assert timeouts >= 1
    assert seen[-1] == "agent_end" and seen.count("turn_end") == 2
    roles = [m.role for m in await stream.result()]
    assert roles == ["user", "assistant", "toolResult", "assistant"]


def test_agent_loop_outside_an_event_loop_says_what_to_do() -> None:
    fm = FauxModel(["x"])
    with pytest.raises(RuntimeError, match="needs a running event loop"):
        agent_loop(
            [UserMessage("q")],
            AgentContext(),
            AgentLoopConfig(model=fm.model),
            stream_fn=fm.stream_fn,
        )
    assert fm.call_count == 0


def test_agent_loop_is_the_function_whatever_was_imported_first() -> None:
    """Importing the loop's private module first must not make the public name anything but
    the function (a fresh interpreter, so import order is the one shown)."""
    code = (
        "from yiemagent.loop._agent_loop import run_agent_loop\n"
        "import inspect, yiemagent, yiemagent.loop\n"
        "from yiemagent import agent_loop\n"
        "assert inspect.isfunction(agent_loop), agent_loop\n"
        "assert yiemagent.loop.agent_loop is agent_loop\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=60)
