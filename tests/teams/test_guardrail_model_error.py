"""openai-agents' tests/test_guardrails.py::test_model_error_cancels_parallel_input_guardrail_task
on the Agent (DESIGN §17). Input guardrails run beside the first model call, so that call
may fail while they still check. openai-agents then cancels them and raises the model's
error; here, by choice (docs/teams.md), the run waits for their verdict as it does for an
answer: a prompt that trips is reported as tripped whatever the model did, so the outcome
does not hang on which finished first. Either way no check is left running once `prompt`
has returned."""

from __future__ import annotations

import asyncio

import pytest

from yiemagent import AgentRunError, AssistantMessage, GuardrailContext, GuardrailTripped
from yiemagent.ai.providers.faux import faux_message

from ._kit import scripted


class Checking:
    """An async guardrail that answers `verdict` once `release` is set."""

    def __init__(self, verdict: bool) -> None:
        self.verdict = verdict
        self.started = asyncio.Event()
        self.release = asyncio.Event()
        self.finished = False

    async def __call__(self, context: GuardrailContext) -> bool:
        self.started.set()
        await self.release.wait()
        self.finished = True
        return self.verdict


def failing_while(guard: Checking) -> object:
    """A model reply that fails once `guard` is mid-check, then lets it answer."""

    async def reply(context: object) -> AssistantMessage:
        await asyncio.wait_for(guard.started.wait(), 20)
        asyncio.get_running_loop().call_later(0.1, guard.release.set)
        return faux_message(stop_reason="error", error_message="model boom")

    return reply


@pytest.mark.parametrize("trips", [False, True])
async def test_a_failed_first_call_waits_for_the_input_verdict(trips: bool) -> None:
    guard = Checking(verdict=trips)
    agent, fm = scripted("guarded", [failing_while(guard)], input_guardrails=[guard])

    with pytest.raises(AgentRunError) as caught:
        await asyncio.wait_for(agent.prompt("hello"), 20)

    assert guard.finished  # answered, not orphaned nor cancelled
    if trips:
        assert isinstance(caught.value, GuardrailTripped) and caught.value.guardrail == "Checking"
    else:
        assert not isinstance(caught.value, GuardrailTripped)
        assert "model boom" in str(caught.value)
    assert agent.state.active_run is False and fm.call_count == 1
