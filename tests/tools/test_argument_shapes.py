"""Argument shapes other frameworks' bug reports show real models and servers sending
(DESIGN R-4.4), and JSON Schema edge cases the validation must get right."""

from __future__ import annotations

import json
from typing import Any

import pytest

from yiemagent import validate_arguments_against_schema
from yiemagent.tools import ToolArgumentsError

INT_A = {"type": "object", "properties": {"a": {"type": "integer"}}}


def check(schema: dict[str, Any], arguments: object) -> dict[str, Any]:
    return validate_arguments_against_schema(schema, arguments, tool_name="t")


def test_r4_4_double_encoded_argument_object_is_decoded() -> None:
    """Some OpenAI-compatible servers send `arguments` as a JSON string of the JSON text."""
    assert check(INT_A, json.dumps(json.dumps({"a": "7"}))) == {"a": 7}
    assert check(INT_A, json.dumps("")) == {}


def test_r4_4_null_argument_text_is_no_arguments() -> None:
    assert check(INT_A, "null") == {}
    assert check(INT_A, " null ") == {}


def test_r4_4_a_json_string_that_is_not_an_object_is_still_an_error() -> None:
    for text in ('"text"', json.dumps("[1, 2]"), json.dumps("7")):
        with pytest.raises(ToolArgumentsError, match="got a JSON str"):
            check(INT_A, text)


@pytest.mark.parametrize(
    ("schema", "arguments", "expected"),
    [
        ({"type": "object"}, {"a": 1}, {"a": 1}),  # no "properties"
        ({}, {"a": 1}, {"a": 1}),  # the empty schema accepts any object
        (
            {"type": "object", "properties": {"a": {"type": "integer", "enum": [1, 2]}}},
            {"a": "2"},
            {"a": 2},
        ),
        (
            {
                "type": "object",
                "properties": {
                    "a": {"type": "array", "items": {"type": "array", "items": {"type": "integer"}}}
                },
            },
            {"a": [["1", "2"], [3]]},
            {"a": [[1, 2], [3]]},
        ),
        (
            {
                "type": "object",
                "definitions": {"P": {"type": "object", "properties": {"x": {"type": "integer"}}}},
                "properties": {"p": {"$ref": "#/definitions/P"}},
            },
            {"p": {"x": "5"}},
            {"p": {"x": 5}},
        ),
        (INT_A, {"a": "3.0"}, {"a": 3}),
        ({"type": "object", "properties": {"a": {"type": "number"}}}, {"a": "1e3"}, {"a": 1000.0}),
        ({"type": "object", "properties": {"a": {"type": "boolean"}}}, {"a": "True"}, {"a": True}),
        (
            {"type": "object", "properties": {"a": {"type": ["integer", "null"]}}},
            {"a": None},
            {"a": None},
        ),
        (
            {"type": "object", "properties": {"a": {"type": "object"}}},
            {"a": '{"b": 2}'},
            {"a": {"b": 2}},
        ),
    ],
)
def test_r4_4_schema_edge_cases_repaired(
    schema: dict[str, Any], arguments: Any, expected: dict[str, Any]
) -> None:
    assert check(schema, arguments) == expected


@pytest.mark.parametrize(
    ("choices", "sent", "expected"),
    [
        ({"enum": [1, 2, 3]}, "2", 2),
        ({"enum": ["auto", 1, 2.5]}, " 2.5 ", 2.5),
        ({"enum": ["auto", True]}, "True", True),
        ({"enum": ["auto", None]}, "null", None),
        ({"const": 5}, "5", 5),
        ({"anyOf": [{"enum": ["auto", 1]}, {"type": "null"}]}, "1", 1),
        ({"enum": ["1", 1]}, "1", "1"),  # the string itself is a choice: kept
    ],
)
def test_r4_4_a_choice_sent_as_text_is_the_choice_even_without_a_type(
    choices: dict[str, Any], sent: str, expected: Any
) -> None:
    # agno#9633: a Literal over numbers or booleans, and an MCP server's untyped
    # {"enum": [1, 2, 3]}, were refused when the model wrote the choice as a string ("2"):
    # with no "type" beside the enum there was nothing to coerce it by. The members say
    # what the text stands for; text that is none of them is still refused.
    schema = {"type": "object", "properties": {"a": choices}}
    assert check(schema, {"a": sent}) == {"a": expected}
    with pytest.raises(ToolArgumentsError, match="is not one of"):
        check({"type": "object", "properties": {"a": {"enum": [1, 2]}}}, {"a": "3"})


