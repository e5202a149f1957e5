"""A tool whose input schema has `anyOf`/`oneOf` at its root (a pydantic discriminated union
as the parameters, an MCP server's "give `route` or `file`"): OpenAI is sent an object root
naming every branch's parameters, the choice said in the description, as Anthropic is. It
got `{"oneOf": [...], "type": "object", "properties": {}}` and so saw no parameters. Replay
servers on 127.0.0.1 speaking each wire format record the request."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Annotated, Any, Literal

import pytest
from hypothesis import given, strategies as st
from jsonschema import Draft202012Validator
from pydantic import BaseModel, Field, TypeAdapter

from tests.ai._stream_kit import property_settings
from tests.ai.servers import ReplayServer, Reply
from tests.ai.test_context_none import KEY
from tests.ai.test_root_ref_tool_schema import THREE_WIRES
from yiemagent import AgentTool, UserMessage
from yiemagent.ai import Context, Model, StreamOptions, complete
from yiemagent.ai.openai_wire import function_parameters

pytestmark = pytest.mark.timeout(120)  # the first call imports a provider SDK


class Cat(BaseModel):
    kind: Literal["cat"]
    meows: int


class Dog(BaseModel):
    kind: Literal["dog"]
    barks: bool


PET = TypeAdapter(Annotated[Cat | Dog, Field(discriminator="kind")]).json_schema()
ADOPT = AgentTool(
    "adopt", "Adopt", "adopt a pet", PET, lambda call_id, args, signal, on_update: "adopted"
)


@pytest.fixture
def server() -> Iterator[ReplayServer]:
    with ReplayServer() as s:
        yield s


def tool_sent(body: dict[str, Any]) -> tuple[dict[str, Any], str]:
    """The one tool's parameters and description as the request carried them."""
    [tool] = body["tools"]
    if "input_schema" in tool:  # Anthropic
        return tool["input_schema"], tool["description"]
    fields = tool.get("function", tool)  # Chat Completions, Responses
    return fields["parameters"], fields["description"]


@THREE_WIRES
async def test_a_union_root_is_sent_as_an_object_naming_every_parameter(
    server: ReplayServer, make_model: Callable[[str], Model], reply: Callable[[], Reply]
) -> None:
    server.enqueue(reply())
    context = Context("", [UserMessage("adopt a cat that meows twice")], [ADOPT])

    message = await complete(make_model(server.url), context, StreamOptions(api_key=KEY))

    assert message.stop_reason == "stop", message.error_message
    sent, description = tool_sent(server.requests[0].body)
    assert sent["type"] == "object"
    assert not {"anyOf", "oneOf", "allOf", "discriminator"} & set(sent)
    assert set(sent["properties"]) == {"kind", "meows", "barks"}
    assert sent["required"] == ["kind"]  # every branch requires it
    kind = Draft202012Validator({**sent["properties"]["kind"], "$defs": sent.get("$defs", {})})
    assert kind.is_valid("cat") and kind.is_valid("dog") and not kind.is_valid("cow")
    assert description == (
        "adopt a pet\n\nExactly one of these must be given: kind and meows; or kind and barks."
    )
    assert ADOPT.input_schema == PET  # the tool's own schema is left as it is


_names = st.sampled_from(["a", "b", "c", "d"])
_leaf = st.sampled_from(
    [{"type": "string"}, {"type": "integer"}, {"const": "x"}, {"enum": [1, 2]}, {}]
)
_branch = st.builds(
    lambda properties, required: {
        "type": "object",
        "properties": properties,
        "required": sorted(set(required)),
        "additionalProperties": False,
    },
    st.dictionaries(_names, _leaf, max_size=3),
    st.lists(_names, max_size=2),
)
_values = st.one_of(st.text("xy", max_size=2), st.integers(0, 3), st.booleans(), st.none())


@property_settings(max_examples=300)
@given(
    keyword=st.sampled_from(["anyOf", "oneOf", "allOf"]),
    branches=st.lists(_branch, min_size=1, max_size=3),
    instance=st.dictionaries(_names, _values, max_size=4),
)
def test_the_sent_schema_takes_every_call_the_tool_takes(
    keyword: str, branches: list[dict[str, Any]], instance: dict[str, Any]
) -> None:
    """Arguments the tool's own schema accepts (the pipeline checks them against it) are
    never refused by the schema the model is shown: folding only drops the choice."""
    schema = {keyword: branches}
    sent = function_parameters(schema)
    assert sent["type"] == "object" and keyword not in sent
    for branch in branches:
        assert set(branch["properties"]) <= set(sent["properties"])
    if Draft202012Validator(schema).is_valid(instance):
        assert Draft202012Validator(sent).is_valid(instance), sent
