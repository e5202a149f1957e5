"""A run its limits stopped, on each protocol (DESIGN §13, §18): two agents that hand the
conversation to each other forever are stopped by the entry's `UsageLimits` (or its
`max_turns`). A client is told which limit stopped the run, never shown a plain success
with no answer: AG-UI ends it with `RUN_ERROR` and the UI message stream with `error`, each
naming the limit; Chat Completions with finish reason "length" after a text naming it."""

from __future__ import annotations

from typing import Any

import httpx2 as httpx
import pytest
from ag_ui import core as agui
from openai import OpenAI
from openai.types.chat import ChatCompletionMessageParam

from tests.serve._kit import serving, sse
from tests.serve.test_protocols import agui_input, agui_run, check_agui_order, user
from yiemagent import Agent, Context, Handoff, UsageLimits
from yiemagent.ai.providers.faux import FauxModel, faux_message, faux_tool_call
from yiemagent.serve import create_app
from yiemagent.sessions import InMemorySessionStore
from yiemagent.types import Usage

pytestmark = pytest.mark.timeout(120)

LIMIT = "max_input_tokens=500 (used 500 input tokens)"


def bounce(target: str) -> Any:
    """A reply that hands the conversation to `target`, costing 100 input tokens."""

    def reply(context: Context) -> Any:
        message = faux_message(faux_tool_call(f"transfer_to_{target}", {}))
        message.usage = Usage(input=100)
        return message

    return reply


def test_a_handoff_loop_stopped_by_its_limits_is_no_success_on_any_protocol() -> None:
    """AG-UI said `RUN_FINISHED` with outcome success and no result, so a client showed
    an empty answer as the agent's, with nothing saying a limit had stopped it."""
    store = InMemorySessionStore()
    a_fm, b_fm = FauxModel([bounce("b")] * 1000), FauxModel([bounce("a")] * 1000)

    def make_agent(session_id: str) -> Agent[Any]:
        """Sessions "turns…" stop at 3 turns; the others at 500 input tokens."""
        by_turns = session_id.startswith("turns")
        a = Agent(
            name="a", model=a_fm.model, stream_fn=a_fm.stream_fn, max_handoffs=1000,
            max_turns=3 if by_turns else 1000,
            usage_limits=None if by_turns else UsageLimits(max_input_tokens=500),
            session_store=store, session_id=session_id,
        )  # fmt: skip
        b = Agent(name="b", model=b_fm.model, stream_fn=b_fm.stream_fn, handoffs=[a])
        a.handoffs = [Handoff(b)]  # a cycle: built after both agents exist
        return a

    with serving(create_app(make_agent, session_store=store)) as url:
        client = httpx.Client(base_url=url, timeout=60)
        events = agui_run(client, agui_input("g", "r", "go"))
        check_agui_order(events)
        end = events[-1]
        assert isinstance(end, agui.RunErrorEvent), end
        assert end.code == "usage_limit" and end.message == f"usage limit reached: {LIMIT}"
        turns = agui_run(client, agui_input("turns", "r", "go"))
        assert isinstance(turns[-1], agui.RunErrorEvent), turns[-1]
        assert turns[-1].code == "max_turns" and "max_turns" in turns[-1].message

        openai = OpenAI(base_url=f"{url}/v1", api_key="none", max_retries=0)
        asked: list[ChatCompletionMessageParam] = [{"role": "user", "content": "go"}]
        reply = openai.chat.completions.create(model="m", messages=asked)
        assert reply.choices[0].finish_reason == "length"
        said = reply.choices[0].message.content
        assert said == f"The run stopped before its answer: usage limit reached: {LIMIT}."
        streamed = openai.chat.completions.create(
            model="m",
            messages=asked,
            stream=True,
        )
        parts = [(c.choices[0].delta.content, c.choices[0].finish_reason) for c in streamed]
        assert "".join(text or "" for text, _ in parts).endswith(f"usage limit reached: {LIMIT}.")
        assert parts[-1][1] == "length"
        headers = {"X-Session-Id": "turns-openai"}
        turned = openai.chat.completions.create(
            model="m",
            messages=asked,
            extra_headers=headers,
        )
        assert "max_turns" in (turned.choices[0].message.content or "")

        body = {"id": "v", "messages": [user("go")]}
        with client.stream("POST", "/api/chat", json=body) as response:
            chunks = [data for _, data in sse(response)]
        ends = [c for c in chunks if isinstance(c, dict) and c["type"] in ("finish", "error")]
        assert ends == [
            {"type": "error", "errorText": f"usage limit reached: {LIMIT}"},
            {"type": "finish", "finishReason": "length"},
        ]
        client.close()
