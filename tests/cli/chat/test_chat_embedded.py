"""`yiem chat` on the real embedded model in tmux (DESIGN §15): the first start shows the
model load, and a question is answered with a tool call. Slow (the model runs on the CPU):
marked `local_model` and `slow`."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.cli.chat._tmux import Pane, after

pytestmark = [pytest.mark.local_model, pytest.mark.slow, pytest.mark.timeout(600)]


def test_the_embedded_model_answers_with_a_tool_call(tmp_path: Path) -> None:
    pane = Pane(tmp_path, [], faux=False, width=160)
    try:
        pane.wait("/help lists the commands", timeout=120)
        pane.wait("loaded in", timeout=300)  # the load progress, then its line
        pane.type("What is 17 * 23? Use the calculator.")
        screen = pane.wait(
            lambda s: after(s, "› What is 17 * 23?", "✓ calculator(", "391", "tokens:"),
            timeout=300,
        )
        assert "Traceback" not in screen
        pane.keys("C-d")
        assert pane.exit_code() == 0
    finally:
        pane.close()
