"""DESIGN R-4.4: argument repairs, JSON-Schema 2020-12 validation and the error text."""

from __future__ import annotations

import contextlib
import json
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st
from jsonschema import Draft202012Validator

from yiemagent import ConfigError, validate_arguments_against_schema
from yiemagent.tools import ToolArgumentsError, check_schema
from yiemagent.tools.schema import compile_fast

ORDER = {
    "type": "object",
    "properties": {
        "city": {"type": "string"},
        "count": {"type": "integer"},
        "ratio": {"type": "number"},
        "urgent": {"type": "boolean"},
        "note": {"type": ["string", "null"]},
        "limit": {"anyOf": [{"type": "integer"}, {"type": "null"}]},
        "items": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {"qty": {"type": "integer"}, "sku": {"type": "string"}},
                "required": ["qty"],
            },
        },
        "address": {
            "type": "object",
            "properties": {"zip": {"type": "integer"}, "street": {"type": "string"}},
        },
    },
    "required": ["city"],
    "additionalProperties": False,
}


def check(arguments: object, schema: dict[str, Any] = ORDER) -> dict[str, Any]:
    return validate_arguments_against_schema(schema, arguments, tool_name="order")


@pytest.mark.parametrize("empty", ["", "   ", None])
def test_r4_4_empty_arguments_become_empty_object(empty: object) -> None:
    assert validate_arguments_against_schema({"type": "object"}, empty, tool_name="t") == {}


def test_r4_4_json_string_object_is_parsed() -> None:
    assert check('{"city": "Oslo", "count": "2"}') == {"city": "Oslo", "count": 2}


@pytest.mark.parametrize(
    ("arguments", "problem"),
    [
        ("[1, 2]", "got a JSON array"),
        ('"text"', "got a JSON string"),
        ("{not json", "not valid JSON"),
        ([1, 2], "must be a JSON object, got a JSON array"),
        (3, "must be a JSON object, got a JSON number"),
    ],
)
def test_r4_4_non_object_arguments_give_a_clear_error(arguments: object, problem: str) -> None:
    with pytest.raises(ToolArgumentsError) as info:
        check(arguments)
    text = str(info.value)
    assert text.startswith('Invalid arguments for tool "order":\n- root: ')
    assert problem in text
    assert text.endswith(f"Received: {json.dumps(arguments)}")


def test_r4_4_scalar_strings_coerced_where_the_schema_asks() -> None:
    got = check({"city": "7", "count": "3", "ratio": "2.5", "urgent": "true", "limit": "4"})
    assert got == {"city": "7", "count": 3, "ratio": 2.5, "urgent": True, "limit": 4}
    assert type(got["count"]) is int
    assert check({"city": "x", "urgent": "False", "count": "3.0"}) == {
        "city": "x",
        "urgent": False,
        "count": 3,
    }


def test_r4_4_nested_properties_and_array_items_coerced() -> None:
    got = check({"city": "x", "items": [{"qty": "2"}, {"qty": 5}], "address": {"zip": "0150"}})
    assert got["items"] == [{"qty": 2}, {"qty": 5}]
    assert got["address"] == {"zip": 150}


def test_r4_4_nested_json_string_parsed_where_an_array_is_asked() -> None:
    got = check({"city": "x", "items": '[{"qty": "1"}]'})
    assert got["items"] == [{"qty": 1}]


def test_r4_4_optional_null_dropped_but_nullable_kept() -> None:
    got = check({"city": "x", "count": None, "note": None, "limit": None})
    assert got == {"city": "x", "note": None, "limit": None}


def test_r4_4_required_null_is_an_error_not_dropped() -> None:
    with pytest.raises(ToolArgumentsError, match=r"- \$\.city: None is not of type 'string'"):
        check({"city": None})


STRICT = {
    "type": "object",
    "properties": {
        "query": {"type": "string"},
        "limit": {"type": ["integer", "null"]},
        "since": {"anyOf": [{"$ref": "#/$defs/Day"}, {"type": "null"}]},
        "order": {"enum": ["asc", "desc", None]},
        "tags": {"type": "array", "items": {"type": "string"}},
        "anything": {},
    },
    "required": ["query", "limit", "since", "order", "tags", "anything"],
    "$defs": {"Day": {"type": "string", "format": "date"}},
}
"""A schema written for strict function calling: every property required, the optional
ones nullable (pydantic-ai's, openai-agents' and MCP servers' for OpenAI strict mode)."""


