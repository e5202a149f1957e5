"""Typed answers, their validation errors and retries, as instructor checks its own
(tests/llm/test_openai/test_retries.py, tests/test_simple_types.py,
tests/test_json_extraction*.py, tests/test_function_calls.py), through
`Agent(output_type=...)` on the faux provider.

instructor extracts JSON from any text (the first `{...}` it finds, a malformed ```` ``json ````
fence included); ours reads the answer, or its ```json fence, and answers anything else with
the problem so the model gives the value again (docs/output.md, "Answers in text, as peers
read them"). Like instructor's `IncompleteOutputException`, an answer cut off at the output
token limit is never taken as the value."""

from __future__ import annotations

import enum
from typing import Annotated, Any, Literal

import pytest
from pydantic import AfterValidator, BaseModel, Field, model_validator

from yiemagent import (
    Agent,
    AgentRunError,
    AssistantMessage,
    TextContent,
    ToolResultMessage,
    Usage,
    UserMessage,
)
from yiemagent.ai.providers.faux import FauxModel, faux_message, faux_tool_call
from yiemagent.types import text_of

UPPERCASE = "All letters in the name should be in uppercase (e.g., TOM, JONES)"


def uppercase(value: str) -> str:
    if not value.isupper():
        raise ValueError(UPPERCASE)
    return value.strip()


class UserDetail(BaseModel):
    name: Annotated[str, AfterValidator(uppercase)] = Field(description="The name of the user")
    age: int


class Range(BaseModel):
    low: int
    high: int

    @model_validator(mode="after")
    def ordered(self) -> Range:
        if self.low > self.high:
            raise ValueError("low must not exceed high")
        return self


def typed_agent(fm: FauxModel, output_type: Any, **kwargs: Any) -> Agent[Any]:
    return Agent(model=fm.model, stream_fn=fm.stream_fn, output_type=output_type, **kwargs)


def last_read(fm: FauxModel) -> str:
    """The text of the last message the model read in its last call."""
    return text_of(fm.contexts[-1].messages[-1].content)


def cut_off(text: str) -> AssistantMessage:
    return AssistantMessage([TextContent(text)], stop_reason="length")


async def test_a_field_validator_error_goes_back_to_the_output_tool() -> None:
    # test_upper_case: "jason" fails the validator, the model reads why and sends "JASON"
    fm = FauxModel(
        [
            faux_message(faux_tool_call("final_result", {"name": "jason", "age": 12})),
            faux_message(faux_tool_call("final_result", {"name": "JASON", "age": 12})),
        ]
    )
    reply = await typed_agent(fm, UserDetail).prompt("Extract `jason is 12`")
    assert reply.output == UserDetail(name="JASON", age=12)
    told = fm.contexts[1].messages[-1]
    assert isinstance(told, ToolResultMessage) and told.is_error
    assert "$.name" in text_of(told.content) and UPPERCASE in text_of(told.content)
    assert '"jason"' in text_of(told.content)  # the value it refused


async def test_a_field_validator_error_goes_back_for_a_text_answer() -> None:
    fm = FauxModel(['{"name": "jason", "age": 12}', '{"name": "JASON", "age": 12}'])
    reply = await typed_agent(fm, UserDetail).prompt("Extract `jason is 12`")
    assert reply.output == UserDetail(name="JASON", age=12)
    assert isinstance(fm.contexts[1].messages[-1], UserMessage)
    assert UPPERCASE in last_read(fm) and "$.name" in last_read(fm)


async def test_a_model_validator_error_names_the_whole_value() -> None:
    fm = FauxModel(
        [
            faux_message(faux_tool_call("final_result", {"low": 5, "high": 1})),
            faux_message(faux_tool_call("final_result", {"low": 1, "high": 5})),
        ]
    )
    reply = await typed_agent(fm, Range).prompt("a range")
    assert reply.output == Range(low=1, high=5)
    assert "- $: Value error, low must not exceed high" in last_read(fm)


