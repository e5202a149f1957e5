"""`@tool` functions of the shapes pydantic-ai's tests/test_tools.py and openai-agents'
tests/test_function_tool.py check, run end to end through an `Agent` on the faux model:
what the model is offered, what the function receives, and what the model reads back.

Where yiemagent differs by choice (docs/tools.md, "Defining a tool"): `*args`/`**kwargs`
are refused when the tool is made (pydantic-ai folds them into the schema); bytes that are
no image and no UTF-8 go back as base64 text, not a serialization error; a value pydantic
cannot serialize goes back as its `str`."""

from __future__ import annotations

import enum
import inspect
import json
import typing
from typing import Annotated, Any, Literal

import pytest
from hypothesis import given, strategies as st
from pydantic import BaseModel, Field

from yiemagent import Agent, ConfigError, ImageContent, ToolResultMessage, tool
from yiemagent.ai.providers.faux import FauxModel, faux_message, faux_tool_call
from yiemagent.tools import ToolArgumentsError, validate_arguments_against_schema
from yiemagent.types import text_of

PNG = (
    b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00\x00\x01\x00\x00\x00\x01\x08\x06\x00\x00\x00"
    b"\x1f\x15\xc4\x89\x00\x00\x00\rIDATx\x9cc\xf8\x0f\x00\x00\x01\x01\x00\x05\x18\xd8N\x00"
    b"\x00\x00\x00IEND\xaeB`\x82"
)


class Point(BaseModel):
    x: int
    y: str = "d"


async def results_of(tools: list[Any], *calls: Any) -> list[ToolResultMessage]:
    fm = FauxModel([faux_message(*calls), "done"])
    agent = Agent(model=fm.model, stream_fn=fm.stream_fn, tools=tools)
    await agent.prompt("go")
    return [m for m in agent.state.messages if isinstance(m, ToolResultMessage)]


@tool
def take_point(point: Point) -> str:
    """Take a point.

    Args:
        point: where.
    """
    return point.model_dump_json()


@pytest.mark.parametrize(
    "arguments",
    [
        pytest.param({"point": {"x": 4}}, id="under-the-parameter-name"),
        pytest.param({"x": 4}, id="the-model-fields-alone"),
        pytest.param({"x": "4"}, id="the-fields-alone-coerced"),
    ],
)
async def test_one_model_parameter_takes_its_fields_wrapped_or_alone(arguments: Any) -> None:
    # test_takes_just_model, test_single_base_model_arg_validator_accepts_wrapped_input
    [result] = await results_of([take_point], faux_tool_call("take_point", arguments))

    assert not result.is_error and json.loads(text_of(result.content)) == {"x": 4, "y": "d"}


async def test_fields_alone_that_do_not_fit_the_model_get_the_call_s_own_errors() -> None:
    [result] = await results_of([take_point], faux_tool_call("take_point", {"z": 1}))

    assert result.is_error
    assert "- root: 'point' is a required property" in text_of(result.content)
    assert text_of(result.content).endswith('Received: {"z": 1}')


@tool
def spaced(a: int, b: int = 5, c: str | None = None) -> str:
    """Space them."""
    return f"{a},{b},{c}"


def test_parameters_with_defaults_are_offered_as_optional() -> None:
    # test_json_schema_required_parameters
    assert spaced.input_schema["required"] == ["a"]
    assert set(spaced.input_schema["properties"]) == {"a", "b", "c"}


async def test_a_call_without_the_optional_parameters_gets_their_defaults() -> None:
    # test_call_tool_without_unrequired_parameters
    [with_a, with_all] = await results_of(
        [spaced],
        faux_tool_call("spaced", {"a": 1}),
        faux_tool_call("spaced", {"a": 1, "b": 2, "c": "x"}),
    )
    assert [text_of(with_a.content), text_of(with_all.content)] == ["1,5,None", "1,2,x"]


@tool
def no_arguments() -> str:
    return "nothing needed"


@pytest.mark.parametrize("arguments", [{}, "", "null"])
async def test_a_function_without_parameters_takes_no_arguments(arguments: Any) -> None:
    # test_argless_function: offered as an empty object, called with nothing
    assert no_arguments.input_schema == {"properties": {}, "type": "object"}
    call = faux_tool_call("no_arguments", {})
    if isinstance(arguments, str):
        call.partial_json = arguments  # what a provider leaves for an empty or null text
    [result] = await results_of([no_arguments], call)

    assert not result.is_error and text_of(result.content) == "nothing needed"


@tool
def give_model(x: int) -> Point:
    """Give a point."""
    return Point(x=x, y="a")


@tool
def give_dict() -> dict[str, Any]:
    """Give a mapping."""
    return {"a": [1, 2], "b": None}


