"""Anthropic prompt caching in a team (DESIGN §21, §17): an agent called as a tool caches
with its own `cache_retention`, the run (its entry agent, and a handoff target speaking in
it that sets none) with the run's, a target that sets one with its own; every request has
at most 4 breakpoints (the API refuses a fifth); the cache reads and writes each call
reports are priced from the catalogue (one-hour writes at twice the input price), the
sub-agent's in its tool result's usage. Through the `anthropic` SDK against a server on
127.0.0.1."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from tests.ai.servers import ReplayServer, anthropic_events, sse_reply
from yiemagent import Agent, Handoff
from yiemagent.ai import get_model
from yiemagent.types.messages import AssistantMessage, ToolResultMessage

pytestmark = pytest.mark.timeout(120)

SHORT = {"type": "ephemeral"}
LONG = {"type": "ephemeral", "ttl": "1h"}


def marks(value: Any) -> list[dict[str, Any]]:
    """Every `cache_control` in a request body."""
    if isinstance(value, dict):
        found = [value["cache_control"]] if "cache_control" in value else []
        return found + [m for v in value.values() for m in marks(v)]
    if isinstance(value, list):
        return [m for v in value for m in marks(v)]
    return []


def call(name: str, arguments: dict[str, Any], id: str = "toolu_1") -> dict[str, Any]:
    return {"type": "tool_use", "id": id, "name": name, "input": arguments}


def text(words: str) -> dict[str, Any]:
    return {"type": "text", "text": words}


@pytest.fixture
def server() -> Iterator[ReplayServer]:
    with ReplayServer() as replay:
        yield replay


async def test_a_team_caches_with_each_runs_retention_and_pays_for_it(
    server: ReplayServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test-0123456789")
    claude = get_model("anthropic/claude-sonnet-4-5", base_url=server.url)
    server.enqueue(
        # lead: asks the researcher
        sse_reply(
            anthropic_events(
                call("researcher", {"input": "capital of Peru?"}), stop_reason="tool_use"
            )
        ),
        # researcher: answers, having read 1000 cached tokens and written 200
        sse_reply(
            anthropic_events(
                text("Lima."),
                stop_reason="end_turn",
                cache_read_input_tokens=1000,
                cache_creation_input_tokens=200,
            )
        ),
        # lead: hands over to billing, having written 300 tokens to the one-hour cache
        sse_reply(
            anthropic_events(
                call("transfer_to_billing", {}, "toolu_2"),
                stop_reason="tool_use",
                cache_creation_input_tokens=300,
                cache_creation={"ephemeral_1h_input_tokens": 300, "ephemeral_5m_input_tokens": 0},
            )
        ),
        # billing: answers
        sse_reply(anthropic_events(text("Invoice sent."), stop_reason="end_turn")),
    )
    researcher = Agent("You look facts up.", claude, name="researcher")
    billing = Agent("You answer invoices.", claude, name="billing")
    lead = Agent(
        "You answer questions.",
        claude,
        name="lead",
        tools=[researcher.as_tool(description="Looks facts up.")],
        handoffs=[Handoff(billing, description="Invoices.")],
        cache_retention="long",
    )
    reply = await lead.prompt("Capital of Peru, and my invoice?")
    assert reply.text == "Invoice sent.", reply.error_message

    lead_1, research, lead_2, billed = (r.body for r in server.requests)
    assert research["system"][0]["text"] == "You look facts up."
    # the lead's tools, system prompt and last two user turns (its first request has one);
    # the researcher has no tools
    for body, expected in ((lead_1, [LONG] * 3), (lead_2, [LONG] * 4), (research, [SHORT] * 2)):
        assert marks(body) == expected
    # after the handoff the run's options hold (as its temperature does): the lead's
    assert billed["system"][0]["text"] == "You answer invoices."
    assert marks(billed) == [LONG] * 3

    price = claude.cost
    [result] = [m for m in lead.state.messages if isinstance(m, ToolResultMessage)][:1]
    assert result.usage is not None
    assert result.usage.cache_read == 1000 and result.usage.cache_write == 200
    assert result.usage.cost.cache_read == pytest.approx(1000 * price.cache_read / 1e6)
    assert result.usage.cost.cache_write == pytest.approx(200 * price.cache_write / 1e6)
    handing = next(
        m
        for m in lead.state.messages
        if isinstance(m, AssistantMessage) and m.tool_calls and m.tool_calls[0].id == "toolu_2"
    )
    assert handing.usage.cache_write == 300
    assert handing.usage.cost.cache_write == pytest.approx(300 * 2 * price.input / 1e6)


@pytest.mark.parametrize(("own", "expected"), [("none", []), ("short", [SHORT] * 3)])
async def test_a_target_that_sets_its_own_retention_caches_with_it(
    server: ReplayServer, monkeypatch: pytest.MonkeyPatch, own: Any, expected: list[Any]
) -> None:
    # the cache holds what the target sends (its system prompt, its tools): its own
    # setting wins over the run's, as its model does
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test-0123456789")
    claude = get_model("anthropic/claude-sonnet-4-5", base_url=server.url)
    server.enqueue(
        sse_reply(anthropic_events(call("transfer_to_billing", {}), stop_reason="tool_use")),
        sse_reply(anthropic_events(text("Invoice sent."), stop_reason="end_turn")),
    )
    billing = Agent("You answer invoices.", claude, name="billing", cache_retention=own)
    lead = Agent(
        "You answer questions.", claude, name="lead", handoffs=[billing], cache_retention="long"
    )
    reply = await lead.prompt("My invoice?")
    assert reply.text == "Invoice sent.", reply.error_message
    led, billed = (r.body for r in server.requests)
    assert marks(led) == [LONG] * 3
    assert billed["system"][0]["text"] == "You answer invoices."
    assert marks(billed) == expected
