"""R-11.2: a request that names a tool as written ("Use the word_count tool on the
text: ...") asks for that tool. In `yiem chat --write-tools` the 1.5B wrote word_count, then
answered "4" (and, on another run, "contains 5 words") itself instead of calling it. The
embedded model is now not offered the answer before a call while the named tool is; once a
guard drops that tool's call, or after a result, the answer is back."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import given, settings, strategies as st

from tests.ai._local_kit import is_name_probe, probe_reply
from yiemagent import AgentTool, UserMessage, tool
from yiemagent.ai import Context, StreamOptions, get_model, stream
from yiemagent.ai.providers.local import provider
from yiemagent.ai.providers.local.prompt import named_tools
from yiemagent.types import AssistantMessage, TextContent, ToolCall, ToolResultMessage

MODEL = get_model("local/qwen2.5-coder-1.5b")


@tool
def word_count(text: str) -> str:
    """Count the words of a text."""
    return str(len(text.split()))


@tool
def calculator(expression: str) -> str:
    """Evaluate an arithmetic expression."""
    return expression


class _Runtime:
    """A scripted model that answers whenever the reply schema lets it, else writes `call`;
    records whether each request offered the answer."""

    def __init__(self, call: dict[str, Any] | None = None, probe: str = "answer") -> None:
        self.probe = probe
        self.call = call or {
            "name": "word_count",
            "arguments": {"text": "the quick brown fox jumps"},
        }
        self.offered_answer: list[bool] = []
        self.probes = 0

    def chat(self, request: dict[str, Any], on_chunk: Callable[[dict[str, Any]], bool]) -> None:
        if is_name_probe(request):  # the free-name probe: it reaches for `probe`
            self.probes += 1
            reply = probe_reply("", self.probe)
        elif "grammar" in request:  # the extra-call step: nothing more to add
            reply = ", " + json.dumps(self.call)
        else:
            branches = request["response_format"]["json_schema"]["schema"]["anyOf"]
            answer = any("text" in b.get("properties", {}) for b in branches)
            self.offered_answer.append(answer)
            reply = json.dumps(
                {"name": "answer", "text": "It has 4 words."} if answer else self.call
            )
        for i in range(0, len(reply), 7):
            if on_chunk({"choices": [{"index": 0, "delta": {"content": reply[i : i + 7]}}]}):
                return
        on_chunk({"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]})


async def _reply(
    monkeypatch: pytest.MonkeyPatch,
    runtime: _Runtime,
    messages: list[Any],
    tools: list[AgentTool],
) -> AssistantMessage:
    async def get_runtime(spec: Any) -> _Runtime:
        return runtime

    monkeypatch.setattr(provider, "get_runtime", get_runtime)
    s = stream(MODEL, Context("sys", messages, tools), StreamOptions())
    _ = [event async for event in s]
    return await s.result()


async def test_r11_2_a_request_naming_a_tool_gets_a_call_of_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    runtime = _Runtime()
    request = UserMessage("Use the word_count tool on the text: the quick brown fox jumps")
    message = await _reply(monkeypatch, runtime, [request], [calculator, word_count])
    assert runtime.offered_answer[0] is False
    assert runtime.probes == 0  # the request says which tool: no free-name probe
    assert message.stop_reason == "toolUse"
    assert [(c.name, c.arguments) for c in message.tool_calls] == [
        ("word_count", {"text": "the quick brown fox jumps"})
    ]


@pytest.mark.parametrize(
    "text",
    [
        "How many words are in: the quick brown fox jumps",  # no tool named
        "Use the calculator for 2 + 2",  # a plain word is not a tool's name as written
        "Is word_counter a good name?",  # part of another word
        "Use the Word_Count tool",  # another case
    ],
)
async def test_r11_2_other_requests_keep_the_answer(
    monkeypatch: pytest.MonkeyPatch, text: str
) -> None:
    runtime = _Runtime()
    message = await _reply(monkeypatch, runtime, [UserMessage(text)], [calculator, word_count])
    # The first reply may answer (a made-up number is then refused: `unbacked_answer`).
    assert runtime.offered_answer[0] is True
    assert message.stop_reason == "stop"


async def test_r11_2_after_a_result_the_answer_is_offered(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    runtime = _Runtime()
    call = ToolCall("c1", "word_count", {"text": "the quick brown fox jumps"})
    messages = [
        UserMessage("Use the word_count tool on the text: the quick brown fox jumps"),
        AssistantMessage([call], stop_reason="toolUse"),
        ToolResultMessage("c1", "word_count", [TextContent("5")]),
    ]
    message = await _reply(monkeypatch, runtime, messages, [calculator, word_count])
    assert runtime.offered_answer == [True]
    assert message.stop_reason == "stop"


async def test_r11_2_when_the_guard_drops_the_named_tool_s_call_the_answer_is_back(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # an invented text: not grounded in the request, dropped; then the model may answer
    runtime = _Runtime({"name": "word_count", "arguments": {"text": "lorem ipsum dolor"}})
    request = UserMessage("Use the word_count tool on the text: the quick brown fox jumps")
    message = await _reply(monkeypatch, runtime, [request], [word_count])
    # Its answer "It has 4 words." states a count nothing gave: told once that no tool
    # gives that (`unbacked_answer`), it answers again, and that answer stands.
    assert runtime.offered_answer == [False, True, True]
    assert message.stop_reason == "stop" and message.tool_calls == []


@pytest.mark.parametrize(
    ("probe", "text"),
    [
        ("word_count", "Hi there, who are you?"),  # the request names no such tool
        ("answer", "How many words are in: the quick brown fox jumps"),
        ("count_words", "How many words are in: the quick brown fox jumps"),  # no tool's name
    ],
)
async def test_r11_2_otherwise_the_free_name_leaves_the_answer(
    monkeypatch: pytest.MonkeyPatch, probe: str, text: str
) -> None:
    runtime = _Runtime(probe=probe)
    message = await _reply(monkeypatch, runtime, [UserMessage(text)], [calculator, word_count])
    # The first reply may answer (a made-up number is then refused: `unbacked_answer`).
    assert runtime.offered_answer[0] is True
    assert message.stop_reason == "stop"


def _none(*args: Any) -> str:
    return ""


_coined = st.from_regex(r"[a-z]{2,6}(_[a-z]{2,6}){1,2}|[a-z]{2,6}[A-Z][a-z]{2,6}", fullmatch=True)
_gap = st.sampled_from([" ", ": ", ", ", " `", "` ", "(", ") ", "\n", '"'])


@settings(max_examples=50, deadline=None)
@given(
    name=_coined,
    before=st.text("abc ,.", max_size=12),
    after=st.text("xyz ,.", max_size=12),
    gaps=st.tuples(_gap, _gap),
)
def test_named_tools_finds_a_coined_name_as_a_whole_word_only(
    name: str, before: str, after: str, gaps: tuple[str, str]
) -> None:
    named = AgentTool(
        name=name, label=name, description="d", input_schema={"type": "object"}, execute=_none
    )
    as_word = f"{before}{gaps[0]}{name}{gaps[1]}{after}"
    assert named_tools([named], [UserMessage(as_word)]) == {name}
    for glued in (f"x{name}", f"{name}x", f"{name}_2", f"{name.upper()}"):
        assert named_tools([named], [UserMessage(f"{before} use {glued} {after}")]) == set()
