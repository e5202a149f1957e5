"""A streamed tool call's name as agno checks its providers' (tests/unit/models/
test_parse_tool_calls_name.py: a name resent in later chunks is not doubled,
"retrieve_contentsretrieve_contents"; an empty name in a later chunk does not erase it;
arguments still add up; two calls keep their own names), through the OpenAI SDK against
a server on 127.0.0.1 that streams each shape."""

from __future__ import annotations

from typing import Any

import pytest

from tests.ai.servers import ReplayServer, openai_chunks, sse_reply
from yiemagent.ai import stream
from yiemagent.types import Context, Model, StreamOptions, UserMessage

pytestmark = pytest.mark.timeout(60)


def delta(index: int, id: str | None, name: str | None, arguments: str) -> dict[str, Any]:
    function: dict[str, Any] = {"arguments": arguments}
    if name is not None:
        function["name"] = name
    out: dict[str, Any] = {"index": index, "function": function}
    if id is not None:
        out.update(id=id, type="function")
    return out


SHAPES = {
    "name-once": [delta(0, "c1", "retrieve_contents", '{"q"'), delta(0, None, None, ': "a"}')],
    "name-resent": [
        delta(0, "c1", "retrieve_contents", '{"q"'),
        delta(0, None, "retrieve_contents", ': "a"}'),
    ],
    "name-and-id-resent": [
        delta(0, "c1", "retrieve_contents", '{"q"'),
        delta(0, "c1", "retrieve_contents", ': "a"}'),
    ],
    "empty-name-later": [delta(0, "c1", "retrieve_contents", '{"q"'), delta(0, None, "", ': "a"}')],
    "name-in-pieces": [delta(0, "c1", "retrieve_", '{"q"'), delta(0, None, "contents", ': "a"}')],
}


@pytest.mark.parametrize("shape", list(SHAPES))
async def test_a_call_s_name_is_read_once_however_the_server_repeats_it(
    server: ReplayServer, shape: str
) -> None:
    chunks = ({"tool_calls": [d]} for d in SHAPES[shape])
    server.enqueue(sse_reply(openai_chunks(*chunks, finish_reason="tool_calls")))
    model = Model(id="m", provider="vllm", api="openai-completions", base_url=server.url + "/v1")

    message = await stream(
        model, Context("", [UserMessage("go")]), StreamOptions(api_key="k")
    ).result()

    assert message.stop_reason == "toolUse", message.error_message
    assert [(c.id, c.name, c.arguments) for c in message.tool_calls] == [
        ("c1", "retrieve_contents", {"q": "a"})
    ]


async def test_two_calls_streamed_side_by_side_keep_their_own_names(server: ReplayServer) -> None:
    deltas = [
        delta(0, "c1", "a_tool", '{"q": '),
        delta(1, "c2", "b_tool", '{"q": '),
        delta(0, None, "a_tool", "1}"),
        delta(1, None, "b_tool", "2}"),
    ]
    server.enqueue(
        sse_reply(openai_chunks(*({"tool_calls": [d]} for d in deltas), finish_reason="tool_calls"))
    )
    model = Model(id="m", provider="vllm", api="openai-completions", base_url=server.url + "/v1")

    message = await stream(
        model, Context("", [UserMessage("go")]), StreamOptions(api_key="k")
    ).result()

    assert [(c.id, c.name, c.arguments) for c in message.tool_calls] == [
        ("c1", "a_tool", {"q": 1}),
        ("c2", "b_tool", {"q": 2}),
    ]
