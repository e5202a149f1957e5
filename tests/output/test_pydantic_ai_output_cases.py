"""The output cases pydantic-ai's tests/test_agent.py checks (`test_response_union_allow_str`,
`test_output_type_union_text_fallback` and its retries, `test_output_type_function`,
`test_continue_conversation_that_ended_in_output_tool_call`, a list of output types), on
`output_type` (docs/output.md).

Where ours differs by choice (docs/output.md, "What `T` can be"): a union is one
`final_result` tool whose value travels as `{"result": ...}`, where pydantic-ai offers a
tool per member; and `output_type` is one type, so pydantic-ai's list of outputs is
refused when the agent is made, saying to give a union."""

from __future__ import annotations

import re
from typing import Any, Literal

import pytest
from pydantic import BaseModel

from yiemagent import Agent, AgentTool, ConfigError, UserMessage
from yiemagent.ai.providers.faux import FauxModel, faux_message, faux_tool_call
from yiemagent.types import text_of


class Foo(BaseModel):
    a: int
    b: str


class Apple(BaseModel):
    kind: Literal["apple"] = "apple"
    color: str


class Banana(BaseModel):
    kind: Literal["banana"] = "banana"
    length: float


def faux_agent(fm: FauxModel, **kwargs: Any) -> Agent[Any]:
    return Agent(model=fm.model, stream_fn=fm.stream_fn, **kwargs)


async def test_a_union_with_str_takes_a_plain_text_answer() -> None:
    fm = FauxModel(["success (no tool calls)"])
    reply = await faux_agent(fm, output_type=str | Foo).prompt("Hello")

    assert reply.output == "success (no tool calls)"
    (offered,) = fm.contexts[0].tools
    assert offered.name == "final_result"
    assert offered.input_schema["required"] == ["result"]


async def test_a_union_with_str_takes_the_model_member_through_the_tool() -> None:
    fm = FauxModel([faux_message(faux_tool_call("final_result", {"result": {"a": 1, "b": "x"}}))])
    reply = await faux_agent(fm, output_type=str | Foo).prompt("Hello")
    assert reply.output == Foo(a=1, b="x")


@pytest.mark.parametrize(
    "text",
    ['{"result": {"kind": "apple", "color": "red"}}', '{"kind": "apple", "color": "red"}'],
)
async def test_a_union_of_models_given_as_text_is_validated(text: str) -> None:
    fm = FauxModel([text])
    reply = await faux_agent(fm, output_type=Apple | Banana).prompt("What fruit is it?")
    assert reply.output == Apple(color="red")


async def test_a_union_member_with_wrong_data_goes_back_and_the_retry_is_kept() -> None:
    fm = FauxModel(
        [
            '{"result": {"kind": "apple", "length": 12.0}}',
            '{"result": {"kind": "apple", "color": "green"}}',
        ]
    )
    reply = await faux_agent(fm, output_type=Apple | Banana).prompt("What fruit is it?")

    assert reply.output == Apple(color="green")
    assert fm.call_count == 2
    told = text_of(fm.contexts[1].messages[-1].content)
    assert "color" in told and "Field required" in told


async def test_an_output_function_is_called_with_the_arguments_the_model_gave() -> None:
    called: list[str] = []

    def get_weather(city: str) -> Foo:
        called.append(city)
        return Foo(a=28, b=f"sunny in {city}")

    fm = FauxModel([faux_message(faux_tool_call("final_result", {"city": "Mexico City"}))])
    reply = await faux_agent(fm, output_type=get_weather).prompt("Mexico City")

    assert reply.output == Foo(a=28, b="sunny in Mexico City")
    assert called == ["Mexico City"]
    (offered,) = fm.contexts[0].tools
    assert offered.input_schema["properties"]["city"]["type"] == "string"


class Result(BaseModel):
    dice_roll: int


async def test_a_conversation_that_ended_in_the_output_tool_goes_on() -> None:
    roll = AgentTool(
        "roll_dice", "Roll", "rolls", {"type": "object", "properties": {}}, lambda *a: "4"
    )
    fm = FauxModel(
        [
            faux_message(faux_tool_call("roll_dice", {})),
            faux_message(faux_tool_call("final_result", {"dice_roll": 4})),
            faux_message(faux_tool_call("final_result", {"dice_roll": 6})),
        ]
    )
    agent = faux_agent(fm, output_type=Result, tools=[roll])
    first = await agent.prompt("Roll me a dice.")
    second = await agent.prompt("Roll again.")

    assert (first.output, second.output) == (Result(dice_roll=4), Result(dice_roll=6))
    sent = fm.contexts[2].messages
    assert [m.role for m in sent] == [
        "user",
        "assistant",
        "toolResult",
        "assistant",
        "toolResult",
        "user",
    ]
    assert text_of(sent[4].content) == "Final result accepted."
    assert isinstance(sent[-1], UserMessage)


def get_weather_for(city: str) -> Foo:
    return Foo(a=1, b=city)


@pytest.mark.parametrize(
    ("several", "instead"),
    [
        ([Apple, Banana], r"give their union \(Apple \| Banana\)$"),
        ((Apple, Banana), r"give their union \(Apple \| Banana\)$"),
        ([get_weather_for, Foo], r"give an output function \(get_weather_for\) alone$"),
    ],
)
def test_a_list_of_output_types_is_refused_saying_what_to_give(several: Any, instead: str) -> None:
    fm = FauxModel([])
    with pytest.raises(
        ConfigError, match=r"^output_type takes one type, not a (list|tuple)"
    ) as raised:
        faux_agent(fm, output_type=several)
    assert re.search(instead, str(raised.value))


async def test_the_retry_names_a_union_by_its_members_short_names() -> None:
    fm = FauxModel(
        ['{"result": {"kind": "apple"}}', '{"result": {"kind": "apple", "color": "red"}}']
    )
    await faux_agent(fm, output_type=Apple | Banana).prompt("What fruit is it?")
    told = text_of(fm.contexts[1].messages[-1].content)
    assert told.startswith("Your answer is not a valid Apple | Banana:")
    assert __name__ not in told  # no module path reaches the model


@pytest.mark.parametrize(
    ("output_type", "name"),
    [
        (Apple, "Apple"),
        (Apple | Banana, "Apple | Banana"),
        (Apple | None, "Apple | None"),
        (list[Apple], "list[Apple]"),
        (dict[str, Apple | int], "dict[str, Apple | int]"),
        (Literal["a.b", "c"], "Literal['a.b', 'c']"),
    ],
)
def test_an_output_types_name_in_messages_is_short(output_type: Any, name: str) -> None:
    from yiemagent.types.output import OutputSpec

    assert OutputSpec(output_type).type_name == name
