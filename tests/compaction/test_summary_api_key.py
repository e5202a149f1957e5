"""The key a loop is configured with reaches its compactor's summary request:
`get_api_key`, then `api_key` for the run's own provider; the environment's only when
neither gives one. Through the `anthropic` SDK against a server on 127.0.0.1."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from typing import Any

import pytest

from tests.ai.servers import ReplayServer, sse_reply
from yiemagent.ai import get_model
from yiemagent.compaction import Compactor
from yiemagent.compaction._compactor import SUMMARY_SYSTEM_PROMPT
from yiemagent.loop import run_agent_loop
from yiemagent.types import AgentContext, AgentLoopConfig, Model, UserMessage

pytestmark = pytest.mark.timeout(120)

ENVIRONMENT_KEY = "sk-ant-environment-0000"


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch) -> Iterator[ReplayServer]:
    monkeypatch.setenv("ANTHROPIC_API_KEY", ENVIRONMENT_KEY)
    with ReplayServer() as replay:
        replay.enqueue(*(sse_reply("anthropic_text.sse") for _ in range(12)))
        yield replay


def claude(server: ReplayServer) -> Model:
    return dataclasses.replace(
        get_model("anthropic/claude-sonnet-4-5", base_url=server.url),
        context_window=4096,
        max_tokens=256,
    )


async def run_compacting(model: Model, compactor: Compactor, **keys: Any) -> None:
    """Four long prompts on one transcript: the compactor summarises at least once."""
    config = AgentLoopConfig(model=model, transform_context=compactor, **keys)
    context = AgentContext("Be brief.", [], [])
    for n in range(4):
        prompt = UserMessage(f"Part {n} of the story: " + "once upon a time " * 200)
        context.messages += await run_agent_loop([prompt], context, config, lambda _: None)
    assert compactor.compactions >= 1


def keys_of(server: ReplayServer) -> tuple[set[str], set[str]]:
    """The keys of the summary requests and of the run's own requests."""
    summary: set[str] = set()
    own: set[str] = set()
    for request in server.requests:
        # a key not shaped like an API key goes as a bearer token
        key = request.headers.get("x-api-key") or request.headers["authorization"][7:]
        is_summary = request.body["system"][0]["text"] == SUMMARY_SYSTEM_PROMPT
        (summary if is_summary else own).add(key)
    return summary, own


async def test_the_key_of_get_api_key_reaches_the_summary(server: ReplayServer) -> None:
    asked: list[str] = []

    async def get_api_key(provider: str) -> str:
        asked.append(provider)
        return "sk-ant-from-hook-1111"

    await run_compacting(claude(server), Compactor(claude(server)), get_api_key=get_api_key)
    summary, own = keys_of(server)
    assert summary == own == {"sk-ant-from-hook-1111"}
    assert set(asked) == {"anthropic"}


async def test_the_configured_key_reaches_the_summary(server: ReplayServer) -> None:
    await run_compacting(
        claude(server), Compactor(claude(server)), api_key="sk-ant-configured-2222"
    )
    summary, own = keys_of(server)
    assert summary == own == {"sk-ant-configured-2222"}


async def test_without_a_configured_key_the_environment_s_is_sent(server: ReplayServer) -> None:
    await run_compacting(claude(server), Compactor(claude(server)))
    summary, own = keys_of(server)
    assert summary == own == {ENVIRONMENT_KEY}


async def test_a_key_of_another_provider_is_not_sent_to_the_summary_model(
    server: ReplayServer,
) -> None:
    """The run's `api_key` is its own provider's: a compactor on another provider's model
    reads its own environment variable instead."""
    own = dataclasses.replace(claude(server), provider="elsewhere")
    await run_compacting(own, Compactor(claude(server)), api_key="sk-elsewhere-3333")
    summary, sent = keys_of(server)
    assert sent == {"sk-elsewhere-3333"}
    assert summary == {ENVIRONMENT_KEY}


async def test_a_key_hook_that_fails_for_the_summary_model_is_a_summary_not_written(
    server: ReplayServer, caplog: pytest.LogCaptureFixture
) -> None:
    """`get_api_key` failing for the compactor's provider is what any failed summary
    request is: a warning naming it, the older turns dropped, the run going on. It raised
    out of the compactor before the summary request was tried, and ended the run."""

    async def get_api_key(provider: str) -> str:
        if provider == "anthropic":
            raise RuntimeError("the key vault is down")
        return "sk-elsewhere-4444"

    own = dataclasses.replace(claude(server), provider="elsewhere")
    compactor = Compactor(claude(server))
    with caplog.at_level("WARNING", logger="yiemagent"):
        await run_compacting(own, compactor, get_api_key=get_api_key)
    summary, sent = keys_of(server)
    assert summary == set() and sent == {"sk-elsewhere-4444"}
    warned = [r.getMessage() for r in caplog.records if "no summary" in r.getMessage()]
    assert warned and warned[0] == (
        "compaction: no summary (get_api_key('anthropic') failed: RuntimeError: the key vault "
        "is down); older turns are dropped"
    )
