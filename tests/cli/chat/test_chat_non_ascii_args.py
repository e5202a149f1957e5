"""`yiem chat` shows a tool call's arguments as the model wrote them: a list or an object
holding non-ASCII text ("Zürich") was shown as JSON escapes (`["Z\u00fcrich"]`), in the
call's line and in the question of a held call alike. A real terminal (tmux), a replay
server on 127.0.0.1 speaking the OpenAI wire format."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.ai.servers import ReplayServer, Reply, openai_chunks
from tests.cli.chat._tmux import Pane

pytestmark = pytest.mark.timeout(180)

ARGS = {"cities": ["Zürich", "Ærøskøbing"], "note": {"ville": "Besançon"}}


def test_non_ascii_arguments_are_shown_as_written(tmp_path: Path) -> None:
    call = {
        "index": 0,
        "id": "call_1",
        "type": "function",
        "function": {"name": "compare_cities", "arguments": json.dumps(ARGS)},
    }
    with ReplayServer() as server:
        server.enqueue(
            Reply(events=openai_chunks({"tool_calls": [call]}, finish_reason="tool_calls")),
            Reply(events=openai_chunks({"content": "Compared."})),
        )
        args = ["--model", "openai-compatible/m", "--base-url", server.url + "/v1"]
        pane = Pane(tmp_path, args, faux=False, width=120, height=30)
        try:
            pane.ready()
            pane.type("compare them")
            screen = pane.wait("Compared.")
            pane.type("/exit")
            assert pane.exit_code() == 0
        finally:
            pane.close()
    assert "Traceback" not in screen
    assert 'compare_cities(cities=["Zürich", "Ærøskøbing"], note={"ville": "Besançon"}' in (
        screen
    ), screen
    assert "\\u00" not in screen, screen
