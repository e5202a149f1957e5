"""One OpenAI Chat Completions format (DESIGN §22): the `openai-completions` provider sends, and
the Agent's `format_openai_messages` gives, the same dicts; `usage` is read one way."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, strategies as st

from tests.ai.servers import ReplayServer, openai_chunks, sse_reply
from yiemagent import format_openai_messages
from yiemagent.ai.openai_wire import usage_from_openai
from yiemagent.ai.providers.openai_completions import stream_openai_completions
from yiemagent.types.messages import (
    AssistantMessage,
    ImageContent,
    TextContent,
    ToolCall,
    ToolResultMessage,
    UserMessage,
)
from yiemagent.types.model import Context, Model, StreamOptions
from yiemagent.types.tools import AgentTool

pytestmark = pytest.mark.timeout(120)  # the first test imports the SDK: seconds of CPU under load

PNG = ImageContent("aGk=", "image/png")
JPEG_URL = ImageContent("data:image/jpeg;base64,b2s=", "image/png")  # the URL's type wins


def _tool(name: str) -> AgentTool:
    return AgentTool(
        name=name,
        label=name,
        description=f"the {name} tool",
        input_schema={"type": "object", "properties": {"x": {"type": "string"}}},
        execute=lambda *_: "ok",
    )


def _transcript() -> Context:
    """Every shape the format decides: text-only and image user messages, an assistant message
    of several text blocks and parallel calls, tool results with text, an error and no text,
    images only and nothing at all, and an assistant message with nothing to send."""
    calls = [ToolCall(f"c{n}", "shot", {"x": str(n)}) for n in range(1, 5)]
    return Context(
        "Be brief.",
        [
            UserMessage([TextContent("first"), TextContent("second")]),
            AssistantMessage([TextContent("Let me"), TextContent("look."), *calls]),
            ToolResultMessage("c1", "shot", [TextContent("found it")]),
            ToolResultMessage("c2", "shot", [PNG]),
            ToolResultMessage("c3", "shot", [TextContent(" ")], is_error=True),
            ToolResultMessage("c4", "shot", []),
            AssistantMessage([TextContent("  ")]),
            UserMessage(
                [TextContent("and this"), ImageContent("data:image/jpeg;base64,b2s=", "image/png")]
            ),
        ],
        tools=[_tool("shot")],
    )


EXPECTED: list[dict[str, Any]] = [
    {"role": "system", "content": "Be brief."},
    {"role": "user", "content": "first\nsecond"},
    {
        "role": "assistant",
        "content": "Let me\nlook.",
        "tool_calls": [
            {
                "id": f"c{n}",
                "type": "function",
                "function": {"name": "shot", "arguments": f'{{"x": "{n}"}}'},
            }
            for n in range(1, 5)
        ],
    },
    {"role": "tool", "tool_call_id": "c1", "content": "found it"},
    {"role": "tool", "tool_call_id": "c2", "content": "(see attached image)"},
    {"role": "tool", "tool_call_id": "c3", "content": "(error)"},
    {"role": "tool", "tool_call_id": "c4", "content": "(no output)"},
    {
        "role": "user",
        "content": [
            {"type": "text", "text": "Images returned by the tool call c2:"},
            {"type": "image_url", "image_url": {"url": "data:image/png;base64,aGk="}},
        ],
    },
    {
        "role": "user",
        "content": [
            {"type": "text", "text": "and this"},
            {"type": "image_url", "image_url": {"url": "data:image/jpeg;base64,b2s="}},
        ],
    },
]


async def test_the_provider_sends_what_format_openai_messages_gives(server: ReplayServer) -> None:
    server.enqueue(sse_reply(openai_chunks({"content": "ok"})))
    model = Model(
        id="m",
        provider="vllm",
        api="openai-completions",
        base_url=server.url + "/v1",
        input=("text", "image"),
    )
    context = _transcript()
    stream = stream_openai_completions(model, context, StreamOptions(api_key="sk-test"))
    assert (await stream.result()).text == "ok"
    sent = server.requests[0].body
    formatted = format_openai_messages(context)
    assert sent["messages"] == formatted["messages"] == EXPECTED
    assert sent["tools"] == formatted["tools"]


def test_a_text_only_model_gets_a_note_for_each_image() -> None:
    from yiemagent.ai.attachments import attachment_stand_in
    from yiemagent.ai.openai_wire import messages_to_openai

    text_only = Model(id="m", provider="vllm", api="openai-completions")
    messages = messages_to_openai(_transcript().messages, model=text_only)
    omitted = attachment_stand_in(PNG)
    assert "image omitted" in omitted
    assert messages[3] == {"role": "tool", "tool_call_id": "c2", "content": omitted}
    assert [m["role"] for m in messages].count("user") == 2  # no message for the images
    assert messages[-1]["content"][1] == {"type": "text", "text": omitted}


counts = st.one_of(st.none(), st.integers(-(10**6), 10**9))


@given(prompt=counts, cached=counts, hit=counts, output=counts, as_dict=st.booleans())
def test_usage_counts_are_never_negative_and_add_up(
    prompt: int | None, cached: int | None, hit: int | None, output: int | None, as_dict: bool
) -> None:
    raw: dict[str, Any] = {
        "prompt_tokens": prompt,
        "completion_tokens": output,
        "prompt_tokens_details": {"cached_tokens": cached},
        "prompt_cache_hit_tokens": hit,
    }
    usage = usage_from_openai(raw if as_dict else _Object(raw))
    sent_prompt = max(0, prompt or 0)
    assert min(usage.input, usage.output, usage.cache_read, usage.total_tokens) >= 0
    assert usage.input + usage.cache_read == sent_prompt
    assert usage.output == max(0, output or 0)
    assert usage.total_tokens == usage.input + usage.cache_read + usage.output
    cached_sent = max(0, cached or 0) or max(0, hit or 0)  # DeepSeek's field when no other
    assert usage.cache_read == min(cached_sent, sent_prompt)


class _Object:
    """The SDK's pydantic model as seen by the reader: attributes, nested."""

    def __init__(self, fields: dict[str, Any]) -> None:
        for name, value in fields.items():
            setattr(self, name, _Object(value) if isinstance(value, dict) else value)


