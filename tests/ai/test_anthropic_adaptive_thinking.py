"""Claude 4.6 and later think adaptively, and 4.7 and later take no temperature: the request
each model gets for a reasoning level, recorded by a server on 127.0.0.1 through the real
`anthropic` SDK and checked against the SDK's request types.

Anthropic's API answers HTTP 400 to `thinking: {"type": "enabled", "budget_tokens": N}` from
Claude Opus 4.7 on ("thinking.type.enabled is not supported for this model. Use
thinking.type.adaptive and output_config.effort") and to any `temperature` ("`temperature`
is deprecated for this model"): every call of a run with a reasoning level or a temperature
failed on those models. Earlier models take only the budget form."""

from __future__ import annotations

import json
import logging
from typing import Any

import pytest
from hypothesis import given, strategies as st

from tests.ai.servers import ReplayServer, anthropic_events, sse_reply
from tests.ai.test_wire_schemas import assert_valid
from yiemagent.ai.providers.anthropic_messages import claude_version, stream_anthropic_messages
from yiemagent.types.messages import (
    AssistantMessage,
    Message,
    TextContent,
    ToolCall,
    ToolResultMessage,
    UserMessage,
)
from yiemagent.types.model import Context, Model, StreamOptions, ThinkingLevel
from yiemagent.types.tools import AgentTool

pytestmark = pytest.mark.timeout(120)

KEY = "sk-ant-test-0123456789abcdef"
ADAPTIVE = {"type": "adaptive", "display": "summarized"}
"""Thinking as Claude 4.6 and later get it: adaptive, its summary shown (from 4.7 on the
API sends only a signature by default, and the user would see no thinking)."""


def claude(server: ReplayServer, model_id: str) -> Model:
    return Model(
        id=model_id,
        provider="anthropic",
        api="anthropic-messages",
        base_url=server.url,
        reasoning=True,
        max_tokens=32_000,
    )


async def request(server: ReplayServer, model: Model, **options: Any) -> dict[str, Any]:
    """The body `model` was sent for one call with `options`; the call must end done."""
    server.enqueue(sse_reply(anthropic_events({"type": "text", "text": "ok"})))
    stream = stream_anthropic_messages(
        model, Context("Be brief.", [UserMessage("hi")]), StreamOptions(api_key=KEY, **options)
    )
    message = await stream.result()
    assert message.stop_reason == "stop", message.error_message
    body: dict[str, Any] = server.requests[-1].body
    assert_valid("anthropic-messages", body)
    return body


@pytest.mark.parametrize(
    ("level", "effort"),
    [("minimal", "low"), ("low", "low"), ("medium", "medium"), ("high", "high"), ("xhigh", "max")],
)
async def test_opus_4_7_thinks_adaptively_at_the_levels_effort(
    server: ReplayServer, level: ThinkingLevel, effort: str
) -> None:
    body = await request(server, claude(server, "claude-opus-4-7"), reasoning=level)
    assert body["thinking"] == ADAPTIVE
    assert body["output_config"] == {"effort": effort}
    assert body["max_tokens"] == 32_000  # no budget to make room for


async def test_claude_5_gets_no_temperature_with_or_without_thinking(
    server: ReplayServer, caplog: pytest.LogCaptureFixture
) -> None:
    model = claude(server, "claude-sonnet-5")
    with caplog.at_level(logging.WARNING, logger="yiemagent.ai.providers.anthropic_messages"):
        plain = await request(server, model, temperature=0.2)
        thinking = await request(server, model, temperature=0.2, reasoning="low")
    assert "temperature" not in plain and "thinking" not in plain
    assert "temperature" not in thinking and thinking["thinking"] == ADAPTIVE
    said = [r.getMessage() for r in caplog.records if "temperature" in r.getMessage()]
    assert said == ["claude-sonnet-5 takes no temperature: it is not sent"]  # once


async def test_sonnet_4_6_thinks_adaptively_and_keeps_temperature_without_thinking(
    server: ReplayServer,
) -> None:
    model = claude(server, "claude-sonnet-4-6")
    thinking = await request(server, model, reasoning="medium", temperature=0.5)
    assert thinking["thinking"] == ADAPTIVE
    assert thinking["output_config"] == {"effort": "medium"}
    assert "temperature" not in thinking  # refused with thinking on, as ever
    plain = await request(server, model, temperature=0.5)
    assert plain["temperature"] == 0.5 and "thinking" not in plain


async def test_sonnet_4_5_keeps_the_budget(server: ReplayServer) -> None:
    body = await request(
        server, claude(server, "claude-sonnet-4-5-20250929"), reasoning="high", temperature=0.5
    )
    assert body["thinking"] == {"type": "enabled", "budget_tokens": 16384}
    assert "output_config" not in body and "temperature" not in body


async def test_effort_and_output_schema_share_output_config(server: ReplayServer) -> None:
    schema = {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}
    body = await request(
        server, claude(server, "claude-opus-4-7"), reasoning="low", output_schema=schema
    )
    assert body["output_config"]["effort"] == "low"
    assert body["output_config"]["format"]["type"] == "json_schema"
    assert body["output_config"]["format"]["schema"]["required"] == ["n"]


