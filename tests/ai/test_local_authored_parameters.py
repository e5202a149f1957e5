"""R-11.2 and writeTool: the embedded model's grounding guard checks
that a call's values come from the conversation; what the model composes — writeTool's code,
schema and texts, marked with a JSON Schema `contentMediaType` — is not such a value. Before,
the guard dropped every writeTool call of the 1.5B ("{'args', 'object', 'signal', ...} are
not grounded") and the model answered with code in the chat instead."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable
from typing import Any

import pytest

from tests.ai._local_kit import is_name_probe, probe_reply
from yiemagent import ToolStore, UserMessage
from yiemagent.ai import Context, StreamOptions, get_model, stream
from yiemagent.ai.providers.local import provider
from yiemagent.ai.providers.local.grounding import Grounding, authored, ungrounded
from yiemagent.tools.write_tool import write_tool_tool

MODEL = get_model("local/qwen2.5-coder-1.5b")
PROMPT = (
    "Use writeTool to create a tool named word_count that takes a string argument text and "
    "returns the number of words in it."
)
ARGS: dict[str, Any] = {
    "name": "word_count",
    "label": "Word count",
    "description": "Counts the words of a text.",
    "inputSchema": {
        "type": "object",
        "properties": {"text": {"type": "string"}},
        "required": ["text"],
    },
    "executeCode": "return str(len(args['text'].split()))",
}


def _unmarked(tool: Any) -> Any:
    """The same tool with the `contentMediaType` marks taken out of its schema."""
    schema = json.loads(json.dumps(tool.input_schema))
    for param in schema["properties"].values():
        param.pop("contentMediaType", None)
    return dataclasses.replace(tool, input_schema=schema)


def test_write_tools_composed_parameters_are_not_checked_against_the_request(
    tmp_path: Any,
) -> None:
    tool = write_tool_tool(ToolStore(), tmp_path)
    known = Grounding.of([UserMessage(PROMPT)])
    assert [p for p in tool.input_schema["properties"] if authored(tool, p)] == [
        "label",
        "description",
        "inputSchema",
        "executeCode",
        "imports",
        "validateCode",
        "prepareCode",
    ]
    assert ungrounded(tool, ARGS, known) == set()
    assert ungrounded(_unmarked(tool), ARGS, known)  # e.g. {'object', 'split', ...}
    # the tool's name still comes from the request
    assert ungrounded(tool, {**ARGS, "name": "searchWine"}, known) == {"searchwine"}


class _Runtime:
    def __init__(self, reply: str) -> None:
        self.replies = [reply]

    def chat(self, request: dict[str, Any], on_chunk: Callable[[dict[str, Any]], bool]) -> None:
        if is_name_probe(request):
            reply = probe_reply(self.replies[0] if self.replies else "")
        else:
            reply = self.replies.pop(0) if self.replies and "grammar" not in request else "]"
        for i in range(0, len(reply), 7):
            if on_chunk({"choices": [{"index": 0, "delta": {"content": reply[i : i + 7]}}]}):
                return
        on_chunk({"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]})


@pytest.mark.parametrize("marked", [True, False], ids=["marked", "unmarked"])
async def test_the_embedded_model_s_write_tool_call_is_sent(
    marked: bool, tmp_path: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    tool = write_tool_tool(ToolStore(), tmp_path)
    tool = tool if marked else _unmarked(tool)
    call = json.dumps({"name": "writeTool", "arguments": ARGS})
    answer = json.dumps({"name": "answer", "text": "Here is a word counter."})
    runtime = _Runtime(call)
    runtime.replies.append(answer)  # what the model writes once the call is dropped

    async def get_runtime(spec: Any) -> _Runtime:
        return runtime

    monkeypatch.setattr(provider, "get_runtime", get_runtime)
    s = stream(MODEL, Context("sys", [UserMessage(PROMPT)], [tool]), StreamOptions())
    _ = [event async for event in s]
    message = await s.result()
    if marked:
        assert message.stop_reason == "toolUse"
        assert [c.arguments for c in message.tool_calls] == [ARGS]
    else:  # the guard drops it, and the model is asked again without writeTool
        assert message.stop_reason == "stop" and message.tool_calls == []
