"""openai-agents' tests/test_tracing_errors.py::test_run_propagates_exception_whose_str_raises
on the seeds' `llm_call` (DESIGN §6): an `llm_call` that raises an exception whose
`__str__` raises ends the run in error naming that exception, not the failure of writing
its text (the run said "RuntimeError: str exploded", the error met while describing the
real one)."""

from __future__ import annotations

from typing import Any

import pytest

from yiemagent import Agent, AgentRunError


class Unprintable(Exception):
    def __str__(self) -> str:
        raise RuntimeError("str exploded")


def unreachable_model(formatted: dict[str, Any]) -> dict[str, Any]:
    raise Unprintable


def refusing_model(formatted: dict[str, Any]) -> dict[str, Any]:
    raise ValueError("quota exceeded")


@pytest.mark.parametrize(
    ("llm_call", "said"),
    [
        (unreachable_model, "llm_call failed: Unprintable"),
        (refusing_model, "llm_call failed: ValueError: quota exceeded"),
    ],
)
async def test_a_failed_llm_call_ends_the_run_naming_its_error(llm_call: Any, said: str) -> None:
    agent = Agent(llm_call=llm_call)
    with pytest.raises(AgentRunError) as caught:
        await agent.prompt("hi")
    assert caught.value.message.error_message == said
    assert agent.state.error_message == said
