"""R-5.8 for the embedded model, without the model: a provider busy without output says so
with `StreamOptions.keep_alive` (one rule for every provider; no api is exempt). A scripted
runtime stands in for llama.cpp: it reports prompt progress (`return_progress`) and writes a
tool call, which the provider sends only once whole, so the loop sees no event for a while."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Callable
from typing import Any

import pytest

from tests.ai._local_kit import is_name_probe, probe_reply
from yiemagent import AgentContext, AgentLoopConfig, AgentTool, UserMessage, run_agent_loop
from yiemagent.ai import Context, StreamOptions, get_model, stream
from yiemagent.ai.providers.local import provider

MODEL = get_model("local/qwen2.5-coder-0.5b")
CALC = AgentTool(
    "calculator",
    "calculator",
    "Evaluates an arithmetic expression.",
    {
        "type": "object",
        "properties": {"expression": {"type": "string"}},
        "required": ["expression"],
    },
    lambda *a: "391",
)


class SlowRuntime:
    """Sends nothing for `silent_s`, then reads the prompt in `batches` steps of `batch_s` (a
    progress chunk each, as llama.cpp with `return_progress`), then writes the next reply one
    character every `char_s`."""

    def __init__(
        self,
        replies: list[str],
        *,
        batches: int,
        batch_s: float,
        char_s: float = 0.01,
        silent_s: float = 0.0,
    ) -> None:
        self.replies = list(replies)
        self.batches, self.batch_s, self.char_s, self.silent_s = batches, batch_s, char_s, silent_s
        self.requests: list[dict[str, Any]] = []

    def chat(self, request: dict[str, Any], on_chunk: Callable[[dict[str, Any]], bool]) -> None:
        if is_name_probe(request):
            reply = probe_reply(self.replies[0] if self.replies else "")
        else:
            self.requests.append(request)
            reply = self.replies.pop(0) if "grammar" not in request else "]"
        time.sleep(self.silent_s)
        total = 512 * self.batches
        for done in range(0, total + 1, 512):
            progress = {"total": total, "cache": 0, "processed": done, "time_ms": 0}
            if on_chunk({"choices": [], "prompt_progress": progress}):
                return
            time.sleep(self.batch_s)
        for char in reply:
            if on_chunk({"choices": [{"index": 0, "delta": {"content": char}}]}):
                return
            time.sleep(self.char_s)
        on_chunk({"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]})


@pytest.fixture
def slow(monkeypatch: pytest.MonkeyPatch) -> Callable[..., SlowRuntime]:
    def install(replies: list[str], *, load_s: float = 0.0, **kwargs: Any) -> SlowRuntime:
        runtime = SlowRuntime(replies, **kwargs)

        async def get_runtime(spec: Any) -> SlowRuntime:
            await asyncio.sleep(load_s)  # the first call loads the model
            return runtime

        monkeypatch.setattr(provider, "get_runtime", get_runtime)
        return runtime

    return install


async def test_prompt_progress_and_held_back_call_tokens_call_keep_alive(
    slow: Callable[..., SlowRuntime],
) -> None:
    call = json.dumps({"name": "calculator", "arguments": {"expression": "17 * 23"}})
    runtime = slow([call], batches=4, batch_s=0.01)
    beats: list[float] = []
    options = StreamOptions(idle_timeout_s=60, keep_alive=lambda: beats.append(time.monotonic()))
    events = [
        e async for e in stream(MODEL, Context("sys", [UserMessage("17*23?")], [CALC]), options)
    ]
    assert runtime.requests[0]["return_progress"] is True
    # 5 progress chunks + one per character of the call (+ the end chunks): the call itself
    # comes out as events only once whole, after all of them
    assert len(beats) >= 5 + len(call)
    assert [e.type for e in events] == [
        "start",
        "toolcall_start",
        "toolcall_delta",
        "toolcall_end",
        "done",
    ]


async def test_the_loop_keeps_a_busy_embedded_model_and_drops_a_stuck_one(
    slow: Callable[..., SlowRuntime],
) -> None:
    """Through the loop with a 1.2 s idle limit: loading (2.6 s), reading the prompt (5
    progress reports 0.4 s apart) and writing a call (held back, ~50 characters 0.025 s apart)
    send no event for longer than the limit, yet the run answers. A runtime silent for 4 s
    without a progress report is stopped by the limit. (Margins: the longest gap between two
    signs of life is 0.4 s, a third of the limit; with 0.2 s gaps against a 0.5 s limit it
    failed once at load 8 on 2 cores.)"""
    call = json.dumps({"name": "calculator", "arguments": {"expression": "17 * 23"}})
    answer = json.dumps({"name": "answer", "text": "391"})
    slow([call, answer], load_s=2.6, batches=4, batch_s=0.4, char_s=0.025)
    config = AgentLoopConfig(model=MODEL, stream_idle_timeout_s=1.2)
    context = AgentContext("sys", [], [CALC])
    messages = await run_agent_loop([UserMessage("17*23?")], context, config, None)
    assert [getattr(m, "stop_reason", None) for m in messages] == [None, "toolUse", None, "stop"]
    assert messages[-1].text == "391"  # type: ignore[union-attr]

    slow([answer], batches=1, batch_s=0.0, silent_s=4.0)  # 4 s without a progress report
    messages = await run_agent_loop([UserMessage("hi")], AgentContext(), config, None)
    last = messages[-1]
    assert last.stop_reason == "error"  # type: ignore[union-attr]
    assert last.error_message == "The model stream sent nothing for 1.2 s"  # type: ignore[union-attr]
