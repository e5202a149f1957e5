"""The `@tool` cases strands-agents checks of its decorator (tests/strands/tools/
test_decorator.py), on ours through an Agent: descriptions from `Annotated` text and from
the docstring, a nullable parameter without a default kept required, what each kind of
return value reads as (a string as it is, a pydantic model as its JSON, a value with no
JSON form as its text), union parameters whose values are left as sent, each validation
problem named, and an async generator.

Where ours differs by choice: an async generator's items are the result as one JSON list,
read when the tool ends (docs/tools.md "Return values"); strands streams each item as a
progress event and keeps the last one as the result. Progress here is `on_update`."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from enum import StrEnum
from typing import Annotated, Any

import pytest
from hypothesis import given, settings, strategies as st
from pydantic import BaseModel, ConfigDict

from yiemagent import Agent, ToolResultMessage, tool, validate_arguments_against_schema
from yiemagent.ai.providers.faux import FauxModel, faux_message, faux_tool_call
from yiemagent.types import text_of


async def run_calls(tools: list[Any], *calls: tuple[str, dict[str, Any]]) -> list[tuple[bool, str]]:
    """(is_error, text) of each call's result, the calls made in one model reply."""
    fm = FauxModel([faux_message(*(faux_tool_call(n, a) for n, a in calls)), "done"])
    agent = Agent(model=fm.model, stream_fn=fm.stream_fn, tools=tools)
    await agent.prompt("go")
    return [
        (m.is_error, text_of(m.content))
        for m in agent.state.messages
        if isinstance(m, ToolResultMessage)
    ]


def test_annotated_text_describes_a_parameter_and_wins_over_the_docstring() -> None:
    @tool
    def annotated_tool(
        name: Annotated[str, "The user's full name"],
        age: Annotated[int, "The user's age in years"],
        city: str,
        param: Annotated[str, "Description from annotation"],
    ) -> str:
        """Tool with annotated parameters.

        Args:
            city: The user's city (from docstring)
            param: Description from docstring (should be overridden)
        """
        return f"{name}, {age}, {city}"

    properties = annotated_tool.input_schema["properties"]
    assert properties["name"]["description"] == "The user's full name"
    assert properties["age"]["description"] == "The user's age in years"
    assert properties["city"]["description"] == "The user's city (from docstring)"
    assert properties["param"]["description"] == "Description from annotation"
    assert set(annotated_tool.input_schema["required"]) == {"name", "age", "city", "param"}


class Priority(StrEnum):
    HIGH = "high"
    MEDIUM = "medium"
    LOW = "low"


def prioritized_task(description: str, priority: Priority | None) -> str:
    """Create a task with optional priority.

    Args:
        description: Task description
        priority: Optional priority level
    """
    return f"{description}: {priority.value if priority else None}"


async def test_a_nullable_parameter_without_a_default_stays_required_and_takes_null() -> None:
    schema = tool(prioritized_task).input_schema
    assert schema["required"] == ["description", "priority"]
    assert schema["properties"]["priority"]["anyOf"] == [
        {"$ref": "#/$defs/Priority"},
        {"type": "null"},
    ]
    assert schema["$defs"]["Priority"]["enum"] == ["high", "medium", "low"]
    got = await run_calls(
        [prioritized_task],
        ("prioritized_task", {"description": "a", "priority": None}),
        ("prioritized_task", {"description": "b", "priority": "high"}),
        ("prioritized_task", {"description": "c", "priority": "urgent"}),
    )
    assert got[:2] == [(False, "a: None"), (False, "b: high")]
    assert got[2][0] and "$.priority" in got[2][1]


def test_an_optional_parameter_with_a_default_is_not_required() -> None:
    @tool
    def my_tool(name: str, tag: str | None = None) -> str:
        """A tool.

        Args:
            name: The name
            tag: An optional tag
        """
        return f"{name}: {tag}"

    assert my_tool.input_schema["required"] == ["name"]


class MyModel(BaseModel):
    name: str
    count: int


class NonSerializable:
    def __repr__(self) -> str:
        return "NonSerializable()"

    def __str__(self) -> str:
        return "NonSerializable()"


class HoldsOne(BaseModel):
    model_config = ConfigDict(arbitrary_types_allowed=True)
    data: NonSerializable


class CustomClass:
    def __str__(self) -> str:
        return "custom_str_repr"


