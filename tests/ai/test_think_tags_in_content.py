"""Reasoning written into a Chat Completions `content` string as `<think>…</think>`
(DeepSeek-R1, QwQ, Qwen3 behind Ollama, vLLM without a reasoning parser, llama.cpp with
`--reasoning-format none`) is a thinking block, not part of the answer: through the
official SDK against a server on 127.0.0.1, for `openai-compatible/…` and `ollama/…`
(whose text calls after the reasoning are still read), the thinking not sent back on the
next turn; any chunking gives the same split (hypothesis)."""

from __future__ import annotations

import asyncio
from typing import Any

from hypothesis import given, settings, strategies as st

from tests.ai.servers import ReplayServer, openai_chunks, sse_reply
from yiemagent import Agent, AgentTool
from yiemagent.ai import Context, StreamOptions, get_model, stream
from yiemagent.ai._think_tags import ThinkTagSplitter
from yiemagent.types.messages import (
    AssistantMessage,
    TextContent,
    ThinkingContent,
    ToolCall,
    UserMessage,
)

REPLY = "<think>\nThe user greets me. I greet back.\n</think>\n\nHello there!"


def _deltas(text: str, size: int = 5) -> list[dict[str, Any]]:
    deltas: list[dict[str, Any]] = [{"role": "assistant", "content": ""}]
    return deltas + [{"content": text[n : n + size]} for n in range(0, len(text), size)]


def _run(model: Any, tools: list[AgentTool] | None = None) -> tuple[list[str], AssistantMessage]:
    async def go() -> tuple[list[str], AssistantMessage]:
        events = stream(model, Context("", [UserMessage("hi")], tools or []), StreamOptions())
        kinds = [event.type async for event in events]
        return kinds, await events.result()

    return asyncio.run(go())


def test_the_think_opening_of_a_compatible_server_s_reply_is_thinking(
    server: ReplayServer,
) -> None:
    server.enqueue(sse_reply(openai_chunks(*_deltas(REPLY))))
    model = get_model("openai-compatible/deepseek-r1", base_url=server.url + "/v1")
    kinds, message = _run(model)
    assert message.stop_reason == "stop", message.error_message
    assert message.content == [
        ThinkingContent("The user greets me. I greet back.\n"),
        TextContent("Hello there!"),
    ]
    assert message.text == "Hello there!"
    assert kinds.index("thinking_start") < kinds.index("thinking_end") < kinds.index("text_start")


def test_ollama_reads_the_call_after_the_reasoning_and_keeps_the_reasoning_apart(
    server: ReplayServer,
) -> None:
    reply = (
        '<think>\nI could call <tool_call>{"name": "f", "arguments": {}}</tool_call>, but g '
        'fits.\n</think>\n<tool_call>{"name": "g", "arguments": {"b": 2}}</tool_call>'
    )
    server.enqueue(sse_reply(openai_chunks(*_deltas(reply, 7))))
    model = get_model("ollama/qwen3", base_url=server.url + "/v1")
    tools = [
        AgentTool(name, name, f"the {name} tool", {"type": "object"}, lambda *_: "")
        for name in ("f", "g")
    ]
    kinds, message = _run(model, tools)
    assert message.stop_reason == "toolUse", message.error_message
    [thinking, called] = message.content
    assert isinstance(thinking, ThinkingContent)
    assert thinking.thinking.startswith("I could call <tool_call>")
    assert isinstance(called, ToolCall) and (called.name, called.arguments) == ("g", {"b": 2})
    assert kinds.count("toolcall_start") == 1


def test_think_further_in_and_a_reply_without_it_stay_text(server: ReplayServer) -> None:
    said = "Models write <think> first, then </think>."
    server.enqueue(sse_reply(openai_chunks(*_deltas(said))))
    model = get_model("openai-compatible/m", base_url=server.url + "/v1")
    _, message = _run(model)
    assert message.content == [TextContent(said)]


def test_the_reasoning_does_not_go_back_to_the_server(server: ReplayServer) -> None:
    server.enqueue(sse_reply(openai_chunks(*_deltas(REPLY))))
    server.enqueue(sse_reply(openai_chunks(*_deltas("<think>ok</think>Fine."))))
    model = get_model("openai-compatible/deepseek-r1", base_url=server.url + "/v1")
    agent = Agent(model=model)

    async def chat() -> AssistantMessage:
        await agent.prompt("hi")
        return await agent.prompt("and now?")

    second = asyncio.run(chat())
    assert second.text == "Fine."
    sent = server.requests[1].body["messages"]
    assistant = [m for m in sent if m["role"] == "assistant"]
    assert [m["content"] for m in assistant] == ["Hello there!"]
    assert "<think>" not in str(sent) and "greets me" not in str(sent)


@settings(max_examples=300, deadline=None)
@given(
    lead=st.sampled_from(["", "\n", "  \n"]),
    opened=st.booleans(),
    thought=st.sampled_from(["", "plan", "a < b </thin k", "\nx\n"]),
    closed=st.booleans(),
    gap=st.sampled_from(["", "\n\n", " "]),
    answer=st.sampled_from(["", "4", "a <think> tag", " spaced "]),
    cuts=st.lists(st.integers(0, 80), max_size=8),
)
def test_any_chunking_splits_alike(
    lead: str,
    opened: bool,
    thought: str,
    closed: bool,
    gap: str,
    answer: str,
    cuts: list[int],
) -> None:
    text = lead + ("<think>" if opened else "") + thought
    text += ("</think>" if closed else "") + gap + answer
    points = sorted({min(c, len(text)) for c in cuts})
    chunks = [text[a:b] for a, b in zip([0, *points], [*points, len(text)], strict=True)]
    splitter = ThinkTagSplitter()
    pieces = [piece for chunk in chunks for piece in splitter.feed(chunk)]
    pieces += splitter.finish()
    thinking = "".join(t for kind, t in pieces if kind == "thinking")
    answered = "".join(t for kind, t in pieces if kind == "text")
    kinds = [kind for kind, _ in pieces]
    assert kinds == sorted(kinds, key=lambda k: k == "text")  # the thinking comes first
    if not opened:
        assert (thinking, answered) == ("", text)
    elif closed:
        assert (thinking, answered) == (thought.lstrip(), (gap + answer).lstrip())
    else:  # the reply ended mid-reasoning: all of it is reasoning
        assert (thinking, answered) == ((thought + gap + answer).lstrip(), "")


def test_after_reasoning_read_apart_a_call_is_given_out_at_once() -> None:
    """Without `answer_follows` the parser cannot tell an answer from reasoning whose
    `<think>` the template wrote, and holds each call until the reply ends."""
    from yiemagent.ai._text_tool_calls import TextToolCallParser, ToolCallPiece

    call = '<tool_call>{"name": "g", "arguments": {"b": 2}}</tool_call>'
    held = TextToolCallParser(["g"])
    assert held.feed(call) == []
    parser = TextToolCallParser(["g"])
    parser.answer_follows()
    assert parser.feed(call) == [ToolCallPiece("g", '{"b": 2}')]
