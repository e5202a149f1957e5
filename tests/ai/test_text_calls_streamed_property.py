"""Property (DESIGN §21), end to end: a local server's reply that writes tool calls as text
in every format (Qwen/Hermes tags, Llama 3 JSON, Mistral `[TOOL_CALLS]`, fenced JSON), cut
into streamed deltas anywhere, gives the same message — its calls in order with their
arguments, its text intact, one start and one end event per call — through the `openai`
SDK and `ollama/<model>` (text tool calls by default) against the module's replay
server."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, strategies as st

from tests.ai._stream_kit import property_settings, streamed
from tests.ai.servers import ReplayServer, openai_chunks, sse_reply
from yiemagent import AgentTool
from yiemagent.ai import Context, StreamOptions, get_model, stream
from yiemagent.types.messages import AssistantMessage, TextContent, ToolCall, UserMessage

pytestmark = pytest.mark.timeout(300)

TOOLS = [AgentTool(name, name, f"the {name} tool", {"type": "object"}, lambda *_: "")
         for name in ("f", "g")]  # fmt: skip

_PROSE = st.text(st.sampled_from("ab .,é€\n"), max_size=10)
_ARGS = st.dictionaries(
    st.sampled_from(["a", "path"]),
    st.one_of(st.integers(-3, 3), st.text(st.sampled_from('xy"}{ \\<>`é'), max_size=5)),
    max_size=2,
)


@st.composite
def replies(draw: st.DrawFn) -> tuple[str, str, list[tuple[str, dict[str, Any]]]]:
    """A reply of prose and 1-3 calls in random formats, its prose, and its calls."""
    text, prose_only, calls = "", "", []
    for _ in range(draw(st.integers(1, 3))):
        prose = draw(_PROSE)
        name, arguments = draw(st.sampled_from(["f", "g"])), draw(_ARGS)
        args = json.dumps(arguments)
        form = draw(st.sampled_from(["tag", "bare", "fence", "mistral", "mistral_args"]))
        if prose and not prose.endswith("\n") and form in ("bare", "fence"):
            prose += "\n"  # untagged JSON is a call only at the start of a line
        text += (
            prose
            + {
                "tag": f'<tool_call>\n{{"name": "{name}", "arguments": {args}}}\n</tool_call>',
                "bare": f'{{"name": "{name}", "parameters": {args}}}',
                "fence": f'```json\n{{"name": "{name}", "arguments": {args}}}\n```',
                "mistral": f'[TOOL_CALLS] [{{"name": "{name}", "arguments": {args}}}]',
                "mistral_args": f"[TOOL_CALLS]{name}[ARGS]{args}",
            }[form]
        )
        calls.append((name, arguments))
        prose_only += prose
    tail = draw(st.sampled_from(["", "\nDone."]))
    return text + tail, prose_only + tail, calls


@property_settings(max_examples=60)
@given(reply=replies(), data=st.data())
def test_calls_written_as_text_survive_any_streaming(
    stream_server: ReplayServer,
    reply: tuple[str, str, list[tuple[str, dict[str, Any]]]],
    data: st.DataObject,
) -> None:
    text, prose, calls = reply
    cuts = sorted(data.draw(st.sets(st.integers(1, max(1, len(text) - 1)), max_size=12)))
    pieces = [text[a:b] for a, b in zip([0, *cuts], [*cuts, len(text)], strict=True)]
    deltas = [{"role": "assistant", "content": ""}, *({"content": p} for p in pieces if p)]
    stream_server.enqueue(sse_reply(openai_chunks(*deltas)))
    model = get_model("ollama/qwen3", base_url=stream_server.url + "/v1")
    kinds: list[str] = []

    async def run() -> AssistantMessage:
        events = stream(model, Context("", [UserMessage("go")], TOOLS), StreamOptions())
        kinds.extend([event.type async for event in events])
        return await events.result()

    message = streamed(run)
    assert message.stop_reason == "toolUse", message.error_message
    got = [(b.name, b.arguments) for b in message.content if isinstance(b, ToolCall)]
    assert got == calls
    assert kinds.count("toolcall_start") == kinds.count("toolcall_end") == len(calls)
    texts = "".join(b.text for b in message.content if isinstance(b, TextContent))
    assert texts == prose  # every character of prose, none of a call
