"""A call a reasoning model drafts inside its `<think>…</think>` reasoning is not a call
(DESIGN §21): Qwen3, QwQ and DeepSeek-R1 served without a reasoning parser (Ollama, a
llama.cpp or vLLM server) write their reasoning into the content, and a call they weigh
and reject there ran, as vLLM's reasoning parser would never let it. Only a `<think>`
that opens the reply opens reasoning; the calls after `</think>` are read as ever, and
the reasoning stays in the parser's text. Any chunking gives the same pieces (hypothesis),
and through `ollama/<model>` against a server on 127.0.0.1 no tool-call event is sent for a
drafted call."""

from __future__ import annotations

from hypothesis import given, settings, strategies as st

from tests.ai.servers import ReplayServer, openai_chunks, sse_reply
from tests.ai.test_text_tool_calls import call, parse, parse_chunked
from yiemagent import AgentTool
from yiemagent.ai import Context, StreamOptions, get_model, stream
from yiemagent.ai._text_tool_calls import TextPiece, TextToolCallParser
from yiemagent.types.messages import TextContent, ThinkingContent, ToolCall, UserMessage

DRAFTS = [
    '<tool_call>{"name": "f", "arguments": {"a": 1}}</tool_call>',
    '\n{"name": "f", "parameters": {"a": 1}}\n',
    '\n```json\n{"name": "f", "arguments": {"a": 1}}\n```\n',
    '[TOOL_CALLS] [{"name": "f", "arguments": {"a": 1}}]',
]
REAL = '<tool_call>{"name": "g", "arguments": {"b": 2}}</tool_call>'


@settings(max_examples=200, deadline=None)
@given(
    draft=st.sampled_from(DRAFTS),
    opened=st.booleans(),
    lead=st.sampled_from(["", "\n", "  "]),
    after=st.sampled_from(["", "\n\n" + REAL, "\nThe answer is 4."]),
    cuts=st.lists(st.integers(0, 400), max_size=8),
)
def test_a_call_drafted_in_reasoning_is_text_whatever_the_chunks(
    draft: str, opened: bool, lead: str, after: str, cuts: list[int]
) -> None:
    # `opened`: the reply writes its `<think>`; else the chat template wrote it (R1
    # distills), and only the `</think>` shows
    reasoning = f"{'<think>' if opened else ''}\nMaybe {draft} but no.\n</think>"
    text = lead + reasoning + after
    points = sorted({min(c, len(text)) for c in cuts})
    chunks = [text[a:b] for a, b in zip([0, *points], [*points, len(text)], strict=True)]
    pieces = parse_chunked(chunks, ["f", "g"])
    assert pieces == parse(text, ["f", "g"])
    expected_calls = [call("g", b=2)] if REAL in after else []
    assert [p for p in pieces if not isinstance(p, TextPiece)] == expected_calls
    assert pieces[0] == TextPiece(lead + reasoning + ("\n\n" if REAL in after else after))


def test_think_opens_reasoning_only_at_the_start_of_the_reply() -> None:
    late = 'I will think. <think>\n<tool_call>{"name": "f", "arguments": {}}</tool_call>'
    assert parse(late, ["f"]) == [TextPiece("I will think. <think>\n"), call("f")]
    unclosed = '<think>\n<tool_call>{"name": "f", "arguments": {}}</tool_call>'
    assert parse(unclosed, ["f"]) == [TextPiece(unclosed)]  # the reply ended mid-reasoning
    assert parse("<", ["f"]) == [TextPiece("<")]
    assert parse("<thinking is hard", ["f"]) == [TextPiece("<thinking is hard")]


def test_calls_before_a_lone_think_close_are_text_and_after_it_are_read() -> None:
    drafted = 'Let me try <tool_call>{"name": "f", "arguments": {}}</tool_call> or not.\n'
    reply = drafted + "</think>\n\n" + REAL
    assert parse(reply, ["f", "g"]) == [TextPiece(drafted + "</think>\n\n"), call("g", b=2)]
    # no `</think>` at all: the calls are read as ever, given out when the reply ends
    assert parse(drafted, ["f", "g"]) == [
        TextPiece("Let me try "),
        call("f"),
        TextPiece(" or not.\n"),
    ]
    # one `</think>` ends the reasoning; a later one is text
    late = "ok</think>" + REAL + "</think>"
    assert parse(late, ["g"]) == [TextPiece("ok</think>"), call("g", b=2), TextPiece("</think>")]


def test_a_held_call_is_given_out_when_the_reply_ends() -> None:
    parser = TextToolCallParser(["g"])
    assert parser.feed("Sure. " + REAL) == [TextPiece("Sure. ")]
    assert parser.feed(" Done.") == []
    assert parser.finish() == [call("g", b=2), TextPiece(" Done.")]


def test_ollama_sends_no_call_event_for_a_drafted_call(stream_server: ReplayServer) -> None:
    import asyncio

    reply = (
        '<think>\nI could call <tool_call>{"name": "f", "arguments": {}}</tool_call>.\n</think>\n4'
    )
    deltas = [{"role": "assistant", "content": ""}]
    deltas += [{"content": reply[n : n + 7]} for n in range(0, len(reply), 7)]
    stream_server.enqueue(sse_reply(openai_chunks(*deltas)))
    model = get_model("ollama/qwen3", base_url=stream_server.url + "/v1")
    tools = [AgentTool("f", "f", "the f tool", {"type": "object"}, lambda *_: "")]

    async def run() -> tuple[list[str], object]:
        events = stream(model, Context("", [UserMessage("2+2?")], tools), StreamOptions())
        kinds = [event.type async for event in events]
        return kinds, await events.result()

    kinds, message = asyncio.run(run())
    assert "toolcall_start" not in kinds
    assert message.stop_reason == "stop"  # type: ignore[attr-defined]
    content = message.content  # type: ignore[attr-defined]
    assert not any(isinstance(b, ToolCall) for b in content)
    # the reasoning is a thinking block (tests/ai/test_think_tags_in_content.py)
    assert content == [
        ThinkingContent('I could call <tool_call>{"name": "f", "arguments": {}}</tool_call>.\n'),
        TextContent("4"),
    ]
