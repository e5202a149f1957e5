"""The loop as a stream of events: `agent_loop` and `agent_loop_continue` start a run as a task
of the running event loop and return its `EventStream` at once (seed 002 agentLoop; DESIGN §3,
R-5.9: the stream always ends). The run itself is `agent_loop.run_agent_loop`.
"""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine, Sequence
from typing import Any

from yiemagent.loop.agent_loop import (
    as_prompts,
    check_can_continue,
    run_agent_loop,
    run_agent_loop_continue,
)
from yiemagent.types import (
    AbortSignal,
    AgentContext,
    AgentEndEvent,
    AgentEvent,
    AgentLoopConfig,
    AgentMessage,
    EventStream,
    StreamFn,
)
from yiemagent.types.callbacks import EventSink

__all__ = ["agent_loop", "agent_loop_continue"]

_tasks: set[asyncio.Task[None]] = set()  # keeps running loops referenced until they end


def agent_loop(
    prompts: Sequence[AgentMessage],
    context: AgentContext,
    config: AgentLoopConfig,
    signal: AbortSignal | None = None,
    stream_fn: StreamFn | None = None,
) -> EventStream[AgentEvent, list[AgentMessage]]:
    """Start a run with new prompts; returns at once the stream of its events (seed 002
    agentLoop).

    Must be called from a running event loop; the run is a task on it. The stream always ends
    with an `AgentEndEvent` (R-5.9); `await stream.result()` gives the messages the run added.
    """
    prompts = as_prompts(prompts)  # a bad prompt raises here, not inside the task
    stream = _create_agent_stream()
    _start(stream, run_agent_loop(prompts, context, config, _pusher(stream), signal, stream_fn))
    return stream


def agent_loop_continue(
    context: AgentContext,
    config: AgentLoopConfig,
    signal: AbortSignal | None = None,
    stream_fn: StreamFn | None = None,
) -> EventStream[AgentEvent, list[AgentMessage]]:
    """Continue from the transcript without a new prompt (retries, tool results already in).

    Raises:
        ConfigError: the transcript is empty or ends with an assistant message.
    """
    check_can_continue(context, config)
    stream = _create_agent_stream()
    _start(stream, run_agent_loop_continue(context, config, _pusher(stream), signal, stream_fn))
    return stream


def _create_agent_stream() -> EventStream[AgentEvent, list[AgentMessage]]:
    return EventStream(
        lambda event: event.type == "agent_end",
        lambda event: event.messages if isinstance(event, AgentEndEvent) else [],
    )


def _pusher(stream: EventStream[AgentEvent, list[AgentMessage]]) -> EventSink:
    return stream.push


def _start(
    stream: EventStream[AgentEvent, list[AgentMessage]],
    run: Coroutine[Any, Any, list[AgentMessage]],
) -> None:
    try:
        loop = asyncio.get_running_loop()
    except RuntimeError:
        run.close()
        raise RuntimeError(
            "agent_loop needs a running event loop: call it from async code "
            "(or use Agent.prompt_sync from plain code)"
        ) from None

    async def drive() -> None:
        messages: list[AgentMessage] = []
        try:
            messages = await run
        finally:
            stream.end(messages)  # a no-op after agent_end; ends it on cancellation

    task = loop.create_task(drive())
    _tasks.add(task)
    task.add_done_callback(_tasks.discard)
