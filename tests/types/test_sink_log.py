"""A raising event sink is logged under the logger of the module that guards it."""

from __future__ import annotations

import pytest

from yiemagent import Agent
from yiemagent.ai.providers.faux import FauxModel
from yiemagent.types import AgentEvent


async def test_a_raising_on_event_is_logged_by_the_callbacks_module(
    caplog: pytest.LogCaptureFixture,
) -> None:
    def broken(event: AgentEvent) -> None:
        raise RuntimeError("sink broke")

    fm = FauxModel(["Hello."])
    agent = Agent("Answer.", model=fm.model, stream_fn=fm.stream_fn, on_event=broken)
    caplog.set_level("INFO", logger="yiemagent")
    assert (await agent.prompt("Hi")).text == "Hello."
    said = [r for r in caplog.records if "the run goes on" in r.getMessage()]
    assert said, "the raising sink was not logged"
    assert {r.name for r in said} == {"yiemagent.types.callbacks"}
    assert all(r.exc_info is not None and "sink broke" in str(r.exc_info[1]) for r in said)
