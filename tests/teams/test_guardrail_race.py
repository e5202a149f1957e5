"""Several guardrails of one kind (DESIGN §17) run concurrently, and the first to trip
decides, as in other frameworks' suites: the run does not wait for a slower one, which is
cancelled; when several have tripped by the time they are looked at, list order names the
one reported."""

from __future__ import annotations

import asyncio

import pytest

from yiemagent import GuardrailContext, GuardrailResult, GuardrailTripped

from ._kit import scripted


class Stuck:
    """An async guardrail that would never answer; records that it was cancelled."""

    def __init__(self) -> None:
        self.cancelled = False

    async def __call__(self, context: GuardrailContext) -> None:
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            self.cancelled = True
            raise


async def refuse(context: GuardrailContext) -> GuardrailResult:
    await asyncio.sleep(0.01)
    return GuardrailResult(True, "refused")


@pytest.mark.parametrize("kind", ["input", "output"])
async def test_the_first_trip_ends_the_run_without_waiting_for_the_others(kind: str) -> None:
    stuck = Stuck()
    agent, _ = scripted("guarded", ["an answer"], **{f"{kind}_guardrails": [stuck, refuse]})

    with pytest.raises(GuardrailTripped) as caught:
        await asyncio.wait_for(agent.prompt("hello"), 30)

    assert (caught.value.kind, caught.value.guardrail) == (kind, "refuse")
    await asyncio.sleep(0)
    assert stuck.cancelled


async def test_guardrails_that_trip_together_are_reported_in_list_order() -> None:
    async def second(context: GuardrailContext) -> bool:
        return True

    async def first(context: GuardrailContext) -> bool:
        return True

    agent, _ = scripted("guarded", ["an answer"], output_guardrails=[first, second])
    with pytest.raises(GuardrailTripped) as caught:
        await agent.prompt("hello")
    assert caught.value.guardrail == "first"
