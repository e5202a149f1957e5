"""The embedded model in its own tool format (`tool_format="native"`, DESIGN §20): Qwen's
`<tool_call>` blocks held to the tools' schemas by a grammar, free text left free. The
prompt and grammar are checked with the scripted runtime; the real 0.5B writes a call in
its own format (marker local_model). ("Say hello." with a calculator offered got a
calculator call from the 0.5B in this format: no rule guards it yet, docs/local-model.md.)"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest

from tests.ai._local_kit import FakeRuntime
from yiemagent import AssistantMessage, UserMessage
from yiemagent.ai import Context, stream
from yiemagent.ai.providers.local import local_model
from yiemagent.ai.providers.local.native import native_messages
from yiemagent.cli.options import example_tools
from yiemagent.types.messages import TextContent, ToolCall, ToolResultMessage

NATIVE = local_model(tool_format="native")


async def _message(context: Context) -> AssistantMessage:
    return await stream(NATIVE, context).result()


async def test_a_tool_call_block_becomes_a_call_and_ends_with_tool_use(
    fake: Callable[..., FakeRuntime],
) -> None:
    block = (
        '<tool_call>\n{"name": "calculator", "arguments": {"expression": "6 * 7"}}\n</tool_call>'
    )
    runtime = fake([], more=[block])  # the fake answers a request with a grammar from `more`
    message = await _message(Context("", [UserMessage("6 * 7?")], example_tools("calculator")))
    assert message.stop_reason == "toolUse"
    assert [(c.name, c.arguments) for c in message.tool_calls] == [
        ("calculator", {"expression": "6 * 7"})
    ]
    [request] = runtime.requests
    assert "response_format" not in request and "<tool_call>" in request["grammar"]
    system = request["messages"][0]["content"]
    assert "<tools>" in system and '"name": "calculator"' in system
    assert runtime.probes == []  # no free-name probe: the native format runs no offer rules


async def test_free_text_stays_text(fake: Callable[..., FakeRuntime]) -> None:
    fake([], more=["Hello! How can I help?"])
    message = await _message(Context("", [UserMessage("Hi")], example_tools("calculator")))
    assert (message.stop_reason, message.text, message.tool_calls) == (
        "stop",
        "Hello! How can I help?",
        [],
    )


def test_earlier_calls_and_results_are_framed_as_the_template_does() -> None:
    call = ToolCall(id="c1", name="get_time", arguments={"place": "Oslo"})
    messages: list[Any] = [
        UserMessage("Time in Oslo?"),
        AssistantMessage(content=[call], stop_reason="toolUse"),
        ToolResultMessage("c1", "get_time", [TextContent("14:02")]),
    ]
    chat = native_messages("sys", messages)
    assert [m["role"] for m in chat] == ["system", "user", "assistant", "user"]
    body = chat[2]["content"].removeprefix("<tool_call>\n").removesuffix("\n</tool_call>")
    assert json.loads(body) == {"name": "get_time", "arguments": {"place": "Oslo"}}
    assert chat[3]["content"] == "<tool_response>\n14:02\n</tool_response>"


@pytest.mark.local_model
@pytest.mark.slow
async def test_the_real_model_writes_a_call_in_its_own_format() -> None:
    """One reply: a `<tool_call>` block, held to the calculator's schema, read as a call
    whose expression holds the request's numbers."""
    pytest.importorskip("xllamacpp")
    request = UserMessage("Use the calculator: what is 17 * 23?")
    context = Context("You are a helpful assistant.", [request], example_tools("calculator"))
    message = await _message(context)
    assert message.stop_reason == "toolUse", message.text
    [call] = message.tool_calls[:1]
    assert call.name == "calculator"
    expression = str(call.arguments.get("expression"))
    assert "17" in expression and "23" in expression
    assert "<tool_call>" not in message.text