@tool
def give_none() -> None:
    """Give nothing."""


@tool
def give_utf8() -> bytes:
    """Give text bytes."""
    return "🐈 Hello".encode()


@tool
def give_binary() -> bytes:
    """Give binary bytes."""
    return b"\x00 \x81"


@tool
def give_png() -> bytes:
    """Give an image."""
    return PNG


class Opaque:
    def __str__(self) -> str:
        return "an opaque thing"


@tool
def give_opaque() -> Opaque:
    """Give something pydantic cannot serialize."""
    return Opaque()


async def test_each_kind_of_return_value_reaches_the_model() -> None:
    # test_return_pydantic_model, test_return_bytes, test_return_bytes_invalid,
    # test_return_unknown
    tools = [give_model, give_dict, give_none, give_utf8, give_binary, give_png, give_opaque]
    calls = [faux_tool_call(t.name, {"x": 3} if t is give_model else {}) for t in tools]
    results = await results_of(tools, *calls)

    assert not any(r.is_error for r in results)
    texts = {r.tool_name: r.content[0] for r in results}
    assert json.loads(texts["give_model"].text) == {"x": 3, "y": "a"}  # type: ignore[union-attr]
    assert json.loads(texts["give_dict"].text) == {"a": [1, 2], "b": None}  # type: ignore[union-attr]
    assert texts["give_none"].text == "null"  # type: ignore[union-attr]
    assert json.loads(texts["give_utf8"].text) == "🐈 Hello"  # type: ignore[union-attr]
    assert texts["give_binary"].text == '"ACCB"'  # type: ignore[union-attr]
    png = texts["give_png"]
    assert isinstance(png, ImageContent) and png.mime_type == "image/png"
    assert texts["give_opaque"].text == "an opaque thing"  # type: ignore[union-attr]


def test_var_positional_and_keyword_parameters_are_refused_when_made() -> None:
    # test_positional_or_keyword_with_var_args: pydantic-ai offers them; a model cannot
    # name a positional rest, so here the tool is refused with what to change
    def spread(a: int, *rest: int) -> int:
        """Spread."""
        return a

    with pytest.raises(ConfigError, match="parameter 'rest' must be an ordinary or keyword-only"):
        tool(spread)


def test_two_tools_of_one_name_are_refused_naming_the_fix() -> None:
    # test_tool_name_conflict_hint, openai-agents' duplicate function tools: refused, not
    # "the last one wins"
    def first() -> str:
        return "1"

    def second() -> str:
        return "2"

    fm = FauxModel([])
    with pytest.raises(ConfigError, match=r"rename one \(@tool\(name=\.\.\.\)\)"):
        Agent(
            model=fm.model,
            stream_fn=fm.stream_fn,
            tools=[tool(first, name="same"), tool(second, name="same")],
        )


def test_making_a_tool_leaves_the_function_as_it_was() -> None:
    # openai-agents' test_tool_exposes_original_callable_without_mutating_it: keep the
    # function and make the tool with tool(fn) to call the function yourself (a unit test)
    def original(value: int) -> int:
        """Increment a value."""
        return value + 1

    original.__dict__["extra_metadata"] = "preserved"
    before = (dict(original.__dict__), original.__name__, original.__doc__)
    signature = inspect.signature(original)

    made = tool(original)

    assert (dict(original.__dict__), original.__name__, original.__doc__) == before
    assert inspect.signature(original) == signature and original(1) == 2
    assert made.name == "original" and made.description == "Increment a value."
    assert not callable(made)  # an AgentTool is called by the loop, with its arguments


@tool
def squeezed(a: int, b: str) -> str:
    """Do the thing.
    Args:
        a: the a value.
        b: the b value.
    Returns:
        the thing done.
    """
    return f"{a}{b}"


def test_a_google_docstring_without_blank_lines_between_sections_is_read() -> None:
    # test_google_docstring_missing_blank_line_before_args / _after_section_body
    assert squeezed.description == "Do the thing."
    properties = squeezed.input_schema["properties"]
    assert [properties[p]["description"] for p in ("a", "b")] == ["the a value.", "the b value."]


@tool
def constrained(
    count: int = Field(..., gt=0, description="how many"),
    page: int = Field(default=1, ge=1),
    tag: Annotated[str, Field(min_length=2)] = "ab",
) -> str:
    """Constrained."""
    return f"{count},{page},{tag}"


