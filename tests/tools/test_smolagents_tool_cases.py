"""The argument cases smolagents' tests/test_tools.py checks (`test_validate_tool_arguments`,
`test_validate_tool_arguments_nullable`, the literal, array and nullable schema cases),
on a `@tool` function and `validate_tool_arguments` (R-4.4).

Where ours differs by choice (docs/tools.md, "Argument validation"): an optional parameter
sent as `null` is dropped, so the function gets its default (smolagents marks the same case
a TODO that should fail); a required parameter that may be `None`, left out, is `None` (a
strict function-calling schema requires every property and makes the optional ones
nullable; smolagents wants an error there); numeric or boolean strings are coerced where
the schema asks (a model's `"7"` for an `int`)."""

from __future__ import annotations

from typing import Any, Literal

import pytest

from yiemagent import Agent, AgentTool, ConfigError, tool, validate_tool_arguments
from yiemagent.errors import YiemAgentError


def one_parameter_tool(annotation: Any, default: Any = ...) -> AgentTool:
    if default is ...:

        def fake(argument_a: Any) -> str:
            """Fake tool.

            Args:
                argument_a: The input.
            """
            return str(argument_a)

    else:

        def fake(argument_a: Any = default) -> str:
            """Fake tool.

            Args:
                argument_a: The input.
            """
            return str(argument_a)

    fake.__annotations__["argument_a"] = annotation
    return tool(fake)


@pytest.mark.parametrize(
    ("annotation", "value", "valid"),
    [
        (str, "b", True),
        (int, 1, True),
        (float, 1, True),
        (list, ["a", "b"], True),
        (list[str], ["a", "b"], True),
        (dict[str, str], {"a": "b"}, True),
        (dict[str, str], "b", False),
        (bool, "b", False),
        (str | int, "a", True),
        (str | int, 1, True),
        (str | int, None, False),
        (str | int, True, False),
        (int, True, False),
        (float, True, False),
        (int, 1.5, False),
    ],
)
def test_an_argument_is_valid_exactly_when_its_type_allows_it(
    annotation: Any, value: Any, valid: bool
) -> None:
    fake = one_parameter_tool(annotation)
    if valid:
        assert validate_tool_arguments(fake, {"argument_a": value}) == {"argument_a": value}
    else:
        with pytest.raises(YiemAgentError, match=r"\$\.argument_a") as raised:
            validate_tool_arguments(fake, {"argument_a": value})
        assert "Received:" in str(raised.value)


@pytest.mark.parametrize(
    ("annotation", "default", "arguments", "expected"),
    [
        (str, ..., {"argument_a": "text"}, {"argument_a": "text"}),
        (str, ..., {"argument_a": None}, "None is not of type 'string'"),
        (str, ..., {}, "'argument_a' is a required property"),
        (str | None, ..., {"argument_a": None}, {"argument_a": None}),
        (str | None, ..., {}, {"argument_a": None}),  # a strict schema's nullable: null
        (str, "default", {"argument_a": "text"}, {"argument_a": "text"}),
        (str, "default", {"argument_a": None}, {}),  # null dropped: the default applies
        (str, "default", {}, {}),
        (str | None, "default", {"argument_a": None}, {"argument_a": None}),
        (str | None, None, {"argument_a": None}, {"argument_a": None}),
        (str | None, None, {}, {}),
    ],
)
def test_required_optional_and_nullable_parameters(
    annotation: Any, default: Any, arguments: dict[str, Any], expected: Any
) -> None:
    fake = one_parameter_tool(annotation, default)
    if isinstance(expected, dict):
        assert validate_tool_arguments(fake, arguments) == expected
    else:
        with pytest.raises(YiemAgentError, match=expected):
            validate_tool_arguments(fake, arguments)


@tool
def get_weather(
    location: str,
    celsius: bool = False,
    unit: Literal["celsius", "fahrenheit"] = "celsius",
    choice: Literal[1, 2, 3, None] = None,
    months: tuple[str, str] | None = None,
    locations: list[str] | None = None,
) -> str:
    """Get weather in the next days at given location.

    Args:
        location: The location to get the weather for.
        celsius: is the temperature given in celsius?
        unit: The unit of temperature.
        choice: The numeric choice to be made.
        months: The months to get the weather for.
        locations: More locations.
    """
    return f"{location} {celsius} {unit} {choice} {months} {locations}"


def test_literals_arrays_and_defaults_shape_the_schema() -> None:
    schema = get_weather.input_schema
    properties = schema["properties"]
    assert schema["required"] == ["location"]
    assert properties["celsius"]["type"] == "boolean"
    assert properties["unit"]["enum"] == ["celsius", "fahrenheit"]
    assert properties["choice"]["enum"] == [1, 2, 3, None]
    months = [branch for branch in properties["months"]["anyOf"] if branch.get("type") == "array"]
    assert months and months[0]["minItems"] == months[0]["maxItems"] == 2
    assert {"type": "null"} in properties["locations"]["anyOf"]
    assert properties["location"]["description"] == "The location to get the weather for."


@pytest.mark.parametrize(
    ("arguments", "problem"),
    [
        ({"location": "x", "unit": "kelvin"}, "'kelvin' is not one of"),
        ({"location": "x", "choice": 4}, "4 is not one of"),
        ({"location": "x", "months": ["may"]}, r"\$\.months"),
        ({"location": "x", "locations": "Paris"}, r"\$\.locations"),
    ],
)
def test_a_value_outside_a_literal_or_array_shape_is_refused(
    arguments: dict[str, Any], problem: str
) -> None:
    with pytest.raises(YiemAgentError, match=problem):
        validate_tool_arguments(get_weather, arguments)


def test_a_valid_nullable_literal_and_tuple_reach_the_function() -> None:
    args = validate_tool_arguments(
        get_weather, {"location": "x", "choice": None, "months": ["may", "june"]}
    )
    assert args == {"location": "x", "choice": None, "months": ["may", "june"]}


def noop(call_id: str, args: Any, signal: Any, on_update: Any) -> str:
    return "x"


async def test_a_tool_made_without_label_or_description_sends_text_not_null() -> None:
    # smolagents' validate_tool_attributes refuses a tool without a description; here None
    # means none given (a function without a docstring), and a provider is never sent
    # "description": null, which the OpenAI and Anthropic APIs refuse
    sent: list[dict[str, Any]] = []
    bare = AgentTool("bare", None, None, {"type": "object", "properties": {}}, noop)
    assert (bare.label, bare.description) == ("bare", "")
    agent = Agent(tools=[bare], llm_call=lambda formatted: sent.append(formatted) or "ok")
    await agent.prompt("hi")
    assert sent[0]["tools"][0]["function"]["description"] == ""


@pytest.mark.parametrize("field", ["label", "description"])
def test_a_label_or_description_that_is_not_text_is_refused(field: str) -> None:
    given: dict[str, Any] = {"label": "Bare", "description": "does nothing", field: 42}
    with pytest.raises(ConfigError, match=f"tool 'bare': {field} must be a str"):
        AgentTool("bare", input_schema={"type": "object"}, execute=noop, **given)
