"""`Agent(model=[hosted, backup])` where the hosted model's SDK extra is not installed: the
call cannot reach its provider, as with no API key, so the next model answers (DESIGN §13,
docs/observability.md "Fallback models"). It ended the run with "the anthropic SDK is not
installed" while the backup could have answered."""

from __future__ import annotations

import sys
from collections.abc import Iterator

import pytest

from tests.ai.servers import ReplayServer, openai_chunks, sse_reply
from yiemagent import Agent, AgentRunError
from yiemagent.ai import FallbackModel
from yiemagent.types.model import Model

pytestmark = pytest.mark.timeout(60)

HOSTED = Model(id="claude-x", provider="anthropic", api="anthropic-messages")


@pytest.fixture
def backup() -> Iterator[ReplayServer]:
    with ReplayServer() as replay:
        yield replay


@pytest.fixture
def no_anthropic_sdk(monkeypatch: pytest.MonkeyPatch) -> None:
    """`import anthropic` fails as it does without the extra."""
    monkeypatch.setitem(sys.modules, "anthropic", None)
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test")


@pytest.mark.usefixtures("no_anthropic_sdk")
async def test_a_model_whose_sdk_is_missing_falls_through(backup: ReplayServer) -> None:
    backup.enqueue(sse_reply(openai_chunks({"content": "backup answer"})))
    local = Model(id="b", provider="vllm", api="openai-completions", base_url=backup.url + "/v1")
    agent = Agent(model=[HOSTED, local], max_retry_delay_ms=1)
    assert isinstance(agent.state.model, FallbackModel)
    reply = await agent.prompt("hi")
    assert (reply.text, reply.model) == ("backup answer", "b")


@pytest.mark.usefixtures("no_anthropic_sdk")
async def test_alone_it_still_says_what_to_install() -> None:
    with pytest.raises(AgentRunError, match="the anthropic SDK is not installed: "):
        await Agent(model=HOSTED).prompt("hi")
