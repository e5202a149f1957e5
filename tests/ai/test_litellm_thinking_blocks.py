"""Claude's thinking through a LiteLLM proxy's Chat Completions goes back with its signature.

LiteLLM streams a Claude model's thinking as `reasoning_content` beside `thinking_blocks`
(the text in pieces, then the block's `signature`; a redacted block as its `data`), and
builds the Anthropic thinking blocks of the next request from an assistant message's
`thinking_blocks` only. With thinking on, Anthropic refuses a turn whose tool calls come
without the thinking that led to them ("Expected `thinking` or `redacted_thinking`, but
found `tool_use`"): openai/openai-agents-python#1704 and #678, BerriAI/litellm#15601. The
thinking went back as `reasoning_content` alone, without its signature, so the turn after
every tool call failed. It now goes back as the `thinking_blocks` it came as, also from a
session stored and opened again; another model gets its text only."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, strategies as st

from tests.ai._stream_kit import fragments, property_settings, streamed
from tests.ai.servers import ReplayServer, openai_chunks, sse_reply
from yiemagent import Agent, AgentTool
from yiemagent.ai import get_model
from yiemagent.ai.openai_wire import messages_to_openai
from yiemagent.ai.providers.openai_completions import stream_openai_completions
from yiemagent.sessions import SqliteSessionStore
from yiemagent.types.messages import UserMessage
from yiemagent.types.model import Context, StreamOptions

pytestmark = pytest.mark.timeout(120)

SIGNATURE = "EqQBCgIYAhIM1gbcDa9GJwZA2b3hGgxBdjrkzLoky3dl1pkiMOYds"
REDACTED = "EmwKAhgBEgy3va3pzix/LafPsn4aDFIT2Xlxh0L5L8rLVyIwxtE3rAFBa8cr3qpP"
THOUGHT = "I should check the weather."
THINKING_BLOCKS = [
    {"type": "thinking", "thinking": THOUGHT, "signature": SIGNATURE},
    {"type": "redacted_thinking", "data": REDACTED},
]


def thinking(text: str, signature: str | None = None) -> dict[str, Any]:
    """A delta of LiteLLM's stream for a piece of Claude's thinking."""
    block = {"type": "thinking", "thinking": text, "signature": signature}
    return {"reasoning_content": text, "thinking_blocks": [block]}


def a_thoughtful_call() -> list[str]:
    """What LiteLLM streams for Claude thinking, then calling `get_weather`."""
    return openai_chunks(
        {"role": "assistant", "content": "", **thinking("I should check ")},
        thinking("the weather."),
        thinking("", SIGNATURE),
        {"thinking_blocks": [{"type": "redacted_thinking", "data": REDACTED}]},
        {"tool_calls": [{"index": 0, "id": "toolu_01", "type": "function",
                         "function": {"name": "get_weather", "arguments": ""}}]},
        {"tool_calls": [{"index": 0, "function": {"arguments": '{"city": "Paris"}'}}]},
        finish_reason="tool_calls",
    )  # fmt: skip


def weather() -> list[AgentTool]:
    schema = {"type": "object", "properties": {"city": {"type": "string"}}}
    return [AgentTool("get_weather", "get_weather", "weather", schema, lambda *_: "sunny")]


def assistant_messages(body: dict[str, Any]) -> list[dict[str, Any]]:
    return [m for m in body["messages"] if m["role"] == "assistant"]


async def test_thinking_goes_back_to_the_proxy_as_its_thinking_blocks(
    server: ReplayServer, tmp_path: Path
) -> None:
    server.enqueue(
        sse_reply(a_thoughtful_call()),
        sse_reply(openai_chunks({"content": "Sunny in Paris."})),
        sse_reply(openai_chunks({"content": "Still sunny."})),
        sse_reply(openai_chunks({"content": "Sunny again."})),
    )
    claude = get_model(
        "openai-compatible/claude-sonnet-4-5", base_url=server.url + "/v1", reasoning=True
    )
    store = SqliteSessionStore(tmp_path / "sessions.db")
    agent = Agent(
        model=claude, tools=weather(), reasoning="medium", session_store=store, session_id="s"
    )
    reply = await agent.prompt("Weather in Paris?")
    assert reply.text == "Sunny in Paris."
    await agent.close()

    [turn] = assistant_messages(server.requests[1].body)
    assert turn["thinking_blocks"] == THINKING_BLOCKS  # before: reasoning_content alone
    assert [call["id"] for call in turn["tool_calls"]] == ["toolu_01"]

    # a new Agent on the stored session sends the same turn, byte for byte
    reopened = SqliteSessionStore(tmp_path / "sessions.db")
    again = Agent(
        model=claude, tools=weather(), reasoning="medium", session_store=reopened, session_id="s"
    )
    assert (await again.prompt("And now?")).text == "Still sunny."
    kept = assistant_messages(server.requests[2].body)[0]
    assert json.dumps(kept) == json.dumps(turn)
    await again.close()

    # another model gets the thinking's text, never a signature it cannot check
    other = get_model("openai-compatible/gpt-oss-120b", base_url=server.url + "/v1")
    third = Agent(model=other, tools=weather(), session_store=reopened, session_id="s")
    assert (await third.prompt("Tomorrow?")).text == "Sunny again."
    sent = json.dumps(server.requests[3].body)
    assert THOUGHT in sent and SIGNATURE not in sent and REDACTED not in sent
    await third.close()


Turn = tuple[list[dict[str, Any]], list[dict[str, Any]]]
"""(the thinking blocks the model wrote, in order; the deltas LiteLLM streams for them)."""


@st.composite
def interleaved_thinking(draw: st.DrawFn) -> Turn:
    """Claude's interleaved thinking: thinking or redacted blocks, each followed by a call,
    the text of each thinking block cut anywhere and sent with or without
    `reasoning_content` beside it, its signature last."""
    blocks: list[dict[str, Any]] = []
    deltas: list[dict[str, Any]] = []
    for index in range(draw(st.integers(1, 3))):
        if draw(st.booleans()):
            text = draw(st.text("abc .", min_size=1, max_size=12))
            signature = f"sig-{index}"
            blocks.append({"type": "thinking", "thinking": text, "signature": signature})
            beside = draw(st.booleans())  # LiteLLM sends both; a server may send the list only
            for piece in [*fragments(draw, text), ""]:
                entry = {"type": "thinking", "thinking": piece, "signature": None}
                if not piece:
                    entry["signature"] = signature
                deltas.append(
                    {"thinking_blocks": [entry], **({"reasoning_content": piece} if beside else {})}
                )
        else:
            entry = {"type": "redacted_thinking", "data": f"data-{index}"}
            blocks.append(entry)
            deltas.append({"thinking_blocks": [entry]})
        call = {"name": "get_weather", "arguments": "{}"}
        deltas.append(
            {
                "tool_calls": [
                    {"index": index, "id": f"c{index}", "type": "function", "function": call}
                ]
            }
        )
    return blocks, deltas


@property_settings(max_examples=40)
@given(turn=interleaved_thinking())
def test_however_the_thinking_is_cut_each_block_goes_back_whole(
    stream_server: ReplayServer, turn: Turn
) -> None:
    blocks, deltas = turn
    stream_server.enqueue(sse_reply(openai_chunks(*deltas, finish_reason="tool_calls")))
    claude = get_model(
        "openai-compatible/claude-sonnet-4-5", base_url=stream_server.url + "/v1", reasoning=True
    )
    message = streamed(
        lambda: stream_openai_completions(
            claude, Context("", [UserMessage("go")]), StreamOptions(api_key="k-1234")
        ).result()
    )
    assert message.stop_reason == "toolUse", message.error_message
    [sent] = [m for m in messages_to_openai([message], model=claude) if m["role"] == "assistant"]
    assert sent["thinking_blocks"] == blocks
    assert [call["id"] for call in sent["tool_calls"]] == [f"c{i}" for i in range(len(blocks))]
