"""What the model is told about an invalid structured output (DESIGN §14), in the shapes
other frameworks' users reported trouble with: a model with a union field, a union
member that does not exist, and a big nested object with many problems. Each invalid
value goes back to the model with its problems, in both modes (the output tool and the
native JSON answer), and the next valid value is the run's output."""

from __future__ import annotations

import json
from typing import Annotated, Any, Literal

import pytest
from pydantic import BaseModel, Field, create_model

from yiemagent import Agent
from yiemagent.ai.providers.faux import FauxModel, faux_message, faux_tool_call
from yiemagent.types import OutputSpec, text_of

MODES = ["tool", "native"]


class Plan(BaseModel):
    steps: list[str]


class Response(BaseModel):
    response: str


class Replan(BaseModel):
    """The action the model picks: answer the user, or plan more steps."""

    action: Response | Plan


class Apple(BaseModel):
    kind: Literal["apple"]
    color: str


class Banana(BaseModel):
    kind: Literal["banana"]
    length: float


Fruit = Annotated[Apple | Banana, Field(discriminator="kind")]

FIELDS = 20
NUMBERS: dict[str, Any] = {f"n{i}": (int, ...) for i in range(FIELDS)}
Record: Any = create_model("Record", note=(str, ...), **NUMBERS)
"""A long text and twenty required numbers."""


class Filing(BaseModel):
    record: Record


def reply(mode: str, value: Any) -> Any:
    """The model's reply carrying `value`: an output tool call, or the JSON as the answer."""
    if mode == "tool":
        return faux_message(faux_tool_call("final_result", value))
    return json.dumps(value)


async def run(mode: str, output_type: Any, *values: Any) -> tuple[Any, FauxModel]:
    """A prompt on the faux model replying with `values` in turn; (output, the faux model)."""
    fm = FauxModel([reply(mode, value) for value in values])
    agent: Agent[Any] = Agent(model=fm.model, stream_fn=fm.stream_fn)
    spec = OutputSpec(output_type, mode=mode)  # type: ignore[arg-type]
    answer = await agent.prompt("go", output_type=spec)
    return answer.output, fm


def told(fm: FauxModel, call: int) -> str:
    """What the model was told before its call number `call` (from 0): the last message."""
    return text_of(fm.contexts[call].messages[-1].content)


@pytest.mark.parametrize("mode", MODES)
async def test_a_union_field_takes_either_member_and_a_wrong_key_is_told(mode: str) -> None:
    output, _ = await run(mode, Replan, {"action": {"steps": ["search", "read"]}})
    assert output == Replan(action=Plan(steps=["search", "read"]))
    output, fm = await run(
        mode, Replan, {"action": {"Steps": ["x"]}}, {"action": {"response": "hi"}}
    )
    assert output == Replan(action=Response(response="hi"))
    assert "$.action" in told(fm, 1) and "Steps" in told(fm, 1)


@pytest.mark.parametrize("mode", MODES)
async def test_a_union_member_that_does_not_exist_is_asked_again(mode: str) -> None:
    """A discriminator naming no member is an invalid value like any other: the model is
    told and asked again, never an error of the framework's own."""
    cherry = {"result": {"kind": "cherry", "color": "red"}}
    apple = {"result": {"kind": "apple", "color": "red"}}
    output, fm = await run(mode, Fruit, cherry, apple)
    assert output == Apple(kind="apple", color="red")
    assert "cherry" in told(fm, 1)


@pytest.mark.parametrize("mode", MODES)
async def test_many_problems_in_a_big_nested_object_are_told_briefly(mode: str) -> None:
    """Twenty fields missing from an object holding 10 000 characters: the problems are
    listed one a line and the object is echoed at most once, cut, not once for each
    problem, so what the model reads stays a small part of what it sent."""
    valid = {"record": {"note": "ok", **{f"n{i}": i for i in range(FIELDS)}}}
    output, fm = await run(mode, Filing, {"record": {"note": "z" * 10_000}}, valid)
    assert output == Filing.model_validate(valid)
    feedback = told(fm, 1)
    lines = feedback.splitlines()
    assert sum(line.startswith("- $.record") and "n0" in line for line in lines) == 1
    assert sum("z" * 10 in line for line in lines) <= 1
    assert len(feedback) < 5_000, len(feedback)
