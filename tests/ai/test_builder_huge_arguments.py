"""The message builder on a huge streamed tool-call argument (DESIGN §8 "a huge argument"):
a file written by a tool, streamed in small fragments, must not cost quadratic parsing."""

from __future__ import annotations

import json
import time

from yiemagent.ai.builder import MessageBuilder
from yiemagent.types.messages import ToolCall
from yiemagent.types.model import AssistantMessageEventStream, Model


def test_huge_argument_in_small_fragments_is_parsed_in_linear_time() -> None:
    content = "line of a generated file, quite long\n" * 6000  # ~220 KB
    text = json.dumps({"path": "out.txt", "content": content})
    stream = AssistantMessageEventStream()
    builder = MessageBuilder(Model(id="m", provider="p", api="faux"), stream)
    builder.start()
    builder.tool_call_start("call_1", "write")
    call = builder.message.content[0]
    assert isinstance(call, ToolCall)
    seen_paths = 0
    started = time.process_time()  # CPU time: other processes do not inflate it
    for i in range(0, len(text), 8):
        builder.tool_call_delta(text[i : i + 8])
        assert isinstance(call.arguments, dict)
        seen_paths += call.arguments.get("path") == "out.txt"
    message = builder.done("toolUse")
    elapsed = time.process_time() - started
    assert message.content == [ToolCall("call_1", "write", {"path": "out.txt", "content": content})]
    assert seen_paths > 1000  # the partial arguments kept growing while streaming
    assert elapsed < 3.0  # re-parsing all of it after every fragment takes ~10 s of CPU


def test_nan_and_infinity_are_not_json() -> None:
    """Python's json accepts NaN; resent to a strict API it would fail every later request.
    Arguments holding it are malformed JSON (the tool pipeline reports it to the model)."""
    from yiemagent.ai.builder import parse_json_object, parse_partial_json

    assert parse_json_object('{"x": NaN}') is None
    assert parse_json_object('{"x": -Infinity}') is None
    assert parse_partial_json('{"a": 1, "x": NaN}') == {"a": 1}
    stream = AssistantMessageEventStream()
    builder = MessageBuilder(Model(id="m", provider="p", api="faux"), stream)
    builder.start()
    builder.tool_call_start("c", "f")
    builder.tool_call_delta('{"a": 1, "x": NaN}')
    call = builder.done("toolUse").content[0]
    assert isinstance(call, ToolCall)
    assert call.arguments == {"a": 1} and call.partial_json == '{"a": 1, "x": NaN}'
