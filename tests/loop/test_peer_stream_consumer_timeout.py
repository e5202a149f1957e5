"""openai-agents' tests/test_cancel_streaming.py
(test_stream_events_respects_asyncio_timeout_cancellation, test_cancel_prevents_further_events)
on `agent_loop`'s EventStream (DESIGN §3, R-5.1): a consumer may give up waiting for the
next event (`asyncio.wait_for` on `__anext__`) and come back; a wait that timed out loses
no event and moves none. Giving up waiting does not stop the run: aborting its signal
does, and then the stream ends with `agent_end`."""

from __future__ import annotations

import asyncio
from typing import Any

from yiemagent import AbortSignal, AgentContext, AgentLoopConfig, UserMessage, agent_loop
from yiemagent.ai.providers.faux import FauxModel
from yiemagent.types import AgentEndEvent, EventStream

ANSWER = "a slow answer written in many small chunks"


def slow_run(signal: AbortSignal | None = None) -> tuple[EventStream[Any, Any], FauxModel]:
    """The run's stream, and its faux model (to be held while the run uses it)."""
    fm = FauxModel([ANSWER], delay_s=0.02, chunk_size=2)
    context = AgentContext("be brief", [], [])
    config = AgentLoopConfig(model=fm.model)
    return agent_loop([UserMessage("go")], context, config, signal, fm.stream_fn), fm


def shape(event: Any) -> tuple[Any, ...]:
    inner = getattr(event, "assistant_message_event", None)
    return (event.type, getattr(inner, "delta", None))


async def test_a_wait_that_timed_out_loses_no_event() -> None:
    stream, fm = slow_run()
    whole = [shape(e) async for e in stream]

    stream, fm = slow_run()
    events = stream.__aiter__()
    seen: list[tuple[Any, ...]] = []
    timeouts = 0
    while True:
        try:
            seen.append(shape(await asyncio.wait_for(events.__anext__(), 0.005)))
        except TimeoutError:
            timeouts += 1
        except StopAsyncIteration:
            break
    assert timeouts > 0 and fm.call_count == 1
    assert seen == whole
    assert "".join(d for kind, d in seen if kind == "message_update" and d) == ANSWER


async def test_after_giving_up_waiting_an_abort_ends_the_run_and_its_stream() -> None:
    signal = AbortSignal()
    stream, fm = slow_run(signal)
    events = stream.__aiter__()
    first = await events.__anext__()
    assert first.type == "agent_start"
    try:
        while True:
            await asyncio.wait_for(events.__anext__(), 0.005)
    except TimeoutError:
        pass
    signal.abort("the consumer gave up")
    rest = [e async for e in events]
    end = rest[-1]
    assert isinstance(end, AgentEndEvent) and end.reason == "aborted"
    messages = await asyncio.wait_for(stream.result(), 10)
    assert messages[-1].stop_reason == "aborted"  # type: ignore[union-attr]
    assert fm.call_count == 1


async def test_a_run_aborted_before_it_starts_asks_the_model_nothing() -> None:
    # openai-agents' test_cancel_before_streaming
    signal = AbortSignal()
    signal.abort("before")
    stream, fm = slow_run(signal)

    kinds = [e.type async for e in stream]

    assert fm.call_count == 0
    assert kinds[0] == "agent_start" and kinds[-1] == "agent_end"
    messages = await stream.result()
    assert [m.role for m in messages] == ["user", "assistant"]
    assert messages[-1].stop_reason == "aborted"  # type: ignore[union-attr]