def test_r4_4_a_required_nullable_property_left_out_is_null() -> None:
    # Models leave out a key described as optional instead of sending null; a property
    # whose schema names null is that null. Others stay errors, and nothing sent changes.
    sent = {"query": "x", "tags": ["a"], "anything": 1}
    got = validate_arguments_against_schema(STRICT, sent, tool_name="t")
    assert got == {**sent, "limit": None, "since": None, "order": None}
    assert sent == {"query": "x", "tags": ["a"], "anything": 1}
    with pytest.raises(ToolArgumentsError) as failed:
        validate_arguments_against_schema(STRICT, {"limit": 3}, tool_name="t")
    problems = str(failed.value)
    for name in ("query", "tags", "anything"):
        assert f"'{name}' is a required property" in problems
    for name in ("since", "order"):
        assert f"'{name}' is a required property" not in problems


def test_r4_4_refs_followed_for_nested_models() -> None:
    schema = {
        "$defs": {"Item": {"type": "object", "properties": {"qty": {"type": "integer"}}}},
        "type": "object",
        "properties": {"items": {"type": "array", "items": {"$ref": "#/$defs/Item"}}},
    }
    assert validate_arguments_against_schema(schema, {"items": [{"qty": "9"}]}, tool_name="t") == {
        "items": [{"qty": 9}]
    }


def test_r4_4_error_text_lists_each_path_and_echoes_arguments() -> None:
    sent = {"count": "many", "items": [{"qty": 1}, {"qty": "a"}], "extra": 1}
    with pytest.raises(ToolArgumentsError) as info:
        check(sent)
    lines = str(info.value).splitlines()
    assert lines[0] == 'Invalid arguments for tool "order":'
    assert "- root: 'city' is a required property" in lines
    assert any(line.startswith("- root: Additional properties") for line in lines)
    assert "- $.count: 'many' is not of type 'integer'" in lines
    assert "- $.items[1].qty: 'a' is not of type 'integer'" in lines
    assert lines[-1] == f"Received: {json.dumps(sent)}"
    assert info.value.tool_name == "order"
    assert isinstance(info.value, ValueError)


def test_r4_4_huge_arguments_are_truncated_in_the_error() -> None:
    with pytest.raises(ToolArgumentsError) as info:
        check({"city": 1, "note": "x" * 50_000})
    text = str(info.value)
    assert len(text) < 3000
    assert "more characters)" in text


def test_r4_4_valid_arguments_returned_as_a_new_dict() -> None:
    sent = {"city": "x"}
    got = check(sent)
    assert got == sent
    assert got is not sent


def test_r4_4_invalid_schema_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="not a valid JSON Schema"):
        validate_arguments_against_schema({"type": "objekt"}, {}, tool_name="t")
    with pytest.raises(ConfigError, match="not a valid JSON Schema"):
        check_schema({"type": "object", "required": "city"})
    check_schema({"type": "object", "properties": {"a": {"type": "string"}}})


def test_r4_4_deeply_nested_arguments_do_not_crash() -> None:
    deep: Any = {}
    node = deep
    for _ in range(5000):
        node["a"] = {}
        node = node["a"]
    schema = {"type": "object", "properties": {"a": {"$ref": "#"}}, "additionalProperties": False}
    try:
        got = validate_arguments_against_schema(schema, deep, tool_name="t")
    except ToolArgumentsError as exc:
        assert "nested too deeply" in str(exc)
    else:
        assert got == deep


# ── property tests ───────────────────────────────────────────────────────

json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(10**6), 10**6)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=8)
    | st.sampled_from(["3", "2.5", "true", "false", "null", "", "1e3", '{"qty": "1"}', "[]"]),
    lambda children: (
        st.lists(children, max_size=4)
        | st.dictionaries(
            st.sampled_from(["city", "count", "ratio", "urgent", "note", "limit", "items", "qty"]),
            children,
            max_size=5,
        )
    ),
    max_leaves=12,
)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(json_values)
def test_r4_4_property_returns_valid_dict_or_raises_tool_arguments_error(value: Any) -> None:
    validator = Draft202012Validator(ORDER)
    try:
        got = validate_arguments_against_schema(ORDER, value, tool_name="order")
    except ToolArgumentsError as exc:
        assert str(exc).startswith('Invalid arguments for tool "order":')
    else:
        assert isinstance(got, dict)
        assert validator.is_valid(got)


