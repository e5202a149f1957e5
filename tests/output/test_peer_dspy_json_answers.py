"""Typed answers read from a model's text, as DSPy's JSONAdapter checks its own
(tests/adapters/test_json_adapter.py: mismatched fields, optional fields that fall back to
their defaults, a model call that raises, nested and Literal outputs), through
`Agent(output_type=...)` on the faux provider and the `llm_call` path.

DSPy repairs what it reads (`json_repair`): a Python literal, a trailing comma, JSON with
prose around it. Ours reads the first two as tool-call arguments are read, and answers
prose around the value with the problem, so the model gives the value again; that is
written in docs/output.md ("Answers in text, as peers read them")."""

from __future__ import annotations

import json
from typing import Any, Literal, TypeVar

import pytest
from pydantic import BaseModel

from yiemagent import Agent, AgentRunError, UserMessage
from yiemagent.ai.providers.faux import FauxModel
from yiemagent.types import text_of

T = TypeVar("T")


class Answer(BaseModel):
    answer: str
    note: str | None = "No note"
    maybe: str | None = None


class Address(BaseModel):
    city: str
    zip_code: str


class Profile(BaseModel):
    name: str
    addresses: list[Address]
    level: Literal["low", "high"]


def faux_agent(fm: FauxModel, output_type: type[T]) -> Agent[T]:
    return Agent(model=fm.model, stream_fn=fm.stream_fn, output_type=output_type)


async def test_missing_optional_fields_take_their_defaults() -> None:
    # test_missing_optional_output_fields_fall_back_to_defaults
    fm = FauxModel(['{"answer": "42"}'])
    reply = await faux_agent(fm, output_type=Answer).prompt("q")
    assert reply.output == Answer(answer="42", note="No note", maybe=None)
    assert fm.call_count == 1


async def test_mismatched_fields_are_named_each_retry_and_end_the_run() -> None:
    # test_json_adapter_parse_raise_error_on_mismatch_fields: DSPy raises AdapterParseError
    # naming the expected fields; ours tells the model, then ends the run saying why
    fm = FauxModel(['{"answer1": "Paris"}', '{"note": "present"}', '{"answer1": "Paris"}'])
    agent = faux_agent(fm, output_type=Answer)

    with pytest.raises(AgentRunError) as failed:
        await agent.prompt("What is the capital of France?")

    assert str(failed.value) == (
        "The model gave no valid Answer output after 2 retries; the last problem:\n"
        "- $.answer: Field required"
    )
    assert fm.call_count == 3
    told = [m for m in fm.contexts[1].messages if isinstance(m, UserMessage)][-1]
    assert text_of(told.content).startswith("Your answer is not a valid Answer:\n- $.answer:")
    fm.add('{"answer": "Paris"}')
    assert (await agent.prompt("again?")).output == Answer(answer="Paris")  # still usable


async def test_a_python_literal_answer_is_read_and_prose_around_one_asked_for_again() -> None:
    # DSPy's json_repair reads {'answer': 'Paris'}, and so do we, as we read a tool call's
    # arguments; JSON with prose around it it reads by guessing, ours names the problem
    # and the model gives the JSON (docs/output.md)
    fm = FauxModel(["{'answer': 'Paris',}"])
    assert (await faux_agent(fm, output_type=Answer).prompt("q")).output == Answer(answer="Paris")
    assert fm.call_count == 1

    prose = 'The answer: {"answer": "Paris"}'
    fm = FauxModel([prose, '{"answer": "Paris"}'])
    reply = await faux_agent(fm, output_type=Answer).prompt("q")

    assert reply.output == Answer(answer="Paris")
    told = [m for m in fm.contexts[1].messages if isinstance(m, UserMessage)][-1]
    assert "the answer is not JSON" in text_of(told.content)
    assert json.dumps(prose) in text_of(told.content)  # the model sees what it wrote


async def test_a_fenced_answer_and_a_nested_one_with_a_literal() -> None:
    # test_json_adapter_format_exact_messages_with_nested_pydantic_output / _literal_and_enum
    value = (
        '```json\n{"name": "Ann", "level": "high",'
        ' "addresses": [{"city": "Oslo", "zip_code": "0150"}]}\n```'
    )
    bo = '{"name": "Bo", "level": "medium", "addresses": []}'
    fm = FauxModel([value, bo, bo, bo])
    agent = faux_agent(fm, output_type=Profile)

    first = await agent.prompt("who?")
    assert first.output == Profile(
        name="Ann", level="high", addresses=[Address(city="Oslo", zip_code="0150")]
    )
    with pytest.raises(AgentRunError, match=r"\$\.level: Input should be 'low' or 'high'"):
        await agent.prompt("and Bo?", output_type=Profile)


async def test_a_model_call_that_raises_ends_the_run_with_its_error() -> None:
    # test_error_message_on_json_adapter_failure: the model call's own error, named
    for error in (RuntimeError("RuntimeError!"), ValueError("ValueError!")):

        def llm_call(formatted: dict[str, Any], error: Exception = error) -> dict[str, Any]:
            raise error

        agent: Agent[Answer] = Agent(llm_call=llm_call, output_type=Answer)
        with pytest.raises(AgentRunError) as failed:
            await agent.prompt("Dummy question!")
        assert str(failed.value) == f"llm_call failed: {type(error).__name__}: {error}"
