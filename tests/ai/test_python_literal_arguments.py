"""A small model writes a call's arguments as a Python literal (`{'city': 'Oslo', 'metric':
True, 'unit': None}`: single quotes, True/False/None), not JSON. Such text was refused as
"arguments are not valid JSON" though what it means is plain; it is now read with
`ast.literal_eval` (literals only, nothing runs) when it is an object JSON could hold."""

from __future__ import annotations

import math
from typing import Any

import pytest
from hypothesis import given, strategies as st

from tests.ai._stream_kit import fragments, property_settings, streamed
from tests.ai.servers import ReplayServer, openai_chunks, sse_reply
from yiemagent.ai.providers.openai_completions import stream_openai_completions
from yiemagent.types.messages import AssistantMessage, ToolCall, UserMessage
from yiemagent.types.model import Context, Model, StreamOptions

pytestmark = pytest.mark.timeout(120)

json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(10**12), 10**12)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=12),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3)
    ),
    max_leaves=8,
)
objects = st.dictionaries(st.text(max_size=8), json_values, max_size=4)


def call_with(server: ReplayServer, pieces: list[str]) -> ToolCall:
    deltas = [
        {"index": 0, "id": "call_0", "type": "function",
         "function": {"name": "lookup", "arguments": pieces[0]}},
        *({"index": 0, "function": {"arguments": piece}} for piece in pieces[1:]),
    ]  # fmt: skip
    server.enqueue(
        sse_reply(openai_chunks(*({"tool_calls": [d]} for d in deltas), finish_reason="tool_calls"))
    )
    model = Model(id="m", provider="vllm", api="openai-completions", base_url=server.url + "/v1")
    message: AssistantMessage = streamed(
        lambda: stream_openai_completions(
            model, Context("", [UserMessage("go")]), StreamOptions(api_key="k-1234")
        ).result()
    )
    [call] = message.tool_calls
    return call


@property_settings(max_examples=40)
@given(data=st.data(), value=objects)
def test_arguments_written_as_a_python_literal_are_the_object_they_write(
    stream_server: ReplayServer, data: st.DataObject, value: dict[str, Any]
) -> None:
    text = repr(value)
    call = call_with(stream_server, fragments(data.draw, text, max_cuts=4))
    assert call.partial_json is None, text
    assert call.arguments == value


@pytest.mark.parametrize(
    "text",
    [
        "{'path': __import__('os').getcwd()}",  # a call: never evaluated
        "{'a': open('x')}",
        "{'a': 1e999}",  # inf: no JSON number
        "{'a': (1, 2)}",  # a tuple, a set, bytes: no JSON value
        "{'a': {1, 2}}",
        "{'a': b'x'}",
        "{1: 'a'}",  # a key that is not a text
        "['a', 1]",  # not an object
        "{'a': 1",  # cut off
    ],
)
def test_text_that_is_no_literal_json_object_stays_malformed(
    stream_server: ReplayServer, text: str
) -> None:
    call = call_with(stream_server, [text])
    assert call.partial_json == text  # the tool pipeline says "not valid JSON" with it
    assert not any(isinstance(v, float) and math.isinf(v) for v in call.arguments.values())