@pytest.mark.parametrize("api", ["openai-completions", "openai-responses"])
def test_both_openai_apis_send_openais_own_fields_only_to_openai(api: str) -> None:
    from yiemagent.ai.providers import openai_completions, openai_responses

    build = (
        openai_completions if api == "openai-completions" else openai_responses
    ).build_request_body
    context = Context("", [UserMessage("hi")])
    options = StreamOptions(session_id="s1", cache_retention="long", metadata={"n": 1})
    openai = build(Model(id="gpt-x", provider="openai", api=api), context, options)
    assert openai["prompt_cache_key"] == "s1" and openai["prompt_cache_retention"] == "24h"
    if api == "openai-responses":  # Chat Completions takes it only with `store`
        assert openai["metadata"] == {"n": "1"}
    else:
        assert "metadata" not in openai
    none = build(
        Model(id="gpt-x", provider="openai", api=api),
        context,
        StreamOptions(session_id="s1", cache_retention="none"),
    )
    assert "prompt_cache_key" not in none and "metadata" not in none
    other = build(Model(id="m", provider="vllm", api=api), context, options)
    assert not {"prompt_cache_key", "prompt_cache_retention", "metadata"} & other.keys()


def test_a_text_only_model_gets_a_note_for_each_image_a_tool_returned() -> None:
    """pi-mono's image-tool-result.test.ts has a tool answer with text and images. A model
    that reads no images is told of each one, as the Responses and Anthropic providers
    tell it: with one note for two images it believed the tool had returned one."""
    from yiemagent.ai.attachments import attachment_stand_in
    from yiemagent.ai.openai_wire import messages_to_openai

    text_only = Model(id="m", provider="vllm", api="openai-completions")
    jpeg = ImageContent("b2s=", "image/jpeg")
    messages = messages_to_openai(
        [
            UserMessage("shoot twice"),
            AssistantMessage([ToolCall("c1", "shot", {})]),
            ToolResultMessage("c1", "shot", [TextContent("two shots"), PNG, jpeg]),
        ],
        model=text_only,
    )
    notes = "\n".join(attachment_stand_in(image) for image in (PNG, jpeg))
    assert messages[-1] == {"role": "tool", "tool_call_id": "c1", "content": f"two shots\n{notes}"}
