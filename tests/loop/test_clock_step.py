"""The machine's wall clock stepped during a run (NTP correcting it, a resumed laptop, an
administrator's `date -s`): message timestamps follow the wall clock, but a duration is
measured on the monotonic clock, so a tool call or a model call is never stored as taking
a negative time or an hour it did not take. The step is made in-process, through
`time.time_ns`, which every message timestamp reads."""

from __future__ import annotations

import time
from typing import Any

import pytest

from yiemagent import Agent, AssistantMessage, ToolResultMessage
from yiemagent.ai.providers.faux import FauxModel, faux_message, faux_tool_call
from yiemagent.types import AssistantMessageEventStream, Context, Model, StreamOptions

from ._kit import make_tool

HOUR_NS = 3600 * 10**9
SANE_MS = 60_000
"""Longer than any call of these tests takes, even on a loaded machine (ms)."""


@pytest.fixture
def step_clock(monkeypatch: pytest.MonkeyPatch) -> Any:
    """`step(ns)` moves the wall clock by `ns` from now on."""
    real = time.time_ns
    offset = [0]
    monkeypatch.setattr(time, "time_ns", lambda: real() + offset[0])

    def step(ns: int) -> None:
        offset[0] += ns

    return step


@pytest.mark.parametrize("step_ns", [-HOUR_NS, HOUR_NS])
async def test_a_tool_call_during_which_the_clock_steps_keeps_its_true_duration(
    step_clock: Any, step_ns: int
) -> None:
    """A step back used to give the result a duration of minus an hour, one forward an
    hour."""

    async def stepping(tool_call_id: str, args: Any, signal: Any, on_update: Any) -> str:
        step_clock(step_ns)
        return "stepped"

    fm = FauxModel([faux_message(faux_tool_call("stepping", {})), "done"])
    agent = Agent(model=fm.model, stream_fn=fm.stream_fn, tools=[make_tool("stepping", stepping)])
    await agent.prompt("go")
    (result,) = [m for m in agent.state.messages if isinstance(m, ToolResultMessage)]
    assert result.duration_ms is not None and 0 <= result.duration_ms < SANE_MS, result


@pytest.mark.parametrize("step_ns", [-HOUR_NS, HOUR_NS])
async def test_a_model_call_during_which_the_clock_steps_keeps_its_true_duration(
    step_clock: Any, step_ns: int
) -> None:
    """A step forward used to give the answer a duration of an hour; one back, 0."""
    fm = FauxModel(["an answer"], delay_s=0.05)

    def stream_fn(
        model: Model, context: Context, options: StreamOptions | None = None
    ) -> AssistantMessageEventStream:
        stream = fm.stream_fn(model, context, options)
        step_clock(step_ns)  # after the provider made its message, before it ends
        return stream

    started = time.monotonic()
    answer = await Agent(model=fm.model, stream_fn=stream_fn).prompt("go")
    took_ms = (time.monotonic() - started) * 1000
    assert isinstance(answer, AssistantMessage) and answer.duration_ms is not None
    assert 0 < answer.duration_ms <= took_ms + 1, (answer.duration_ms, took_ms)