async def test_a_tool_loop_begun_without_thinking_goes_on_thinking_adaptively(
    server: ReplayServer,
) -> None:
    """The budget form leaves thinking off when the open tool turn has no thinking block
    (the API refuses it then); an adaptive model may think in the middle of a loop."""
    model = claude(server, "claude-opus-4-7")
    call = ToolCall("toolu_1", "lookup", {"q": "x"})
    history: list[Message] = [
        UserMessage("look it up"),
        AssistantMessage(content=[call], api=model.api, provider=model.provider, model=model.id),
        ToolResultMessage("toolu_1", "lookup", [TextContent("found")]),
    ]
    server.enqueue(sse_reply(anthropic_events({"type": "text", "text": "ok"})))
    stream = stream_anthropic_messages(
        model, Context("", history), StreamOptions(api_key=KEY, reasoning="high")
    )
    message = await stream.result()
    assert message.stop_reason == "stop", message.error_message
    assert server.requests[-1].body["thinking"] == ADAPTIVE


@pytest.mark.parametrize(
    ("model_id", "version"),
    [
        ("claude-opus-4-7", (4, 7)),
        ("claude-sonnet-5", (5, 0)),
        ("claude-haiku-4-5-20251001", (4, 5)),
        ("claude-opus-4-20250514", (4, 0)),
        ("claude-3-7-sonnet-20250219", (3, 7)),
        ("claude-3-5-haiku-latest", (3, 5)),
        ("anthropic.claude-opus-4-6-v1:0", (4, 6)),
        ("us.anthropic.claude-sonnet-4-6", (4, 6)),
        ("claude-mythos-preview", (5, 0)),
        ("claude-test-1", (1, 0)),
        ("my-proxy-model", None),
        ("claude-latest", None),
    ],
)
def test_claude_version_of_ids_as_written(model_id: str, version: tuple[int, int] | None) -> None:
    assert claude_version(model_id) == version


@given(
    family=st.sampled_from(["opus", "sonnet", "haiku", "fable"]),
    major=st.integers(3, 9),
    minor=st.integers(0, 9) | st.none(),
    date=st.integers(20240101, 20291231) | st.none(),
    before=st.booleans(),
    prefix=st.sampled_from(["", "anthropic.", "us.anthropic."]),
)
def test_claude_version_reads_any_spelling(
    family: str, major: int, minor: int | None, date: int | None, before: bool, prefix: str
) -> None:
    numbers = f"{major}" + (f"-{minor}" if minor is not None else "")
    name = f"claude-{numbers}-{family}" if before else f"claude-{family}-{numbers}"
    model_id = prefix + name + (f"-{date}" if date is not None else "")
    assert claude_version(model_id) == (major, minor or 0)
    assert claude_version(model_id.upper()) == (major, minor or 0)


def _event(data: dict[str, Any]) -> str:
    return f"event: {data['type']}\ndata: {json.dumps(data)}"


async def test_thinking_sent_as_its_signature_alone_goes_back_with_the_call(
    server: ReplayServer,
) -> None:
    """A thinking block whose text the API left out (`display` "omitted", the default
    from 4.7 on when no summary is asked for) is kept, and goes back signed before its
    call."""
    start = {
        "type": "message_start",
        "message": {
            "id": "msg_1",
            "type": "message",
            "role": "assistant",
            "model": "claude-opus-4-7",
            "content": [],
            "stop_reason": None,
            "usage": {"input_tokens": 5, "output_tokens": 1},
        },
    }
    thinking = {"type": "thinking", "thinking": "", "signature": ""}
    call = {"type": "tool_use", "id": "toolu_1", "name": "lookup", "input": {}}
    events = [
        start,
        {"type": "content_block_start", "index": 0, "content_block": thinking},
        {
            "type": "content_block_delta",
            "index": 0,
            "delta": {"type": "signature_delta", "signature": "EqSIGNED=="},
        },
        {"type": "content_block_stop", "index": 0},
        {"type": "content_block_start", "index": 1, "content_block": call},
        {
            "type": "content_block_delta",
            "index": 1,
            "delta": {"type": "input_json_delta", "partial_json": '{"q": "x"}'},
        },
        {"type": "content_block_stop", "index": 1},
        {
            "type": "message_delta",
            "delta": {"stop_reason": "tool_use"},
            "usage": {"output_tokens": 9},
        },
        {"type": "message_stop"},
    ]
    server.enqueue(
        sse_reply([_event(e) for e in events]),
        sse_reply(anthropic_events({"type": "text", "text": "ok"})),
    )
    model = claude(server, "claude-opus-4-7")
    tool = AgentTool("lookup", "Lookup", "look up", {"type": "object"}, lambda *_: "")
    context = Context("", [UserMessage("look it up")], [tool])
    options = StreamOptions(api_key=KEY, reasoning="high")
    first = await stream_anthropic_messages(model, context, options).result()
    assert first.stop_reason == "toolUse", first.error_message
    context.messages += [first, ToolResultMessage("toolu_1", "lookup", [TextContent("found")])]
    second = await stream_anthropic_messages(model, context, options).result()
    assert second.stop_reason == "stop", second.error_message
    turn = server.requests[-1].body["messages"][1]
    assert turn["content"][0] == {"type": "thinking", "thinking": "", "signature": "EqSIGNED=="}
    assert turn["content"][1]["type"] == "tool_use"