def string_tool() -> str:
    """Returns a string."""
    return "hello world"


def pydantic_tool() -> MyModel:
    """Returns a Pydantic model."""
    return MyModel(name="test", count=5)


def holding_tool() -> HoldsOne:
    """Returns a model with a field that has no JSON form."""
    return HoldsOne(data=NonSerializable())


def custom_tool() -> Any:
    """Returns an object that has no JSON form."""
    return CustomClass()


async def test_each_kind_of_return_value_reads_as_the_model_would_want_it() -> None:
    got = await run_calls(
        [string_tool, pydantic_tool, holding_tool, custom_tool],
        ("string_tool", {}),
        ("pydantic_tool", {}),
        ("holding_tool", {}),
        ("custom_tool", {}),
    )
    assert got == [
        (False, "hello world"),  # not JSON-encoded: no quotes added
        (False, '{"name":"test","count":5}'),
        (False, '{"data":"NonSerializable()"}'),
        (False, "custom_str_repr"),  # a value with no JSON form is its text, unquoted
    ]


def complex_schema_tool(union_param: list[int] | dict[str, Any] | str | None) -> str:
    """Tool with a complex Union type.

    Args:
        union_param: A parameter that can be list, dict, string or None
    """
    return f"{type(union_param).__name__}: {union_param}"


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ([1, 2, 3], "list: [1, 2, 3]"),
        ({"key": "value"}, "dict: {'key': 'value'}"),
        ("test_string", "str: test_string"),
        (None, "NoneType: None"),
        ("[1, 2]", "str: [1, 2]"),  # a string that looks like JSON is still the string sent
        ("42", "str: 42"),
    ],
)
async def test_a_union_parameter_gets_each_value_as_it_was_sent(value: Any, expected: str) -> None:
    got = await run_calls([complex_schema_tool], ("complex_schema_tool", {"union_param": value}))
    assert got == [(False, expected)]


async def test_each_validation_problem_names_its_parameter() -> None:
    def validation_tool(str_param: str, int_param: int, bool_param: bool) -> str:
        """Tool with various parameter types.

        Args:
            str_param: String parameter
            int_param: Integer parameter
            bool_param: Boolean parameter
        """
        return "Valid"

    got = await run_calls(
        [validation_tool],
        ("validation_tool", {"str_param": "hello", "int_param": "not an int", "bool_param": True}),
        ("validation_tool", {"str_param": "hello", "bool_param": True}),
        ("validation_tool", {"str_param": "hello", "int_param": 1, "bool_param": "maybe"}),
    )
    assert all(is_error for is_error, _ in got)
    assert "- $.int_param: 'not an int' is not of type 'integer'" in got[0][1]
    assert "- root: 'int_param' is a required property" in got[1][1]
    assert "- $.bool_param: 'maybe' is not of type 'boolean'" in got[2][1]


async def test_an_async_generators_items_are_the_result_in_order() -> None:
    async def countdown(n: int) -> AsyncIterator[str]:
        """Counts down.

        Args:
            n: where to start
        """
        for i in range(n, 0, -1):
            yield f"{i}..."

    async def broken(n: int) -> AsyncIterator[str]:
        """Fails after one item."""
        yield "first"
        raise ValueError("Async generator error")

    got = await run_calls([countdown, broken], ("countdown", {"n": 3}), ("broken", {"n": 1}))
    assert got[0] == (False, json.dumps(["3...", "2...", "1..."], separators=(",", ":")))
    assert got[1] == (True, "Async generator error")


JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(), inner, max_size=3),
    max_leaves=8,
)
UNION_VALUES = (
    st.lists(st.integers(), max_size=4)
    | st.dictionaries(st.text(), JSON, max_size=3)
    | st.text()
    | st.sampled_from(["3", "true", "null", "[1, 2]", '{"a": 1}', '"quoted"'])
    | st.none()
)


@settings(max_examples=200)
@given(value=UNION_VALUES)
def test_a_value_the_union_allows_is_never_repaired_into_another(value: Any) -> None:
    schema = tool(complex_schema_tool).input_schema
    arguments = {"union_param": value}
    checked = validate_arguments_against_schema(schema, arguments, tool_name="complex_schema_tool")
    assert checked == arguments
    assert type(checked["union_param"]) is type(value)