async def test_field_constraints_reach_the_schema_and_refuse_a_call() -> None:
    # test_function_with_field_required_constraints / _optional_with_default /
    # test_function_with_annotated_field_string_constraints
    properties = constrained.input_schema["properties"]
    assert constrained.input_schema["required"] == ["count"]
    assert properties["count"] == {
        "description": "how many",
        "exclusiveMinimum": 0,
        "type": "integer",
    }
    assert properties["page"] == {"default": 1, "minimum": 1, "type": "integer"}
    assert properties["tag"] == {"default": "ab", "minLength": 2, "type": "string"}
    ok, refused = await results_of(
        [constrained],
        faux_tool_call("constrained", {"count": 2}),
        faux_tool_call("constrained", {"count": 0, "tag": "x"}),
    )
    assert text_of(ok.content) == "2,1,ab"
    assert refused.is_error
    assert "- $.count: 0 is less than or equal to the minimum of 0" in text_of(refused.content)
    assert "- $.tag: 'x' is too short" in text_of(refused.content)


class Color(enum.Enum):
    RED = "red"
    BLUE = "blue"


@tool
def paint(color: Color, finish: Literal["matte", "gloss"]) -> str:
    """Paint."""
    return f"{color!r} {finish}"


async def test_enums_and_literals_are_offered_as_choices_and_arrive_as_members() -> None:
    # test_enum_and_literal_function
    schema = paint.input_schema
    assert schema["$defs"]["Color"] == {"enum": ["red", "blue"], "type": "string"}
    assert schema["properties"]["finish"] == {"enum": ["matte", "gloss"], "type": "string"}
    good, bad = await results_of(
        [paint],
        faux_tool_call("paint", {"color": "red", "finish": "gloss"}),
        faux_tool_call("paint", {"color": "green", "finish": "gloss"}),
    )
    assert text_of(good.content) == "<Color.RED: 'red'> gloss"
    assert bad.is_error and "'green' is not one of ['red', 'blue']" in text_of(bad.content)


@tool
def described_twice(a: Annotated[int, Field(description="from the annotation")]) -> str:
    """Described twice.

    Args:
        a: from the docstring.
    """
    return str(a)


def test_an_annotated_description_wins_over_the_docstring() -> None:
    # test_function_prefers_docstring_descriptions_over_annotated_metadata: openai-agents
    # takes the docstring's; here the annotation on the parameter itself is the more explicit
    assert described_twice.input_schema["properties"]["a"]["description"] == "from the annotation"


@given(
    x=st.integers(-(2**31), 2**31),
    y=st.one_of(st.none(), st.text(max_size=6)),
    as_text=st.booleans(),
)
def test_the_fields_alone_validate_exactly_as_the_wrapped_object(
    x: int, y: str | None, as_text: bool
) -> None:
    fields: dict[str, Any] = {"x": str(x) if as_text else x}
    if y is not None:
        fields["y"] = y
    schema = take_point.input_schema
    wrapped = validate_arguments_against_schema(schema, {"point": fields}, tool_name="t")
    alone = validate_arguments_against_schema(schema, fields, tool_name="t")
    assert alone == wrapped == {"point": {**fields, "x": x}}


@given(st.dictionaries(st.sampled_from(["z", "w", "q"]), st.integers(), min_size=1))
def test_fields_that_fit_no_shape_keep_the_call_s_own_errors(sent: dict[str, int]) -> None:
    with pytest.raises(ToolArgumentsError) as info:
        validate_arguments_against_schema(take_point.input_schema, sent, tool_name="t")
    assert "- root: 'point' is a required property" in str(info.value)


class Line(typing.TypedDict):
    """One line of an order."""

    sku: str
    qty: typing.NotRequired[int]


class Order(typing.TypedDict, total=False):
    lines: list[Line]
    note: str


@tool
def place(order: Order, extra: Line | None = None) -> str:
    """Place an order."""
    return repr((order, extra))


async def test_typing_typed_dicts_are_arguments_on_every_python() -> None:
    # pydantic takes only typing_extensions.TypedDict before Python 3.12, and `@tool` refused
    # a function whose hint is the `typing.TypedDict` most code imports.
    schema = place.input_schema
    line = schema["$defs"]["Line"]
    assert line["properties"] == {"sku": {"type": "string"}, "qty": {"type": "integer"}}
    assert line["required"] == ["sku"] and line["description"] == "One line of an order."
    assert "required" not in schema["$defs"]["Order"]
    assert schema["required"] == ["order"]
    good, bad = await results_of(
        [place],
        faux_tool_call("place", {"order": {"lines": [{"sku": "a", "qty": 2}]}}),
        faux_tool_call("place", {"order": {"lines": [{"qty": 2}]}}),
    )
    assert text_of(good.content) == "({'lines': [{'sku': 'a', 'qty': 2}]}, None)"
    assert bad.is_error and "sku" in text_of(bad.content)
