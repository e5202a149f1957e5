"""A hosted model whose API key the environment lacks is said when the chat starts and at
`/model`, as `yiem serve` says it at its start (DESIGN §8), not only by the first prompt's
error. A real terminal (tmux); no model is called."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.cli.chat._tmux import Pane, after

pytestmark = pytest.mark.timeout(180)

NO_KEYS = {"OPENAI_API_KEY": "", "ANTHROPIC_API_KEY": ""}


def test_a_missing_api_key_is_said_at_the_start_and_at_model(tmp_path: Path) -> None:
    pane = Pane(tmp_path, ["--model", "openai/gpt-4o-mini"], env=NO_KEYS, faux=False)
    try:
        screen = pane.ready()
        assert "no API key for openai/gpt-4o-mini: set OPENAI_API_KEY" in screen, screen
        pane.type("/model anthropic/claude-haiku-4-5")
        pane.wait(
            lambda s: after(
                s,
                "model: anthropic/claude-haiku-4-5",
                "no API key for anthropic/claude-haiku-4-5: set ANTHROPIC_API_KEY",
            )
        )
        pane.type("/model ollama/llama3")  # a local server needs none: nothing said
        screen = pane.wait("model: ollama/llama3")
        assert "no API key for ollama" not in screen
        pane.keys("C-d")
        assert pane.exit_code() == 0
    finally:
        pane.close()


def test_a_key_in_the_environment_says_nothing(tmp_path: Path) -> None:
    pane = Pane(
        tmp_path, ["--model", "openai/gpt-4o-mini"], env={"OPENAI_API_KEY": "sk-x"}, faux=False
    )
    try:
        screen = pane.ready()
        pane.keys("C-d")
        assert pane.exit_code() == 0
    finally:
        pane.close()
    assert "no API key" not in screen
