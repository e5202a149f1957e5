"""openai-agents' tests/test_tracing_errors.py::test_run_propagates_exception_whose_str_raises
on the Agent's guardrails (DESIGN §17): a guardrail that raises counts as tripped, also
when its exception cannot be turned into text (`__str__` raises) or its verdict cannot be
read as a truth value. Such a guardrail let the prompt and the answer through: the text of
its error was made while handling it, the check itself failed, and a failed check counted
as passed (fail open)."""

from __future__ import annotations

from typing import Any

import pytest

from yiemagent import GuardrailContext, GuardrailResult, GuardrailTripped

from ._kit import scripted


class Unprintable(Exception):
    def __str__(self) -> str:
        raise RuntimeError("no text for this error")


class NoTruth:
    def __bool__(self) -> bool:
        raise RuntimeError("neither true nor false")


def raises_unprintable(context: GuardrailContext) -> bool:
    raise Unprintable


async def raises_unprintable_async(context: GuardrailContext) -> bool:
    raise Unprintable


def tripped_neither_way(context: GuardrailContext) -> GuardrailResult:
    return GuardrailResult(NoTruth())  # type: ignore[arg-type]


@pytest.mark.parametrize("kind", ["input", "output"])
@pytest.mark.parametrize(
    ("guard", "reason"),
    [
        (raises_unprintable, "Unprintable"),
        (raises_unprintable_async, "Unprintable"),
        (tripped_neither_way, "RuntimeError: neither true nor false"),
    ],
)
async def test_a_guardrail_whose_failure_has_no_text_still_trips(
    kind: str, guard: Any, reason: str
) -> None:
    agent, _ = scripted("a", ["the launch code is 0000"], **{f"{kind}_guardrails": [guard]})
    with pytest.raises(GuardrailTripped) as caught:
        await agent.prompt("hello")
    assert (caught.value.kind, caught.value.guardrail) == (kind, guard.__name__)
    assert caught.value.reason == reason
    assert "0000" not in repr(agent.state.messages)