async def test_retries_used_up_raise_with_the_last_problem_and_every_attempt_kept() -> None:
    # instructor's InstructorRetryException carries n_attempts and the total usage
    attempt = '{"name": "jason", "age": 12}'
    spent = Usage(input=10, output=5, total_tokens=15)
    answers: list[Any] = [AssistantMessage([TextContent(attempt)], usage=spent) for _ in range(2)]
    fm = FauxModel([*answers, '{"name": "TOM", "age": 3}'])
    agent = typed_agent(fm, UserDetail, output_retries=1)
    with pytest.raises(AgentRunError) as caught:
        await agent.prompt("Extract `jason is 12`")
    assert fm.call_count == 2  # the first answer and one retry
    assert "no valid UserDetail output after 1 retry" in str(caught.value)
    assert UPPERCASE in str(caught.value)
    kept = [m for m in caught.value.new_messages if isinstance(m, AssistantMessage)]
    assert sum(m.usage.total_tokens for m in kept) == 30
    # the agent stays usable, and the next run may succeed
    assert (await agent.prompt("again")).output == UserDetail(name="TOM", age=3)


async def test_no_retries_ends_at_the_first_invalid_value() -> None:
    fm = FauxModel(['{"name": "jason", "age": 12}', '{"name": "JASON", "age": 12}'])
    with pytest.raises(AgentRunError, match="after 0 retries"):
        await typed_agent(fm, UserDetail, output_retries=0).prompt("x")
    assert fm.call_count == 1


async def test_a_provider_error_is_not_spent_as_an_output_retry() -> None:
    # test_custom_retry_response_error: a wrong API key ends the call with its own error,
    # and no completion was validated
    failed = AssistantMessage([], stop_reason="error", error_message="401 invalid api key")
    fm = FauxModel([failed, '{"name": "JASON", "age": 12}'])
    with pytest.raises(AgentRunError, match="401 invalid api key") as caught:
        await typed_agent(fm, UserDetail).prompt("Jason is 25 years old")
    assert fm.call_count == 1
    assert "valid UserDetail" not in str(caught.value)


@pytest.mark.parametrize(
    ("output_type", "text"),
    [(str, "The capital of France is Par"), (int, "12"), (list[int], "[1, 2")],
    ids=["str", "int", "list"],
)
async def test_an_answer_cut_off_at_the_output_limit_is_not_the_value(
    output_type: Any, text: str
) -> None:
    # test_incomplete_output_exception: finish_reason "length" is never a whole value,
    # though "12" of "123" reads as a valid int; the model is asked again
    whole = {str: "The capital of France is Paris.", int: "123", list[int]: "[1, 2, 3]"}
    fm = FauxModel([cut_off(text), whole[output_type]])
    reply = await typed_agent(fm, output_type).prompt("x")
    assert fm.call_count == 2
    assert reply.output == {str: whole[str], int: 123, list[int]: [1, 2, 3]}[output_type]
    assert "cut off at the output token limit" in last_read(fm)
    assert text in last_read(fm)


@pytest.mark.parametrize("text", ['{"name": "JASON", "age": 12}', "[1, 2, 3]"])
async def test_a_whole_object_or_array_at_the_output_limit_is_the_value(text: str) -> None:
    # a grammar can close the value on the last token the limit allows: its closing
    # bracket is there, which no cut leaves, so it is read as the answer, not asked again
    output_type: Any = UserDetail if text.startswith("{") else list[int]
    fm = FauxModel([cut_off(text)])
    reply = await typed_agent(fm, output_type).prompt("x")
    assert fm.call_count == 1
    assert reply.output == (UserDetail(name="JASON", age=12) if text[0] == "{" else [1, 2, 3])


async def test_answers_cut_off_every_time_end_the_run_saying_so() -> None:
    fm = FauxModel([cut_off('{"name": "JASON", "age": 1'), cut_off("{"), cut_off("")])
    with pytest.raises(AgentRunError, match="cut off at the output token limit"):
        await typed_agent(fm, UserDetail).prompt("x")
    assert fm.call_count == 3


