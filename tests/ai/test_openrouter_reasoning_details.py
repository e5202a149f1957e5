"""OpenRouter's `reasoning_details` of Claude with thinking go back as they came (DESIGN §7).

Through OpenRouter, Claude's thinking streams as `reasoning` text beside `reasoning.text`
entries of `reasoning_details`, the last piece of each block carrying its signature, and a
redacted block as an encrypted entry naming no call. OpenRouter's docs: to keep reasoning
across a tool call, the assistant message goes back with those entries, the sequence
unchanged. Only encrypted entries naming a call were kept, so the signed thinking went back
as a bare `reasoning` string, and Claude refuses a tool-use turn without its signed
thinking."""

from __future__ import annotations

from typing import Any

import pytest

from tests.ai.servers import ReplayServer, openai_chunks, sse_reply
from yiemagent import Agent
from yiemagent.ai import Model
from yiemagent.tools import tool

pytestmark = pytest.mark.timeout(120)

_FORMAT = "anthropic-claude-v1"


@tool
def get_time(city: str) -> str:
    """The time in a city."""
    return f"12:00 in {city}"


def _thinking(text: str, index: int, signature: str | None = None) -> dict[str, object]:
    """A delta of `text` in the `reasoning` field and as a `reasoning.text` entry."""
    entry = {"type": "reasoning.text", "text": text, "signature": signature,
             "format": _FORMAT, "index": index}  # fmt: skip
    return {"role": "assistant", "content": "", "reasoning": text, "reasoning_details": [entry]}


async def _ask_the_time(
    server: ReplayServer,
    model_id: str,
    call_id: str,
    *deltas: dict[str, Any],
    city: str = "Oslo",
) -> tuple[Agent[Any], dict[str, Any]]:
    """Ask OpenRouter's reasoning model `model_id` the time in `city`: its first answer
    streams `deltas`, then calls `get_time` as `call_id`; its second says "Noon.". Returns
    the agent and the assistant message of the second request, as it was sent."""
    call = {"index": 0, "id": call_id, "type": "function",
            "function": {"name": "get_time", "arguments": f'{{"city": "{city}"}}'}}  # fmt: skip
    server.enqueue(
        sse_reply(openai_chunks(*deltas, {"tool_calls": [call]}, finish_reason="tool_calls")),
        sse_reply(openai_chunks({"content": "Noon."})),
    )
    model = Model(
        id=model_id, provider="openrouter", api="openai-completions",
        base_url=server.url + "/v1", reasoning=True,
    )  # fmt: skip
    agent = Agent("x", model=model, tools=[get_time], reasoning="high")
    assert (await agent.prompt(f"The time in {city}?")).text == "Noon."
    [assistant] = [m for m in server.requests[1].body["messages"] if m["role"] == "assistant"]
    assert [c["id"] for c in assistant["tool_calls"]] == [call_id]
    return agent, assistant


CLAUDE = "anthropic/claude-sonnet-4.5"


async def test_signed_thinking_goes_back_as_its_entries(server: ReplayServer) -> None:
    redacted = {"type": "reasoning.encrypted", "data": "RU5D", "format": _FORMAT, "index": 1}
    _, assistant = await _ask_the_time(
        server,
        CLAUDE,
        "toolu_01",
        _thinking("The user wants ", 0),
        _thinking("the time.", 0),
        _thinking("", 0, signature="U0lHMA=="),
        {"reasoning_details": [redacted]},
        _thinking("Call the tool.", 2, signature="U0lHMg=="),
    )
    assert assistant["reasoning_details"] == [
        {"type": "reasoning.text", "text": "The user wants the time.", "signature": "U0lHMA==",
         "format": _FORMAT, "index": 0},
        redacted,
        {"type": "reasoning.text", "text": "Call the tool.", "signature": "U0lHMg==",
         "format": _FORMAT, "index": 2},
    ]  # fmt: skip


async def test_thinking_only_in_the_entries_is_kept(server: ReplayServer) -> None:
    # A delta may carry the text in `reasoning_details` alone, with no `reasoning` field.
    entry = {"type": "reasoning.text", "text": "Think.", "signature": "U0lH",
             "format": _FORMAT, "index": 0}  # fmt: skip
    delta = {"role": "assistant", "reasoning_details": [entry]}
    agent, assistant = await _ask_the_time(server, CLAUDE, "toolu_02", delta, city="Rome")
    first = agent.messages[1]
    assert [b.thinking for b in first.content if b.type == "thinking"] == ["Think."]
    assert assistant["reasoning_details"] == [entry]


async def test_unsigned_thinking_sends_no_entry(server: ReplayServer) -> None:
    # A block whose signature never arrived is no entry OpenRouter would take.
    _, assistant = await _ask_the_time(server, CLAUDE, "toolu_03", _thinking("Hmm.", 0))
    assert "reasoning_details" not in assistant
    assert assistant["reasoning"] == "Hmm."


async def test_an_openai_reasoning_item_goes_back_with_the_calls(server: ReplayServer) -> None:
    # OpenAI's reasoning models through OpenRouter: the reasoning item comes as an encrypted
    # entry whose id is the item's (`rs_…`), naming no call; the o-series and GPT-5 need it
    # back beside their calls to go on from their own reasoning, after its summary.
    item = {"type": "reasoning.encrypted", "data": "gAAAAABq", "id": "rs_0df48",
            "format": "openai-responses-v1", "index": 0}  # fmt: skip

    def summary(text: str) -> dict[str, object]:
        """A piece of the summary, in `reasoning` and as a `reasoning.summary` entry."""
        entry = {"type": "reasoning.summary", "summary": text,
                 "format": "openai-responses-v1", "index": 0}  # fmt: skip
        return {"role": "assistant", "reasoning": text, "reasoning_details": [entry]}

    _, assistant = await _ask_the_time(
        server,
        "openai/gpt-5",
        "call_hb2",
        summary("**Check** the"),
        summary(" time."),
        {"reasoning_details": [item]},
    )
    whole = {"type": "reasoning.summary", "summary": "**Check** the time.",
             "format": "openai-responses-v1", "index": 0}  # fmt: skip
    assert assistant["reasoning_details"] == [whole, item]  # in the order they came


async def test_an_entry_naming_no_call_is_kept(server: ReplayServer) -> None:
    # An encrypted entry whose id no call of the answer has goes back all the same.
    entry = {"type": "reasoning.encrypted", "data": "RU5D", "id": "tool_x9",
             "format": "google-gemini-v1", "index": 0}  # fmt: skip
    delta = {"role": "assistant", "reasoning_details": [entry]}
    _, assistant = await _ask_the_time(server, "google/gemini-2.5-pro", "call_z1", delta)
    assert assistant["reasoning_details"] == [entry]