schemas = st.recursive(
    st.sampled_from(
        [
            {"type": "string"},
            {"type": "integer"},
            {"type": "number", "minimum": 0},
            {"type": "boolean"},
            {"type": ["string", "null"]},
            {"enum": ["a", "b"]},
            {"type": "string", "maxLength": 2},
            {},
        ]
    ),
    lambda children: (
        st.builds(
            lambda props, req, extra: {
                "type": "object",
                "properties": props,
                "required": sorted(set(req) & set(props)),
                "additionalProperties": extra,
            },
            st.dictionaries(st.sampled_from(["a", "b", "c"]), children, max_size=3),
            st.lists(st.sampled_from(["a", "b", "c"]), max_size=3),
            st.booleans(),
        )
        | st.builds(lambda item: {"type": "array", "items": item, "maxItems": 3}, children)
        | st.builds(lambda a, b: {"anyOf": [a, b]}, children, children)
        | st.builds(lambda a, b: {"allOf": [a, b]}, children, children)
    ),
    max_leaves=6,
)


@settings(max_examples=400, deadline=None)
@given(schemas, json_values)
def test_r4_4_property_fast_check_never_accepts_what_jsonschema_rejects(
    schema: dict[str, Any], value: Any
) -> None:
    fast = compile_fast(schema)
    assert fast is not None
    if fast(value):
        assert Draft202012Validator(schema).is_valid(value)


def test_r4_4_fast_check_declines_unknown_keywords() -> None:
    assert compile_fast({"type": "object", "patternProperties": {"^a": {}}}) is None
    assert compile_fast({"$schema": "http://json-schema.org/draft-07/schema#"}) is None
    assert compile_fast({"type": "object", "properties": {"a": {"$ref": "#/$defs/A"}}}) is None


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(schemas, json_values)
def test_r4_4_property_any_schema_valid_dict_or_tool_arguments_error(
    schema: dict[str, Any], value: Any
) -> None:
    try:
        got = validate_arguments_against_schema(schema, value, tool_name="t")
    except ToolArgumentsError:
        return
    assert isinstance(got, dict)
    assert Draft202012Validator(schema).is_valid(got)


_DEF_NAMES = st.sampled_from(["a", "b", "c d", "e~f", "g/h"])


def _pointer(name: str) -> str:
    from urllib.parse import quote

    return "#/$defs/" + quote(name.replace("~", "~0").replace("/", "~1"))


@settings(max_examples=200, suppress_health_check=[HealthCheck.too_slow])
@given(
    defined=st.sets(_DEF_NAMES, max_size=3),
    referenced=st.lists(_DEF_NAMES, min_size=1, max_size=3),
    value=st.recursive(
        st.none() | st.booleans() | st.integers() | st.text(max_size=5),
        lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=3), inner),
        max_leaves=8,
    ),
)
def test_a_ref_that_points_nowhere_is_refused_and_an_accepted_schema_checks_any_value(
    defined: set[str], referenced: list[str], value: Any
) -> None:
    """The meta-schema does not look where a `$ref` points: a schema with a dangling one
    was accepted (a tool's input schema, writeTool's, an output type), and every check of
    a value then raised a referencing error instead of saying what is wrong with the value.
    A schema is refused exactly when a `$ref` names a definition it lacks; one accepted
    validates any value without raising."""
    schema = {
        "type": "object",
        "properties": {f"p{i}": {"$ref": _pointer(n)} for i, n in enumerate(referenced)},
        "$defs": {n: {"type": "string"} for n in defined},
    }
    dangling = sorted({n for n in referenced if n not in defined})
    if dangling:
        with pytest.raises(ConfigError, match="points to nothing in it"):
            check_schema(schema)
        return
    check_schema(schema)
    instance = {f"p{i}": value for i in range(len(referenced))}
    with contextlib.suppress(ToolArgumentsError):  # a message, never a referencing error
        validate_arguments_against_schema(schema, instance, tool_name="t")


def _nested(depth: int, leaf: Any) -> tuple[dict[str, Any], Any]:
    """A schema of `depth` objects inside each other ending in an integer, and arguments
    that follow it to the bottom with `leaf` there."""
    schema: dict[str, Any] = {"type": "integer"}
    value: Any = leaf
    for _ in range(depth):
        schema = {"type": "object", "properties": {"a": schema}, "required": ["a"]}
        value = {"a": value}
    return schema, value


def test_the_fast_check_and_the_repair_go_equally_deep() -> None:
    """One depth limit serves both: a schema the arguments' repair walks to the bottom is one
    the fast check compiles too."""
    schema, sent = _nested(48, "3")
    _, wanted = _nested(48, 3)
    assert validate_arguments_against_schema(schema, sent, tool_name="t") == wanted
    fast = compile_fast(schema)
    assert fast is not None
    assert fast(wanted) and not fast(sent)
