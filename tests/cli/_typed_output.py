"""Helpers for the tests of what `yiem run` and `yiem chat` show of a typed run's output
tool: the `legs` schema, replies of a replay server speaking the OpenAI wire format, a
`yiem run --output-schema` in a subprocess, and the lines of the chat's view fed by a real
agent's events."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from rich.text import Text

from tests._yiem import yiem_in
from tests.ai.servers import ReplayServer, Reply, openai_chunks, sse_reply
from yiemagent import Agent
from yiemagent.cli.chat._app import ChatApp
from yiemagent.cli.chat.setup import ChatOptions, build_setup

LEGS = {"type": "object", "properties": {"legs": {"type": "integer"}}, "required": ["legs"]}
"""The output schema: `{"legs": 8}` matches it, `{"legs": "eight"}` does not."""

AGENT_FILE = '[agents.counter]\nsystem_prompt = "Count legs."\noutput_schema = "legs.json"\n'
"""One typed agent, its schema `LEGS` in `legs.json` beside the file."""


def tool_call_reply(
    call_id: str, name: str, arguments: str, finish_reason: str = "tool_calls"
) -> Reply:
    """A streamed reply that calls `name` with `arguments` (JSON text, whole or cut off)."""
    call = {"index": 0, "id": call_id, "type": "function",
            "function": {"name": name, "arguments": arguments}}  # fmt: skip
    return sse_reply(openai_chunks({"tool_calls": [call]}, finish_reason=finish_reason))


def run_typed(tmp_path: Path, replies: list[Reply], *options: str) -> tuple[int, str, str]:
    """`yiem run "How many legs?" --output-schema legs.json *options` against a replay server
    answering `replies` in turn: its exit code, stdout and stderr."""
    schema = tmp_path / "legs.json"
    schema.write_text(json.dumps(LEGS))
    with ReplayServer() as server:
        server.enqueue(*replies)
        model = ["--model", "openai-compatible/m", "--base-url", server.url + "/v1"]
        done = yiem_in(tmp_path, "run", "How many legs?", "--output-schema", str(schema),
                       *model, *options)  # fmt: skip
    return done.returncode, done.stdout, done.stderr


def chat_lines(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    agent_file: str,
    agent: Agent[Any],
    prompt: str,
) -> list[str]:
    """The lines the chat's view shows while `agent` answers `prompt`, in a chat set up on
    `agent_file` (written as `team.toml`, `LEGS` beside it as `legs.json`). `agent` is a
    faux one the test makes: the chat's own model is never called."""
    monkeypatch.setenv("YIEM_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.delenv("YIEM_CHAT_FAUX_SCRIPT", raising=False)
    (tmp_path / "legs.json").write_text(json.dumps(LEGS))
    (tmp_path / "team.toml").write_text(agent_file)
    options = ChatOptions(
        model="openai-compatible/m",
        base_url="http://127.0.0.1:9/v1",
        agent=str(tmp_path / "team.toml"),
    )
    setup = build_setup(options)
    try:
        app = ChatApp(setup)
    finally:
        setup.sessions.close()
    shown: list[Text] = []
    app.view._commit = shown.append
    agent.subscribe(app.view)
    app.view.started()
    asyncio.run(agent.prompt(prompt))
    return [line.plain for line in shown]
