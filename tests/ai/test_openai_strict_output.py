"""A native output schema goes to OpenAI with `strict: true` where Structured Outputs takes
the schema (every property required, `additionalProperties: false`, supported keywords
only), so the answer follows it exactly; any other schema goes with `strict: false`, which
OpenAI would otherwise refuse. The Responses API's `text.format` and Chat Completions'
`response_format` alike. Through the real
`openai` SDK to a server on 127.0.0.1, and the rule itself by property tests."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, strategies as st

from tests.ai.servers import ReplayServer, openai_chunks, sse_reply
from tests.ai.test_attachments import responses_done, responses_sse
from yiemagent.ai import Context, StreamOptions, get_model, stream
from yiemagent.ai.openai_wire import strict_schema_allowed
from yiemagent.types.messages import UserMessage

pytestmark = pytest.mark.timeout(120)

KEY = "sk-test-0123456789abcdef"
CITY = {
    "type": "object",
    "properties": {"name": {"type": "string"}, "people": {"type": ["integer", "null"]}},
    "required": ["name", "people"],
    "additionalProperties": False,
}
LOOSE = {"type": "object", "properties": {"name": {"type": "string"}}}  # nothing required


def _object(properties: dict[str, Any]) -> dict[str, Any]:
    """An object of the strict subset with `properties`."""
    return {
        "type": "object",
        "properties": properties,
        "required": list(properties),
        "additionalProperties": False,
    }


def _nested(levels: int) -> dict[str, Any]:
    """`levels` objects, each the one property of the one around it."""
    schema = _object({"name": {"type": "string"}})
    for _ in range(levels - 1):
        schema = _object({"inner": schema})
    return schema


DEEP = _nested(11)  # in the subset, but past the 10 levels OpenAI takes strict


def answer_of_responses() -> list[str]:
    item = {"type": "message", "id": "msg_1", "role": "assistant", "content": []}
    return responses_sse(
        {"type": "response.output_item.added", "output_index": 0, "item": item},
        {"type": "response.output_text.delta", "item_id": "msg_1", "delta": '{"name": "Oslo"}'},
        responses_done(),
    )


@pytest.mark.parametrize(("schema", "strict"), [(CITY, True), (LOOSE, False), (DEEP, False)])
async def test_responses_says_strict_where_the_schema_allows_it(
    server: ReplayServer, schema: dict[str, Any], strict: bool
) -> None:
    server.enqueue(sse_reply(answer_of_responses()))
    model = get_model("openai-responses/gpt-4.1-mini", base_url=server.url + "/v1")
    options = StreamOptions(api_key=KEY, output_schema=schema)
    message = await stream(model, Context("", [UserMessage("a city")]), options).result()
    assert message.stop_reason == "stop", message.error_message
    sent = server.requests[0].body["text"]["format"]
    assert sent == {
        "type": "json_schema",
        "name": "final_result",
        "schema": schema,
        "strict": strict,
    }


@pytest.mark.parametrize(
    ("name", "schema", "strict"),
    [
        ("openai/gpt-4.1-mini", CITY, True),
        ("openai/gpt-4.1-mini", LOOSE, False),
        ("openai/gpt-4.1-mini", DEEP, False),
    ],
)
async def test_chat_completions_says_strict_to_openai(
    server: ReplayServer, name: str, schema: dict[str, Any], strict: bool
) -> None:
    server.enqueue(sse_reply(openai_chunks({"role": "assistant", "content": '{"name": "Oslo"}'})))
    model = get_model(name, base_url=server.url + "/v1")
    options = StreamOptions(api_key=KEY, output_schema=schema)
    message = await stream(model, Context("", [UserMessage("a city")]), options).result()
    assert message.stop_reason == "stop", message.error_message
    sent = server.requests[0].body["response_format"]["json_schema"]
    assert sent == {"name": "final_result", "schema": schema, "strict": strict}


_LEAVES = st.sampled_from(
    [
        {"type": "string"},
        {"type": "string", "format": "date"},
        {"type": "string", "pattern": "^[a-z]+$"},
        {"type": "integer", "minimum": 0},
        {"type": "number", "maximum": 9.5},
        {"type": "boolean"},
        {"type": ["string", "null"]},
        {"enum": ["a", "b"]},
        {"const": 3},
    ]
)
_NAMES = st.text("abcxyz_", min_size=1, max_size=6)


def _objects(
    children: st.SearchStrategy[dict[str, Any]], min_size: int = 0
) -> st.SearchStrategy[dict[str, Any]]:
    return st.dictionaries(_NAMES, children, min_size=min_size, max_size=4).map(
        lambda props: {
            "type": "object",
            "properties": props,
            "required": list(props),
            "additionalProperties": False,
        }
    )


_STRICT = st.recursive(
    _LEAVES,
    lambda children: st.one_of(
        _objects(children),
        children.map(lambda item: {"type": "array", "items": item, "maxItems": 5}),
        st.lists(children, min_size=1, max_size=3).map(lambda options: {"anyOf": options}),
    ),
    max_leaves=12,
)
_STRICT_ROOTS = _objects(_STRICT, min_size=1)


def _objects_in(schema: Any) -> list[dict[str, Any]]:
    if not isinstance(schema, dict):
        return []
    found = [schema] if "properties" in schema else []
    for child in [*schema.get("properties", {}).values(), *schema.get("anyOf", [])]:
        found += _objects_in(child)
    return found + _objects_in(schema.get("items"))


@given(_STRICT_ROOTS)
def test_a_schema_in_the_strict_subset_is_sent_strict(schema: dict[str, Any]) -> None:
    assert strict_schema_allowed(schema)


@given(_STRICT_ROOTS, st.data())
def test_one_object_that_leaves_a_property_optional_makes_it_not_strict(
    schema: dict[str, Any], data: st.DataObject
) -> None:
    spot = data.draw(st.sampled_from([o for o in _objects_in(schema) if o["properties"]]))
    loosened = data.draw(st.sampled_from(["required", "additionalProperties"]))
    if loosened == "required":
        spot["required"] = spot["required"][1:]
    else:
        del spot["additionalProperties"]
    assert not strict_schema_allowed(schema)


@given(_STRICT_ROOTS, st.data())
def test_one_unsupported_keyword_anywhere_makes_it_not_strict(
    schema: dict[str, Any], data: st.DataObject
) -> None:
    spot = data.draw(st.sampled_from(_objects_in(schema)))
    keyword = data.draw(st.sampled_from(["allOf", "not", "minLength", "default", "oneOf"]))
    spot[keyword] = []
    assert not strict_schema_allowed(schema)


def test_a_root_that_is_no_object_is_not_strict() -> None:
    assert not strict_schema_allowed({"anyOf": [CITY, {"type": "null"}]})
    assert not strict_schema_allowed(
        {**CITY, "properties": {"when": {"type": "string", "format": "ymd"}}, "required": ["when"]}
    )


def _enum(values: list[str]) -> dict[str, Any]:
    return {"type": "string", "enum": values}


# Each limit of OpenAI's Structured Outputs guide ("Supported schemas"): a schema at it is
# sent strict, one past it not (OpenAI refused it strict: "... exceeds limit of ...").
AT_AND_PAST_THE_LIMITS = {
    "nesting depth": (_nested(10), _nested(11)),
    "object properties": (
        _object({f"p{i}": {"type": "integer"} for i in range(5000)}),
        _object({f"p{i}": {"type": "integer"} for i in range(5001)}),
    ),
    "characters of names": (
        _object({f"{i:02}" + "n" * 1198: {"type": "string"} for i in range(100)}),
        _object({f"{i:02}" + "n" * 1199: {"type": "string"} for i in range(100)}),
    ),
    "characters of definition names and const values": (
        {**_object({"c": {"const": "k" * 60_000}}), "$defs": {"d" * 59_999: {"type": "string"}}},
        {**_object({"c": {"const": "k" * 60_000}}), "$defs": {"d" * 60_000: {"type": "string"}}},
    ),
    "enum values": (
        _object({"a": _enum([f"{i}" for i in range(500)]), "b": _enum(["x"] * 500)}),
        _object({"a": _enum([f"{i}" for i in range(500)]), "b": _enum(["x"] * 501)}),
    ),
    "characters of a long enum": (
        _object({"e": _enum([f"{i:03}" + "v" * 56 for i in range(251)])}),  # 14,809
        _object({"e": _enum([f"{i:03}" + "v" * 57 for i in range(251)])}),  # 15,060
    ),
}


@pytest.mark.parametrize("limit", list(AT_AND_PAST_THE_LIMITS))
def test_a_schema_past_a_size_limit_is_not_strict(limit: str) -> None:
    at, past = AT_AND_PAST_THE_LIMITS[limit]
    assert strict_schema_allowed(at)
    assert not strict_schema_allowed(past)


def test_an_enum_of_many_short_values_is_strict() -> None:
    """The characters of one enum count apart only past 250 values."""
    assert strict_schema_allowed(_object({"e": _enum(["v" * 59] * 250)}))  # 14,750


@given(_STRICT_ROOTS, st.integers(min_value=11, max_value=14))
def test_objects_nested_past_ten_levels_are_never_strict(
    schema: dict[str, Any], levels: int
) -> None:
    assert strict_schema_allowed(schema)
    beside = _object({"deep": _nested(levels - 1), "rest": schema})  # `levels` levels deep
    assert not strict_schema_allowed(beside)
