"""A function as `output_type`, as pydantic-ai's output functions (tests/test_agent.py
`test_output_type_function`, `test_output_type_function_with_retry`,
`test_output_type_async_function`): the model calls the output tool with the function's
arguments, pydantic checks them and calls it, and its return value is the output; an error
it raises goes back to the model like any invalid value. An async function is refused when
the spec is made: pydantic would call it and hand back a coroutine nobody awaits. A type's
own validator is heard by the model the same way (`test_result_pydantic_model_validation_error`)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from pydantic import BaseModel, field_validator

from yiemagent import ConfigError, GuardrailTripped, ToolResultMessage, UserMessage
from yiemagent.ai.providers.faux import FauxModel, faux_message, faux_tool_call
from yiemagent.types import OutputSpec, text_of

from .test_output_type_faux import agent_for


def capital(city: str, country: str) -> str:
    """The capital of a country.

    Args:
        city: the capital's name.
        country: the country.
    """
    if city == "Mexico":
        raise ValueError(f"{city!r} is a country; give its capital")
    return f"{city}, capital of {country}"


def reply(**args: str) -> object:
    return faux_message(faux_tool_call("final_result", dict(args)))


async def test_a_function_is_offered_by_its_arguments_and_its_value_is_the_output() -> None:
    fm = FauxModel([reply(city="Paris", country="France")])
    agent = agent_for(fm, output_type=capital)
    answer = await agent.prompt("capital of France?")
    assert answer.output == "Paris, capital of France"
    schema = fm.contexts[0].tools[0].input_schema
    assert schema["required"] == ["city", "country"]


async def test_an_error_the_function_raises_goes_back_to_the_model() -> None:
    fm = FauxModel(
        [reply(city="Mexico", country="Mexico"), reply(city="Mexico City", country="Mexico")]
    )
    agent = agent_for(fm, output_type=capital)
    answer = await agent.prompt("capital of Mexico?")
    assert answer.output == "Mexico City, capital of Mexico" and fm.call_count == 2
    told = fm.contexts[1].messages[-1]
    assert isinstance(told, ToolResultMessage) and told.is_error
    assert "'Mexico' is a country; give its capital" in text_of(told.content)


async def async_capital(city: str) -> str:
    return city


class AsyncCall:
    async def __call__(self, city: str) -> str:
        return city


@pytest.mark.parametrize("function", [async_capital, AsyncCall()], ids=["def", "object"])
def test_an_async_function_is_refused_when_the_spec_is_made(function: object) -> None:
    with pytest.raises(ConfigError, match="is an async function, whose value would be a"):
        OutputSpec(function)  # type: ignore[call-overload]


class Bar(BaseModel):
    a: int
    b: str

    @field_validator("b")
    @classmethod
    def check_b(cls, v: str) -> str:
        if v == "foo":
            raise ValueError("must not be foo")
        return v


@pytest.mark.parametrize("mode", ["tool", "native"])
async def test_a_validator_of_the_type_is_heard_by_the_model(mode: str) -> None:
    # pydantic-ai test_result_pydantic_model_validation_error: the schema lets "foo" through,
    # the type's own validator does not; its text goes back and the model fixes it
    def answer(b: str) -> Any:
        if mode == "native":
            return json.dumps({"a": 1, "b": b})
        return faux_message(faux_tool_call("final_result", {"a": 1, "b": b}))

    fm = FauxModel([answer("foo"), answer("bar")])
    agent = agent_for(fm, output_type=OutputSpec(Bar, mode=mode))  # type: ignore[arg-type]
    reply = await agent.prompt("hello")
    assert reply.output == Bar(a=1, b="bar") and fm.call_count == 2
    told = fm.contexts[1].messages[-1]
    assert isinstance(told, ToolResultMessage if mode == "tool" else UserMessage)
    assert "$.b: Value error, must not be foo" in text_of(told.content)


async def test_a_function_runs_once_per_output_beside_guardrails_and_a_second_call() -> None:
    """An output function may act (save, send): it runs once for the output. The output
    guardrails read its value before the output tool runs, and a reply may give the output
    twice (the second is not used); neither runs it again."""
    saved: list[str] = []

    def save(note: str, copies: int) -> str:
        saved.append(note)
        return note.upper() * copies

    seen: list[Any] = []

    def guard(context: Any) -> bool:
        seen.append(context.output)
        return False

    twice = faux_message(
        faux_tool_call("final_result", {"note": "first", "copies": "2"}),  # "2": repaired
        faux_tool_call("final_result", {"note": "second", "copies": 1}),
    )
    fm = FauxModel([twice])
    agent = agent_for(fm, output_type=save, output_guardrails=[guard])
    reply = await agent.prompt("save a note")
    assert reply.output == "FIRSTFIRST"
    assert saved == ["first"]
    assert seen == ["FIRSTFIRST"]


async def test_a_tripped_guardrail_keeps_no_value_for_a_later_run() -> None:
    """The value the guardrails read waits for its call; a call that never runs (the
    guardrail refused it) leaves nothing behind, so the same call later runs the function."""
    saved: list[str] = []

    def save(note: str) -> str:
        saved.append(note)
        return note

    verdicts = iter([True, False])
    same = faux_message(faux_tool_call("final_result", {"note": "n"}, id="call_same"))
    fm = FauxModel([same, same])
    agent = agent_for(fm, output_type=save, output_guardrails=[lambda _c: next(verdicts)])
    with pytest.raises(GuardrailTripped):
        await agent.prompt("one")
    assert saved == ["n"]  # the guardrail read its value
    reply = await agent.prompt("again")
    assert reply.output == "n" and saved == ["n", "n"]


@pytest.mark.parametrize("mode", ["tool", "native"])
async def test_a_text_answer_runs_the_function_once_beside_guardrails(mode: str) -> None:
    """A text answer holding the arguments' JSON (a prose answer in tool mode, the answer in
    native mode): the guardrails read the function's value, and the run's output is that
    value; the function is not run again for it."""
    saved: list[str] = []

    def save(note: str) -> str:
        saved.append(note)
        return note.upper()

    seen: list[Any] = []

    def guard(context: Any) -> bool:
        seen.append(context.output)
        return False

    fm = FauxModel([json.dumps({"note": "x"})])
    spec = OutputSpec(save, mode=mode)  # type: ignore[call-overload]
    agent = agent_for(fm, output_type=spec, output_guardrails=[guard])
    reply = await agent.prompt("save a note")
    assert (reply.output, saved, seen) == ("X", ["x"], ["X"])


async def test_an_error_the_function_raises_beside_guardrails_is_raised_once() -> None:
    """A function that refuses its arguments is run once for them, not once for the
    guardrails and again for the run; its error goes back to the model as without them."""
    calls: list[str] = []

    def counted(city: str, country: str) -> str:
        calls.append(city)
        return capital(city, country)

    answers = [
        json.dumps({"city": "Mexico", "country": "Mexico"}),
        reply(city="Lima", country="Peru"),
    ]
    fm = FauxModel(answers)
    agent = agent_for(fm, output_type=counted, output_guardrails=[lambda _c: False])
    answer = await agent.prompt("capital of Mexico?")
    assert answer.output == "Lima, capital of Peru"
    assert calls == ["Mexico", "Lima"]
    assert "'Mexico' is a country; give its capital" in text_of(fm.contexts[1].messages[-1].content)


async def test_a_guardrail_that_trips_on_a_text_answer_keeps_no_value_for_a_later_run() -> None:
    """The function ran for the guardrails (they check what the run would return), and the
    trip discards its value: the same answer in a later run runs the function again."""
    saved: list[str] = []

    def save(note: str) -> str:
        saved.append(note)
        return note

    verdicts = iter([True, False])
    same = json.dumps({"note": "n"})
    fm = FauxModel([same, same])
    agent = agent_for(fm, output_type=save, output_guardrails=[lambda _c: next(verdicts)])
    with pytest.raises(GuardrailTripped):
        await agent.prompt("one")
    assert saved == ["n"]
    reply = await agent.prompt("again")
    assert reply.output == "n" and saved == ["n", "n"]
