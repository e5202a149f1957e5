"""A tool-call format quoted in prose is not a call (DESIGN §21): a model explaining to the
user how calls are written, in inline code or a code block, must not run a tool. Through
`ollama/<model>` (text tool calls by default) against a replay server, and the parser cut
at every character boundary."""

from __future__ import annotations

import pytest

from tests.ai.servers import ReplayServer, openai_chunks, sse_reply
from yiemagent import Agent, tool
from yiemagent.ai import get_model
from yiemagent.ai._text_tool_calls import TextPiece, TextToolCallParser, ToolCallPiece, join_text

pytestmark = pytest.mark.timeout(120)

QUOTED = [
    'Qwen writes `<tool_call>{"name": "get_time", "arguments": {}}</tool_call>` to call.',
    "Mistral writes `[TOOL_CALLS]get_time[ARGS]{}` when it calls a tool.",
    'Mistral lists: `[TOOL_CALLS] [{"name": "get_time", "arguments": {}}]`.',
    'The format:\n```\n<tool_call>{"name": "get_time", "arguments": {}}</tool_call>\n```\nok',
    'Python:\n```python\nprint({"name": "get_time", "parameters": {}})\n```\n',
    'Inline `{"name": "get_time", "parameters": {}}` stays text.',
]


def parse_cut(text: str, at: int) -> list[TextPiece | ToolCallPiece]:
    parser = TextToolCallParser(["get_time"])
    return join_text([*parser.feed(text[:at]), *parser.feed(text[at:]), *parser.finish()])


@pytest.mark.parametrize("text", QUOTED)
def test_a_quoted_call_format_is_text_wherever_the_stream_is_cut(text: str) -> None:
    for at in range(len(text) + 1):
        assert parse_cut(text, at) == [TextPiece(text)], at
    # one character at a time, as a slow server streams
    parser = TextToolCallParser(["get_time"])
    pieces = [piece for char in text for piece in parser.feed(char)] + parser.finish()
    assert join_text(pieces) == [TextPiece(text)]


def test_a_tag_after_the_quoted_one_is_still_a_call() -> None:
    """Only the quoted tag is prose: the real call that follows it runs."""
    text = (
        "Calls look like `<tool_call>...</tool_call>`.\n"
        '<tool_call>{"name": "get_time", "arguments": {"place": "Oslo"}}</tool_call>'
    )
    for at in range(len(text) + 1):
        assert parse_cut(text, at) == [
            TextPiece("Calls look like `<tool_call>...</tool_call>`.\n"),
            ToolCallPiece("get_time", '{"place": "Oslo"}'),
        ], at


async def test_an_ollama_model_quoting_a_call_runs_no_tool(server: ReplayServer) -> None:
    """End to end: the answer that quotes the tag is the answer, the tool never runs."""
    text = QUOTED[0]
    deltas = [{"content": text[i : i + 3]} for i in range(0, len(text), 3)]
    server.replies.put(sse_reply(openai_chunks(*deltas)))
    ran: list[str] = []

    @tool
    def get_time() -> str:
        """The time now."""
        ran.append("get_time")
        return "12:00"

    agent = Agent(model=get_model("ollama/qwen3", base_url=server.url + "/v1"), tools=[get_time])
    answer = await agent.prompt("How does Qwen write a tool call?")
    assert answer.text == text
    assert answer.stop_reason == "stop" and ran == []
    assert len(server.requests) == 1
