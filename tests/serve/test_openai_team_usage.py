"""OpenAI Chat Completions' usage for a team two levels deep (DESIGN §17, §18;
docs/serve.md "OpenAI Chat Completions": "usage counts sub-agents' runs too"): the lead's,
its member's and that member's member's tokens, each once, in a plain answer and in a
streamed one's usage chunk. Through Uvicorn on 127.0.0.1."""

from __future__ import annotations

from typing import Any

import httpx2 as httpx
import pytest

from tests.serve._kit import serving, sse, text_of
from yiemagent import Agent, Context
from yiemagent.ai.providers.faux import FauxModel, faux_message, faux_text, faux_tool_call
from yiemagent.serve import create_app
from yiemagent.sessions import InMemorySessionStore
from yiemagent.types import Usage

pytestmark = pytest.mark.timeout(120)


def relay(next_tool: str | None, tokens: int) -> Any:
    """Each model call reads `tokens`, writes a tenth of them and reasons a tenth of
    those; an agent asks `next_tool`, then says its result."""

    def reply(context: Context) -> Any:
        output, reasoning = tokens // 10, tokens // 100
        usage = Usage(
            input=tokens, output=output, reasoning=reasoning, total_tokens=tokens + output
        )
        last = context.messages[-1]
        if last.role == "toolResult":
            return faux_message(faux_text(f"{context.system_prompt} {text_of(last)}"), usage=usage)
        if next_tool is None:
            return faux_message(faux_text("leaf: 42"), usage=usage)
        return faux_message(faux_tool_call(next_tool, {"input": text_of(last)}), usage=usage)

    return reply


def test_usage_counts_every_level_once() -> None:
    store = InMemorySessionStore()
    models = {
        "lead": FauxModel([relay("mid", 1000)] * 20),
        "mid": FauxModel([relay("leaf", 100)] * 20),
        "leaf": FauxModel([relay(None, 10)] * 20),
    }

    def agent(name: str, **options: Any) -> Agent[Any]:
        fm = models[name]
        return Agent(f"{name}:", fm.model, stream_fn=fm.stream_fn, name=name, **options)

    def make_agent(session_id: str) -> Agent[Any]:
        mid = agent("mid", tools=[agent("leaf").as_tool()])
        return agent("lead", tools=[mid.as_tool()], session_store=store, session_id=session_id)

    expected = {
        "prompt_tokens": 2210,
        "completion_tokens": 221,
        "total_tokens": 2431,
        "completion_tokens_details": {"reasoning_tokens": 22},  # a reasoning model's part
    }
    body: dict[str, Any] = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}
    app = create_app(make_agent, session_store=store)
    with serving(app) as url, httpx.Client(base_url=url, timeout=60) as client:
        plain = client.post("/v1/chat/completions", json=body).json()
        streamed = {**body, "stream": True, "stream_options": {"include_usage": True}}
        with client.stream("POST", "/v1/chat/completions", json=streamed) as response:
            chunks = [data for _, data in sse(response) if isinstance(data, dict)]

    assert plain["choices"][0]["message"]["content"] == "lead: mid: leaf: 42"
    assert plain["usage"] == expected  # 2 x 1000 + 2 x 100 + 10, their tenths, hundredths
    assert [c["usage"] for c in chunks if c.get("usage")] == [expected]
