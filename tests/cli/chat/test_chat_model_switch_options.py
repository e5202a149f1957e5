"""`/model NAME` in `yiem chat` (DESIGN §15) switches to a local server's model as the chat
was started: with its `--tool-calls` mode and `--vision` (a replay server on 127.0.0.1
speaking the OpenAI wire format sees how it is called), where they apply."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.ai.servers import ReplayServer, Reply, openai_chunks
from tests.cli.chat._tmux import Pane

pytestmark = pytest.mark.timeout(180)

PICTURE_TOOL = '''
"""Test tool `picture`: a 1x1 PNG."""

import base64

from yiemagent import AgentToolResult, ImageContent, tool

PNG = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg=="
)


@tool
def picture() -> AgentToolResult:
    """Take a picture."""
    return AgentToolResult([ImageContent(base64.b64encode(PNG).decode(), "image/png")])


get_tool = lambda: picture  # noqa: E731
'''


def test_model_switches_with_the_chat_s_tool_calls_and_vision(tmp_path: Path) -> None:
    """`/model` resolved the new name with `--base-url` alone: a chat started with
    `--tool-calls text --vision` got native tool calls and a model that cannot see once it
    switched, so the server's model saw tool definitions it cannot use and a stand-in for
    every image."""
    tools = tmp_path / "tools"
    tools.mkdir()
    (tools / "picture.py").write_text(PICTURE_TOOL, encoding="utf-8")
    call = '<tool_call>\n{"name": "picture", "arguments": {}}\n</tool_call>'
    with ReplayServer() as server:
        server.enqueue(
            Reply(events=openai_chunks({"role": "assistant", "content": call})),
            Reply(events=openai_chunks({"role": "assistant", "content": "A dot."})),
        )
        pane = Pane(
            tmp_path / "data",
            ["--model", "openai-compatible/first", "--base-url", server.url + "/v1",
             "--tool-calls", "text", "--vision", "--tools", str(tools)],
            faux=False,
        )  # fmt: skip
        try:
            pane.ready()
            pane.type("/model openai-compatible/second")
            pane.wait("model: openai-compatible/second")
            pane.type("What do you see?")
            pane.wait("A dot.")
        finally:
            pane.close()
        first, second = (request.body for request in server.requests)
    assert first["model"] == second["model"] == "second"
    sent = json.dumps(second["messages"])
    # the call read from the text (`--tool-calls text`), its image sent (`--vision`)
    assert "data:image/png;base64,iVBOR" in sent


def test_a_switch_to_a_hosted_model_says_which_options_it_does_not_take(tmp_path: Path) -> None:
    pane = Pane(
        tmp_path / "data",
        ["--model", "ollama/llava", "--base-url", "http://127.0.0.1:9/v1", "--vision"],
        faux=False,
    )
    try:
        pane.ready()
        pane.type("/model anthropic/claude-sonnet-4-5")
        screen = pane.wait("--vision: not for anthropic/claude-sonnet-4-5, not used")
        assert "error" not in screen
    finally:
        pane.close()
