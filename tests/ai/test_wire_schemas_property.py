"""Property (DESIGN §21): whatever a session holds — turns of Claude, GPT over the
Responses API and GPT over Chat Completions, with thinking (signed, redacted, a Responses
reasoning item), images of every type (one no API reads), PDFs, tool calls with odd ids,
results with images, turns that ended in error — the body each SDK provider sends (and
`ollama/…`'s, which reads calls written as text) validates
against the official SDK's request types (`tests/ai/test_wire_schemas.py`). Through the
SDKs against the module's replay server."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, strategies as st

from tests.ai._stream_kit import property_settings, streamed
from tests.ai.servers import ReplayServer, openai_chunks, sse_reply
from tests.ai.test_attachments import PNG, responses_done, responses_sse
from tests.ai.test_wire_schemas import GIF, JPEG, WEBP, assert_valid
from yiemagent import AgentTool
from yiemagent.ai import Context, StreamOptions, get_model, stream
from yiemagent.ai.attachments import load_attachment
from yiemagent.types.messages import (
    AssistantContent,
    AssistantMessage,
    DocumentContent,
    ImageContent,
    Message,
    TextContent,
    ThinkingContent,
    ToolCall,
    ToolResultMessage,
    UserMessage,
)
from yiemagent.types.model import Model

pytestmark = pytest.mark.timeout(600)

KEY = "sk-test-0123456789abcdef"
AUTHORS = ["anthropic/claude-sonnet-4-5", "openai-responses/gpt-5-mini", "openai/gpt-4o"]
_IMAGES = [load_attachment(b) for b in (PNG, JPEG, GIF, WEBP)]
_user_block = st.sampled_from(
    [
        TextContent("look"),
        TextContent(" "),
        *_IMAGES,
        ImageContent("Qk0AAAAA", "image/bmp"),
        DocumentContent("JVBERi0xLjQK", name="a.pdf"),
        DocumentContent("JVBERi0xLjQK"),
    ]
)
_REASONING = json.dumps(
    {
        "type": "reasoning",
        "id": "rs_1",
        "summary": [{"type": "summary_text", "text": "hm"}],
        "encrypted_content": "ZW5j",
    }
)
_thinking = st.sampled_from(
    [
        ThinkingContent("hm", signature="c2ln"),
        ThinkingContent("", signature="cmVk", redacted=True),
        ThinkingContent("hm", signature=_REASONING),
        ThinkingContent("unsigned"),
    ]
)
_call_id = st.sampled_from(["toolu_01abc", "call_x|fc_y", "functions.f:0", "", "x" * 70, "a b"])


@st.composite
def sessions(draw: st.DrawFn) -> list[Message]:
    """1-5 exchanges, each answered by one of `AUTHORS`, ending in a user turn or results."""
    messages: list[Message] = []
    for _ in range(draw(st.integers(1, 5))):
        messages.append(UserMessage(draw(st.lists(_user_block, min_size=1, max_size=3))))
        author = get_model(draw(st.sampled_from(AUTHORS)))
        calls = [
            ToolCall(draw(_call_id), "lookup", draw(st.sampled_from([{}, {"q": "é"}])))
            for _ in range(draw(st.integers(0, 2)))
        ]
        content: list[AssistantContent] = [
            *draw(st.lists(_thinking, max_size=2)),
            *draw(st.sampled_from([[], [TextContent("ok")], [TextContent("")]])),
            *calls,
        ]
        stop = draw(st.sampled_from(["stop", "error"])) if not calls else "toolUse"
        messages.append(
            AssistantMessage(
                content,
                api=author.api,
                provider=author.provider,
                model=author.id,
                stop_reason=stop,  # type: ignore[arg-type]
            )
        )
        for call in calls:
            image = draw(st.lists(st.sampled_from(_IMAGES), max_size=1))
            messages.append(
                ToolResultMessage(call.id, "lookup", [TextContent("r"), *image], is_error=False)
            )
    if not isinstance(messages[-1], ToolResultMessage) or draw(st.booleans()):
        messages.append(UserMessage(draw(st.lists(_user_block, min_size=1, max_size=2))))
    return messages


def _answer(model: Model) -> list[str] | str:
    if model.api == "anthropic-messages":
        return "anthropic_text.sse"
    if model.api == "openai-responses":
        return responses_sse(
            {"type": "response.output_text.delta", "item_id": "msg_1", "delta": "ok"},
            responses_done(),
        )
    return openai_chunks({"content": "ok"})


TOOLS = [AgentTool("lookup", "lookup", "Looks up.", {"type": "object"}, lambda *_: "")]


@property_settings(max_examples=30)
@given(
    messages=sessions(),
    to=st.sampled_from([*AUTHORS, "ollama/qwen3"]),
    reasoning=st.sampled_from([None, "low"]),
)
def test_every_body_fits_the_sdk_types(
    stream_server: ReplayServer, messages: list[Message], to: str, reasoning: str | None
) -> None:
    root = stream_server.url if to.startswith("anthropic/") else stream_server.url + "/v1"
    model = get_model(to, base_url=root, vision=True if to.startswith("ollama/") else None)
    stream_server.enqueue(sse_reply(_answer(model)))
    options = StreamOptions(api_key=KEY, max_tokens=2048, reasoning=reasoning)  # type: ignore[arg-type]
    context = Context("Be brief.", messages, TOOLS)
    reply = streamed(lambda: stream(model, context, options).result())
    assert reply.stop_reason == "stop", reply.error_message
    body = stream_server.requests[-1].body
    assert_valid(model.api, body)
    assert_calls_answered(model.api, body)


def assert_calls_answered(api: str, body: dict[str, Any]) -> None:
    """What the types cannot say and the APIs refuse: every call id is unique and every
    call is answered once, by results that come right after it (Anthropic: in the next
    user turn; Chat Completions: tool messages right after the assistant message; the
    Responses API: an output after its call)."""
    if api == "openai-responses":
        calls = [i["call_id"] for i in body["input"] if i.get("type") == "function_call"]
        outputs = [i["call_id"] for i in body["input"] if i.get("type") == "function_call_output"]
        assert len(set(calls)) == len(calls) and sorted(outputs) == sorted(calls)
        seen: set[str] = set()
        for item in body["input"]:
            if item.get("type") == "function_call":
                seen.add(item["call_id"])
            elif item.get("type") == "function_call_output":
                assert item["call_id"] in seen
        return
    messages = body["messages"]
    ids: list[str] = []
    for n, message in enumerate(messages):
        if message["role"] != "assistant":
            continue
        if api == "anthropic-messages":
            called = [b["id"] for b in message["content"] if b["type"] == "tool_use"]
            answers = messages[n + 1]["content"] if called else []
            answered = [b["tool_use_id"] for b in answers if b["type"] == "tool_result"]
        else:
            called = [c["id"] for c in message.get("tool_calls") or []]
            answered = []
            for following in messages[n + 1 :]:
                if following["role"] != "tool":
                    break
                answered.append(following["tool_call_id"])
        assert answered == called, (called, answered)
        ids += called
    assert len(set(ids)) == len(ids)
