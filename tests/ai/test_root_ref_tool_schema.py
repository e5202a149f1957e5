"""A tool whose input schema is a `$ref` into its own `$defs` (a whole schema named once,
as pydantic and MCP servers write a model): each hosted API is sent that definition's
object at the root, with its properties and required names, the `$defs` kept for the refs
inside it. OpenAI got `{"$ref": ..., "properties": {}}` and so saw no parameters. Replay
servers on 127.0.0.1 speaking each wire format."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest
from hypothesis import given, strategies as st
from jsonschema import Draft202012Validator

from tests.ai._stream_kit import property_settings
from tests.ai.servers import ReplayServer, Reply
from tests.ai.test_context_none import KEY, anthropic_text, openai_text, responses_text
from yiemagent import AgentTool, UserMessage
from yiemagent.ai import Context, Model, StreamOptions, complete, get_model
from yiemagent.ai.openai_wire import function_parameters

pytestmark = pytest.mark.timeout(120)  # the first call imports a provider SDK

DEFS = {
    "Booking": {
        "type": "object",
        "properties": {"city": {"type": "string"}, "guest": {"$ref": "#/$defs/Guest"}},
        "required": ["city", "guest"],
    },
    "Guest": {"type": "object", "properties": {"name": {"type": "string"}}},
}
BOOK = AgentTool(
    "book",
    "Book",
    "book a room",
    {"$ref": "#/$defs/Booking", "$defs": DEFS},
    lambda call_id, args, signal, on_update: "booked",
)


@pytest.fixture
def server() -> Iterator[ReplayServer]:
    with ReplayServer() as s:
        yield s


def parameters_sent(body: dict[str, Any]) -> Any:
    [tool] = body["tools"]
    if "input_schema" in tool:  # Anthropic
        return tool["input_schema"]
    return tool.get("function", tool)["parameters"]  # Chat Completions, Responses


THREE_WIRES = pytest.mark.parametrize(
    ("make_model", "reply"),
    [
        (lambda url: get_model("openai/gpt-4o-mini", base_url=url + "/v1"), openai_text),
        (
            lambda url: get_model("openai-responses/gpt-4o-mini", base_url=url + "/v1"),
            responses_text,
        ),
        (
            lambda url: Model(
                id="claude-test-1", provider="anthropic", api="anthropic-messages", base_url=url
            ),
            anthropic_text,
        ),
    ],
    ids=["openai-completions", "openai-responses", "anthropic-messages"],
)
"""The three wire formats, each with its model on the replay server and a text reply."""


@THREE_WIRES
async def test_a_root_ref_schema_is_sent_as_its_definition(
    server: ReplayServer, make_model: Callable[[str], Model], reply: Callable[[], Reply]
) -> None:
    server.enqueue(reply())
    context = Context("", [UserMessage("book Oslo for Ann")], [BOOK])

    message = await complete(make_model(server.url), context, StreamOptions(api_key=KEY))

    assert message.stop_reason == "stop", message.error_message
    sent = parameters_sent(server.requests[0].body)
    assert "$ref" not in sent
    assert sent["type"] == "object"
    assert sent["properties"] == DEFS["Booking"]["properties"]
    assert sent["required"] == ["city", "guest"]
    assert sent["$defs"] == DEFS  # the ref inside (guest) still resolves


_names = st.text("abcdefgh", min_size=1, max_size=4)
_leaf = st.sampled_from([{"type": "string"}, {"type": "integer"}, {"type": "boolean"}])
_values = st.one_of(st.text(max_size=3), st.integers(), st.booleans(), st.none())


@property_settings(max_examples=200)
@given(
    properties=st.dictionaries(_names, _leaf, max_size=4),
    required=st.lists(_names, max_size=3, unique=True),
    instance=st.dictionaries(_names, _values, max_size=4),
)
def test_the_inlined_schema_accepts_what_the_ref_schema_accepts(
    properties: dict[str, Any], required: list[str], instance: dict[str, Any]
) -> None:
    """The schema sent takes the same arguments as the tool's own (which checks them)."""
    definition = {"type": "object", "properties": properties, "required": required}
    schema = {"$ref": "#/$defs/Args", "$defs": {"Args": definition}}
    sent = function_parameters(schema)
    assert "$ref" not in sent and sent["properties"] == properties
    validators = [Draft202012Validator(s) for s in (schema, sent)]
    assert validators[0].is_valid(instance) == validators[1].is_valid(instance)


UNTYPED = AgentTool(
    "note",
    "Note",
    "take a note",
    {"properties": {"text": {"type": "string"}}, "required": ["text"]},
    lambda call_id, args, signal, on_update: "noted",
)


@pytest.mark.parametrize(
    ("make_model", "reply"),
    [
        (lambda url: get_model("openai/gpt-4o-mini", base_url=url + "/v1"), openai_text),
        (
            lambda url: get_model("openai-responses/gpt-4o-mini", base_url=url + "/v1"),
            responses_text,
        ),
    ],
    ids=["openai-completions", "openai-responses"],
)
async def test_a_root_schema_without_a_type_is_sent_as_an_object(
    server: ReplayServer, make_model: Callable[[str], Model], reply: Callable[[], Reply]
) -> None:
    """An input schema with properties but no `type` (an MCP server's or a hand-written
    tool's; JSON Schema reads it as an object's) went to OpenAI as it was, which refuses
    the whole request ("schema must be a JSON Schema of 'type: \"object\"', got 'type:
    \"None\"'"), on every call the tool is offered in."""
    server.enqueue(reply())
    context = Context("", [UserMessage("note: buy milk")], [UNTYPED])

    message = await complete(make_model(server.url), context, StreamOptions(api_key=KEY))

    assert message.stop_reason == "stop", message.error_message
    sent = parameters_sent(server.requests[0].body)
    assert sent == {"type": "object", **UNTYPED.input_schema}
