"""The output tokens a model spent reasoning are `Usage.reasoning`, a part of `output`:
OpenAI's `reasoning_tokens` from Chat Completions (`completion_tokens_details`) and the
Responses API (`output_tokens_details`). They are summed with the other counts over a
transcript, printed by `yiem run --json`, and put on the chat span
(`gen_ai.usage.reasoning.output_tokens`) and the trace page's token line. Through the real
`openai` SDK (and the real CLI) to a server on 127.0.0.1."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from tests._yiem import yiem_in
from tests.ai.servers import ReplayServer, sse_reply
from tests.ai.test_attachments import responses_done, responses_sse
from yiemagent import Agent
from yiemagent.ai import Context, StreamOptions, get_model, stream
from yiemagent.ai.providers.faux import FauxModel, faux_message, faux_text
from yiemagent.telemetry import build_timeline
from yiemagent.types import Usage
from yiemagent.types.messages import UserMessage, transcript_usage

pytestmark = pytest.mark.timeout(180)

KEY = "sk-test-0123456789abcdef"


def chat_reply(reasoning: int) -> list[str]:
    """A Chat Completions stream answering "ok": 10 prompt tokens, 50 completion tokens
    of which `reasoning` reasoned."""
    base = {"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1, "model": "m"}
    usage = {
        "prompt_tokens": 10,
        "completion_tokens": 50,
        "total_tokens": 60,
        "completion_tokens_details": {"reasoning_tokens": reasoning},
    }
    chunks = [
        {**base, "choices": [{"index": 0, "delta": {"content": "ok"}, "finish_reason": None}]},
        {**base, "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]},
        {**base, "choices": [], "usage": usage},
    ]
    return [f"data: {json.dumps(chunk)}" for chunk in chunks] + ["data: [DONE]"]


async def test_chat_completions_reasoning_tokens(server: ReplayServer) -> None:
    server.enqueue(sse_reply(chat_reply(42)))
    model = get_model("openai/o4-mini", base_url=server.url + "/v1")
    message = await stream(
        model, Context("", [UserMessage("hi")]), StreamOptions(api_key=KEY)
    ).result()
    assert message.stop_reason == "stop", message.error_message
    assert (message.usage.output, message.usage.reasoning) == (50, 42)


async def test_responses_reasoning_tokens(server: ReplayServer) -> None:
    done: dict[str, Any] = responses_done(output_tokens=30)
    done["response"]["usage"]["output_tokens_details"] = {"reasoning_tokens": 24}
    item = {"type": "message", "id": "msg_1", "role": "assistant", "content": []}
    server.enqueue(
        sse_reply(
            responses_sse(
                {"type": "response.output_item.added", "output_index": 0, "item": item},
                {"type": "response.output_text.delta", "item_id": "msg_1", "delta": "ok"},
                done,
            )
        )
    )
    model = get_model("openai-responses/o4-mini", base_url=server.url + "/v1")
    message = await stream(
        model, Context("", [UserMessage("hi")]), StreamOptions(api_key=KEY)
    ).result()
    assert message.stop_reason == "stop", message.error_message
    assert (message.usage.output, message.usage.reasoning) == (30, 24)


async def test_reasoning_is_summed_and_traced() -> None:
    provider = TracerProvider()
    memory = InMemorySpanExporter()
    provider.add_span_processor(SimpleSpanProcessor(memory))
    fm = FauxModel(
        [
            faux_message(faux_text("one"), usage=Usage(input=10, output=50, reasoning=40)),
            faux_message(faux_text("two"), usage=Usage(input=10, output=9)),
            faux_message(faux_text("three"), usage=Usage(input=10, output=20, reasoning=2)),
        ]
    )
    agent = Agent(model=fm.model, stream_fn=fm.stream_fn, tracer_provider=provider)
    for prompt in ("first", "second", "third"):
        await agent.prompt(prompt)
    provider.shutdown()
    total = transcript_usage(agent.state.messages)
    assert (total.output, total.reasoning) == (79, 42)
    chats = sorted(
        (s for s in memory.get_finished_spans() if s.name.startswith("chat ")),
        key=lambda s: s.start_time or 0,
    )
    said = [
        dict(span.attributes or {}).get("gen_ai.usage.reasoning.output_tokens") for span in chats
    ]
    assert said == [40, None, 2]
    timeline = build_timeline(agent.state.messages)
    assert timeline.summary["tokens"] == "30 in, 79 out (42 reasoning)"


def test_yiem_run_json_prints_the_reasoning_tokens(tmp_path: Path) -> None:
    with ReplayServer() as server:
        server.enqueue(sse_reply(chat_reply(7)))
        proc = yiem_in(
            tmp_path,
            "run", "hi", "--json", "--model", "openai/o4-mini", "--base-url", server.url + "/v1",
            env={"OPENAI_API_KEY": KEY},
        )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    events = [json.loads(line) for line in proc.stdout.splitlines()]
    [end] = [
        e for e in events if e["type"] == "message_end" and e["message"]["role"] == "assistant"
    ]
    assert end["message"]["usage"]["reasoning"] == 7
    assert end["message"]["usage"]["output"] == 50