@pytest.mark.parametrize(
    ("schema", "arguments", "problem"),
    [
        (
            {**INT_A, "additionalProperties": False},
            {"a": 1, "b": 2},
            "Additional properties are not allowed ('b' was unexpected)",
        ),
        (
            {"type": "object", "properties": {"a": {"enum": ["x", "y"]}}, "required": ["a"]},
            {"a": "z"},
            "$.a: 'z' is not one of ['x', 'y']",
        ),
        (INT_A, {"a": "3.5"}, "$.a: '3.5' is not of type 'integer'"),
        (INT_A, {"a": True}, "$.a: True is not of type 'integer'"),
        ({"type": "object", "properties": {"a": {"type": "boolean"}}}, {"a": 1}, "not of type"),
        ({**INT_A, "required": ["a"]}, {"a": None}, "$.a: None is not of type 'integer'"),
        ({"type": "object", "properties": {"a": {"type": "string"}}}, {"a": 5}, "not of type"),
        # langchain-ai/deepagents#4621: an object sent for a string (a JSON file's content)
        # is refused, not dumped into one: the same repair would pass an echoed schema
        # ({"description": ..., "type": "str"}, crewAI#1744) to the tool as its text.
        (
            {"type": "object", "properties": {"content": {"type": "string"}}},
            {"content": {"name": "app", "version": 1}},
            "$.content: {'name': 'app', 'version': 1} is not of type 'string'",
        ),
    ],
)
def test_r4_4_schema_edge_cases_rejected_with_the_path(
    schema: dict[str, Any], arguments: Any, problem: str
) -> None:
    with pytest.raises(ToolArgumentsError) as info:
        check(schema, arguments)
    assert problem in str(info.value)


def test_r4_3_a_tool_returning_content_blocks_keeps_them() -> None:
    """A screenshot tool returns an `ImageContent`: the model gets the image, not its JSON.
    (The return hints name locally imported classes: unresolvable, and not needed.)"""
    from yiemagent import AbortSignal, ImageContent, TextContent, tool

    image = ImageContent("aGk=", "image/png")

    @tool
    def screenshot(page: str) -> ImageContent:
        """Take a screenshot."""
        return image

    @tool
    def annotated(page: str) -> list[TextContent | ImageContent]:
        """Screenshot with a caption."""
        return [TextContent(f"page {page}"), image]

    one = screenshot.execute("c1", {"page": "a"}, AbortSignal(), lambda update: None)
    two = annotated.execute("c2", {"page": "a"}, AbortSignal(), lambda update: None)
    assert one.content == [image]  # type: ignore[union-attr]
    assert two.content == [TextContent("page a"), image]  # type: ignore[union-attr]


def test_many_bad_items_are_listed_from_the_first_in_their_order() -> None:
    # Kilo-Org/kilocode#11961's review: a list of 1,000 malformed items must give a bounded
    # error that still shows what to fix. The problems shown were sorted as text, so the
    # model read items 0, 100, 101... and never 1 to 99; they go in the list's order.
    schema = {
        "type": "object",
        "properties": {
            "todos": {
                "type": "array",
                "items": {"type": "object", "required": ["title"]},
            }
        },
    }
    with pytest.raises(ToolArgumentsError) as raised:
        check(schema, {"todos": [{"name": str(i)} for i in range(1000)]})
    shown = [line for line in str(raised.value).splitlines() if line.startswith("- $")]
    assert shown == [f"- $.todos[{i}]: 'title' is a required property" for i in range(len(shown))]
    assert len(str(raised.value)) < 4000


CITY = {
    "type": "object",
    "properties": {"city": {"type": "string"}, "days": {"type": "integer"}},
    "required": ["city"],
}


@pytest.mark.parametrize(
    "sent",
    [
        {"properties": {"city": "Paris", "days": "3"}},
        {"type": "object", "properties": {"city": "Paris", "days": 3}},
        {"arguments": {"city": "Paris", "days": 3}},
        {"parameters": {"city": "Paris", "days": "3"}},
    ],
)
def test_r4_4_arguments_a_model_wrapped_once_are_the_wrapped_object(sent: Any) -> None:
    # cloudwego/eino#385, Camelid#703, Kilo-Org/kilocode#3282: small models send the shape
    # they were shown ({"properties": {...}}) or wrap their arguments once more
    # ({"arguments": {...}}); the call failed on a required property that was there, one
    # level down, and the model often sent the same again.
    assert check(CITY, sent) == {"city": "Paris", "days": 3}


def test_r4_4_a_wrapper_the_schema_declares_or_that_holds_no_valid_call_stays_an_error() -> None:
    # Unwrapped only where the schema proves the wrapper is no argument, and only when what
    # it holds is a valid call: otherwise the error is about what was sent.
    declared = {
        "type": "object",
        "properties": {"input": {"type": "object"}},
        "required": ["input"],
    }
    assert check(declared, {"input": {"city": "Paris"}}) == {"input": {"city": "Paris"}}
    for sent in (
        {"properties": {"town": "Paris"}},  # holds no valid call
        {"arguments": {"city": "Paris"}, "extra": 1},  # something beside the wrapper
        {"arguments": {"city": "Paris"}, "parameters": {"city": "Rome"}},  # two wrappers
    ):
        with pytest.raises(ToolArgumentsError, match="'city' is a required property"):
            check(CITY, sent)
