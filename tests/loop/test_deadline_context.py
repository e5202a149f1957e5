"""A run keeps nothing of its caller's context once it is over. A tool's timeout timer,
cancelled when the call ends, sits in the event loop's heap until its time, and the tool
threads' wake-up reader lives as long as the loop: neither may hold a copy of the context
(and through it whatever the caller's context variables hold, such as a team run and its
agents)."""

from __future__ import annotations

import asyncio
import contextvars
import gc
import weakref

from yiemagent import AgentContext, AgentLoopConfig, AgentTool, UserMessage, run_agent_loop
from yiemagent.ai.providers.faux import FauxModel, faux_message, faux_tool_call

_HELD: contextvars.ContextVar[object] = contextvars.ContextVar("held")


class _Payload:
    """Something the caller's context holds."""


async def test_a_finished_call_s_timeout_timer_holds_no_copy_of_the_context() -> None:
    tool = AgentTool(
        name="quick",
        label="Quick",
        description="Returns at once.",
        input_schema={"type": "object"},
        execute=lambda *_: "ok",
        timeout_s=3600,  # the cancelled timer stays in the heap for an hour
    )
    fm = FauxModel([faux_message(faux_tool_call("quick", {})), "done"])

    async def run() -> weakref.ref[_Payload]:
        payload = _Payload()
        _HELD.set(payload)
        await run_agent_loop(
            [UserMessage("go")],
            AgentContext(tools=[tool]),
            AgentLoopConfig(model=fm.model),
            lambda _e: None,
            stream_fn=fm.stream_fn,
        )
        return weakref.ref(payload)

    task = asyncio.create_task(run())  # a task runs in a copy of the context
    ref = await task
    del task
    await asyncio.sleep(0)  # the loop lets go of the finished task
    gc.collect()
    assert ref() is None