async def test_a_bare_value_is_told_its_own_problem_not_the_wrapper() -> None:
    # a bare 0 for a positive int: the model reads that 0 is not greater than 0
    positive = Annotated[int, Field(gt=0)]
    fm = FauxModel(["0", "3"])
    reply = await typed_agent(fm, positive).prompt("how many?")
    assert reply.output == 3
    told = last_read(fm)
    assert "greater than 0" in told and "expected an object" not in told
    assert told.startswith("Your answer is not a valid int:")  # no Annotated metadata


class Color(enum.Enum):
    RED = "red"
    BLUE = "blue"


@pytest.mark.parametrize(
    ("output_type", "text", "value"),
    [
        (Color, '"red"', Color.RED),
        (Literal["a", "b"], '"b"', "b"),
        (bool, "true", True),
        (int | str, '"x"', "x"),
        (list[int], "[1, 2]", [1, 2]),
        (float, "1", 1.0),
        (Annotated[int, Field(ge=1)], '{"result": 4}', 4),
    ],
    ids=["enum", "literal", "bool", "union", "list", "float", "annotated"],
)
async def test_simple_types_are_answers_too(output_type: Any, text: str, value: Any) -> None:
    # test_simple_types: enum, literal, union, annotated types answer directly
    fm = FauxModel([text])
    reply = await typed_agent(fm, output_type).prompt("x")
    assert reply.output == value and type(reply.output) is type(value)
    assert fm.call_count == 1


@pytest.mark.parametrize(
    ("text", "name"),
    [
        ('```\n{"name": "TOM", "age": 1}\n```', "TOM"),  # a fence with no language
        ('```json\n{"name": "HE SAID \\"HI\\"", "age": 1}\n```', 'HE SAID "HI"'),
        ('{"name": "こんにちは 😀", "age": 1}', "こんにちは 😀"),
        ('{"name": "C:\\\\USERS\\\\TEST", "age": 1}', "C:\\USERS\\TEST"),
    ],
    ids=["fence", "escaped-quotes", "unicode", "backslashes"],
)
async def test_json_answers_instructor_extracts_are_read(text: str, name: str) -> None:
    class Named(BaseModel):
        name: str
        age: int

    fm = FauxModel([text])
    reply = await typed_agent(fm, Named).prompt("x")
    assert reply.output == Named(name=name, age=1)


async def test_a_deeply_nested_answer_is_read() -> None:
    # test_complex_nested_structure
    class Inner(BaseModel):
        value: str

    class Deep(BaseModel):
        level1: dict[str, dict[str, dict[str, Inner]]]
        array: list[dict[str, Any]]

    text = (
        '```json\n{"level1": {"level2": {"level3": {"level4": {"value": "deep"}}}},'
        ' "array": [{"item": 1}, {"item": 2, "nested": [3, 4, [5, 6]]}]}\n```'
    )
    reply = await typed_agent(FauxModel([text]), Deep).prompt("x")
    assert reply.output is not None
    assert reply.output.level1["level2"]["level3"]["level4"].value == "deep"
    assert reply.output.array[1]["nested"][2][1] == 6


@pytest.mark.parametrize(
    "text",
    [
        '{"name": "TOM", // a comment\n "age": 1}',  # test_json_with_comments: not JSON
        '``json\n{"name": "TOM", "age": 1}\n``',  # test_malformed_codeblock
        'First: {"name": "TOM", "age": 1}\nSecond: {"name": "BOB", "age": 2}',
    ],
    ids=["comments", "malformed-fence", "two-objects"],
)
async def test_text_around_the_value_is_answered_and_asked_again(text: str) -> None:
    # instructor finds the braces in these; ours asks again (decision, docs/output.md)
    fm = FauxModel([text, '{"name": "TOM", "age": 1}'])
    reply = await typed_agent(fm, UserDetail).prompt("x")
    assert reply.output == UserDetail(name="TOM", age=1)
    assert fm.call_count == 2
    assert last_read(fm).startswith("Your answer is not a valid UserDetail:")
