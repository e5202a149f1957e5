"""`yiem chat --reasoning LEVEL --vision` (DESIGN §21): the chat's agent thinks at that
level from its first call (a replay server on 127.0.0.1 speaking the Anthropic wire format
sees it), a local server's model reads images and thinks as asked, and a model that cannot
think gets one note in the chat instead of a level it ignores."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.ai.servers import ReplayServer, sse_reply
from yiemagent.cli.chat.setup import ChatOptions, build_setup

pytestmark = pytest.mark.timeout(120)


@pytest.fixture(autouse=True)
def data_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("YIEM_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.delenv("YIEM_CHAT_FAUX_SCRIPT", raising=False)
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test-0123456789")


def test_the_chats_agent_thinks_from_its_first_call() -> None:
    with ReplayServer() as server:
        server.enqueue(sse_reply("anthropic_text.sse"))
        options = ChatOptions(
            model="anthropic/claude-sonnet-4-5", base_url=server.url, reasoning="high"
        )
        setup = build_setup(options)
        try:
            assert setup.agent.state.reasoning == "high"
            setup.agent.prompt_sync("Hi")
            assert server.requests[0].body["thinking"]["type"] == "enabled"
            assert not [note for note in setup.notes if "reasoning" in note]
        finally:
            setup.sessions.close()


def test_a_model_that_cannot_think_gets_a_note() -> None:
    options = ChatOptions(model="anthropic/claude-3-5-haiku-latest", reasoning="low")
    setup = build_setup(options)
    try:
        assert (
            "--reasoning is ignored: anthropic/claude-3-5-haiku-latest is not a reasoning model"
            in setup.notes
        )
    finally:
        setup.sessions.close()


def test_a_local_server_s_model_reads_images_and_thinks_as_asked() -> None:
    """Nothing says what a local server's model does: --vision says it reads images, and a
    --reasoning level says it thinks (that level was ignored, with a note)."""
    options = ChatOptions(
        model="ollama/llava", base_url="http://127.0.0.1:9/v1", reasoning="low", vision=True
    )
    setup = build_setup(options)
    try:
        assert "image" in setup.model.input and setup.model.reasoning
        assert setup.agent.state.reasoning == "low"
        assert not [note for note in setup.notes if "reasoning" in note]
    finally:
        setup.sessions.close()
