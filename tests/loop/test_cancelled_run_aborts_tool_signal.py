"""A run whose task is cancelled (`asyncio.wait_for`, `asyncio.timeout`, Ctrl-C under
`asyncio.run`) aborts the signal of each tool still running (R-4.5), as an abort does: a
plain function on its worker thread cannot be cancelled, and its signal is the only way to
tell it to stop. It used to run on to its own end, and a program's exit then waited for
its thread (openai-agents' test_agent_as_tool_streaming_reraises_parent_cancellation
checks that a cancelled parent stops its nested work)."""

from __future__ import annotations

import asyncio
import threading
import time
from typing import Any

import pytest

from tests.loop._kit import make_tool
from yiemagent import AgentContext, AgentLoopConfig, UserMessage, run_agent_loop
from yiemagent.ai.providers.faux import FauxModel, faux_message, faux_tool_call


@pytest.mark.parametrize("plain", [True, False], ids=["plain", "async"])
async def test_cancelling_the_run_aborts_the_signal_of_a_running_tool(plain: bool) -> None:
    started = threading.Event()
    stopped = threading.Event()
    seen: list[Any] = []

    def poll(signal: Any) -> str:
        seen.append(signal)
        started.set()
        end = time.monotonic() + 30
        while time.monotonic() < end and not signal.aborted:
            time.sleep(0.01)
        if signal.aborted:
            stopped.set()
        return "stopped" if signal.aborted else "ran 30 s"

    def execute_plain(call_id: str, args: Any, signal: Any, on_update: Any) -> str:
        return poll(signal)

    async def execute_async(call_id: str, args: Any, signal: Any, on_update: Any) -> str:
        seen.append(signal)
        started.set()
        try:
            await asyncio.sleep(30)
        except asyncio.CancelledError:
            stopped.set()  # an async tool is cancelled as well
            raise
        return "ran 30 s"

    tool = make_tool("work", execute_plain if plain else execute_async)
    fm = FauxModel([faux_message(faux_tool_call("work", {})), "never asked"])
    context = AgentContext("", [], [tool])
    run = asyncio.ensure_future(
        run_agent_loop(
            [UserMessage("go")],
            context,
            AgentLoopConfig(model=fm.model),
            lambda event: None,
            None,
            fm.stream_fn,
        )
    )
    assert await asyncio.to_thread(started.wait, 10)
    run.cancel()
    with pytest.raises(asyncio.CancelledError):
        await run

    assert await asyncio.to_thread(stopped.wait, 10)  # long before the tool's 30 s
    assert seen[0].aborted and seen[0].reason == "the run's task was cancelled"
    assert fm.call_count == 1
