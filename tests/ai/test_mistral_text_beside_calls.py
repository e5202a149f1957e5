"""Mistral's API checks a conversation with `mistral-common`'s validator, whose rules for
models of its v3 tokenizer include "Assistant message must have either content or
tool_calls, but not both" (HTTP 400 or 422; langchain-ai/langchain#21196,
github/copilot-cli#4884). A model that says a sentence before its call (Devstral does)
bricked the session on the next request. Such a turn goes to Mistral as two assistant
messages, the text and then the calls (an assistant message may follow another); other
servers get it as one. Each request is checked here against those rules."""

from __future__ import annotations

from typing import Any

import pytest

from tests.ai.servers import ReplayServer, openai_chunks, sse_reply
from yiemagent.ai.providers.openai_completions import stream_openai_completions
from yiemagent.types.messages import (
    AssistantMessage,
    Message,
    TextContent,
    ThinkingContent,
    ToolCall,
    ToolResultMessage,
    UserMessage,
)
from yiemagent.types.model import Context, Model, StreamOptions

pytestmark = pytest.mark.timeout(120)

KEY = "mistral-key-0123456789"
FOLLOWS = {
    "system": {"user", "assistant", "system"},
    "user": {"assistant", "system", "user"},
    "assistant": {"assistant", "user", "tool"},
    "tool": {"assistant", "tool", "user"},
}
"""mistral-common's `_validate_message_list_structure`: the roles that may follow each."""


def mistral_refusal(messages: list[dict[str, Any]]) -> str | None:
    """What Mistral's validator says of `messages`, or None when it takes them."""
    expected_results = 0
    for before, message in zip([None, *messages], messages, strict=False):
        role = message["role"]
        if before is not None and role not in FOLLOWS[before["role"]]:
            return f"Unexpected role '{role}' after role '{before['role']}'"
        if role == "assistant":
            if bool(message.get("content")) == bool(message.get("tool_calls")):
                return "Assistant message must have either content or tool_calls, but not both."
            if expected_results:
                return "Not the same number of function calls and responses"
            expected_results = len(message.get("tool_calls") or ())
        elif role == "tool":
            expected_results -= 1
    return None


def turn(*blocks: Any) -> AssistantMessage:
    return AssistantMessage(list(blocks), stop_reason="toolUse", provider="mistral", model="m")


TRANSCRIPTS: dict[str, list[Message]] = {
    "a sentence, then a call": [
        UserMessage("weather in Paris?"),
        turn(TextContent("Let me check."), ToolCall("abcdefgh1", "weather", {"city": "Paris"})),
        ToolResultMessage("abcdefgh1", "weather", [TextContent("sunny")]),
    ],
    "text around two calls, then a second turn": [
        UserMessage("go"),
        turn(
            ThinkingContent("plan"),
            TextContent("First both."),
            ToolCall("abcdefgh1", "a", {}),
            TextContent("and"),
            ToolCall("abcdefgh2", "b", {}),
        ),
        ToolResultMessage("abcdefgh1", "a", [TextContent("1")]),
        ToolResultMessage("abcdefgh2", "b", [TextContent("2")]),
        turn(TextContent("Now c."), ToolCall("abcdefgh3", "c", {})),
        ToolResultMessage("abcdefgh3", "c", [TextContent("3")]),
        UserMessage("and then?"),
    ],
}


@pytest.mark.parametrize("name", sorted(TRANSCRIPTS))
async def test_mistral_gets_the_text_and_the_calls_of_a_turn_apart(
    server: ReplayServer, name: str
) -> None:
    transcript = TRANSCRIPTS[name]
    model = Model(
        id="devstral-latest",
        provider="openai-compatible",
        api="openai-completions",
        base_url=server.url + "/mistral.ai/v1",  # the host names Mistral, as api.mistral.ai
    )
    server.enqueue(sse_reply(openai_chunks({"content": "ok"})))
    stream = stream_openai_completions(model, Context("", transcript), StreamOptions(api_key=KEY))
    assert (await stream.result()).error_message is None
    sent = server.requests[0].body["messages"]
    assert mistral_refusal(sent) is None
    said = [m["content"] for m in sent if m["role"] == "assistant" and m.get("content")]
    written = [
        b.text
        for m in transcript
        if isinstance(m, AssistantMessage)
        for b in m.content
        if isinstance(b, TextContent)
    ]
    assert all(any(text in s for s in said) for text in written)  # no text is lost
    calls = [c["function"]["name"] for m in sent for c in m.get("tool_calls") or ()]
    assert calls == [
        b.name for m in transcript for b in getattr(m, "content", ()) if isinstance(b, ToolCall)
    ]


async def test_other_servers_get_the_text_beside_its_calls(server: ReplayServer) -> None:
    """OpenAI and the others take both in one message, which the model wrote as one."""
    transcript = TRANSCRIPTS["a sentence, then a call"]
    model = Model(id="m", provider="vllm", api="openai-completions", base_url=server.url + "/v1")
    server.enqueue(sse_reply(openai_chunks({"content": "ok"})))
    stream = stream_openai_completions(model, Context("", transcript), StreamOptions(api_key=KEY))
    assert (await stream.result()).error_message is None
    assistant = server.requests[0].body["messages"][1]
    assert assistant["content"] == "Let me check."
    assert [c["id"] for c in assistant["tool_calls"]] == ["abcdefgh1"]
