"""The embedded-model provider on inputs from other frameworks' bug reports, with the fake
runtime of test_local_provider (DESIGN §7)."""

from __future__ import annotations

import json
from collections.abc import Callable

from tests.ai._local_kit import CALC, FakeRuntime, _events
from yiemagent import TextContent, ToolCall, ToolResultMessage, UserMessage
from yiemagent.ai import Context
from yiemagent.types.messages import AssistantMessage


async def test_lone_surrogates_reach_the_runtime_replaced(
    fake: Callable[..., FakeRuntime],
) -> None:
    """A tool listing a file name decoded with surrogateescape: the next request must not
    fail on it (the runtime gets U+FFFD), and the transcript keeps the original."""
    runtime = fake([json.dumps({"name": "answer", "text": "done"})])
    result = ToolResultMessage("call_1", "calculator", [TextContent("file \udcff.txt")])
    messages = [
        UserMessage("list \ud800"),
        AssistantMessage([ToolCall("call_1", "calculator", {"expression": "1"})]),
        result,
    ]
    events = await _events(Context("sys", messages, [CALC]))
    assert events[-1].type == "done"
    sent = json.dumps(runtime.requests[0]["messages"], ensure_ascii=False)
    assert "\ufffd" in sent
    sent.encode("utf-8")  # no lone surrogate left
    assert result.content[0].text == "file \udcff.txt"
