"""A typed run's output tool call cut off by the output token limit is not a value the schema
refused: nothing was checked, the arguments were never whole. `yiem run` said "✗ the answer
does not match the schema: not executed: the response hit the output token limit; …", which
sends a user to their schema for a problem of `max_tokens`. Now such a line says the answer
was not taken and why. `yiem run` in a subprocess against a replay server speaking the
OpenAI wire format on 127.0.0.1; the chat's view fed by a real agent's events."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from rich.text import Text

from tests._yiem import yiem_in
from tests.ai.servers import Reply, ReplayServer, openai_chunks, sse_reply
from yiemagent import Agent
from yiemagent.ai.providers.faux import FauxModel, faux_message, faux_tool_call
from yiemagent.cli.chat._app import ChatApp
from yiemagent.cli.chat.setup import ChatOptions, build_setup

pytestmark = pytest.mark.timeout(180)

LEGS = {"type": "object", "properties": {"legs": {"type": "integer"}}, "required": ["legs"]}
NOT_TAKEN = (
    "✗ the answer was not taken: not executed: the response hit the output token limit; "
    "re-issue the call with complete arguments"
)

AGENT_FILE = '[agents.counter]\nsystem_prompt = "Count legs."\noutput_schema = "legs.json"\n'


def _final_result(call_id: str, arguments: str, finish_reason: str) -> Reply:
    call = {"index": 0, "id": call_id, "type": "function",
            "function": {"name": "final_result", "arguments": arguments}}  # fmt: skip
    return sse_reply(openai_chunks({"tool_calls": [call]}, finish_reason=finish_reason))


def test_run_says_a_cut_off_answer_was_not_taken(tmp_path: Path) -> None:
    schema = tmp_path / "legs.json"
    schema.write_text(json.dumps(LEGS))
    with ReplayServer() as server:
        server.enqueue(
            _final_result("c0", '{"legs": 8', "length"),  # cut off mid-arguments
            _final_result("c1", json.dumps({"legs": 8}), "tool_calls"),
        )
        model = ["--model", "openai-compatible/m", "--base-url", server.url + "/v1"]
        done = yiem_in(tmp_path, "run", "How many legs?", "--output-schema", str(schema), *model)
    assert done.returncode == 0, done.stderr
    assert done.stdout == '{"legs": 8}\n'
    assert done.stderr.splitlines()[:-1] == [NOT_TAKEN], done.stderr


def test_chat_says_a_cut_off_answer_was_not_taken(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("YIEM_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.delenv("YIEM_CHAT_FAUX_SCRIPT", raising=False)
    (tmp_path / "legs.json").write_text(json.dumps(LEGS))
    (tmp_path / "team.toml").write_text(AGENT_FILE)
    options = ChatOptions(
        model="openai-compatible/m",
        base_url="http://127.0.0.1:9/v1",  # never called: the faux agent below answers
        agent=str(tmp_path / "team.toml"),
    )
    setup = build_setup(options)
    try:
        app = ChatApp(setup)
    finally:
        setup.sessions.close()
    shown: list[Text] = []
    app.view._commit = shown.append
    fm = FauxModel(
        [
            faux_message(faux_tool_call("final_result", {"legs": 8}), stop_reason="length"),
            faux_message(faux_tool_call("final_result", {"legs": 8})),
        ]
    )
    agent = Agent(model=fm.model, stream_fn=fm.stream_fn, output_type=LEGS)
    agent.subscribe(app.view)
    app.view.started()
    asyncio.run(agent.prompt("How many legs?"))
    lines = [line.plain for line in shown]
    assert NOT_TAKEN in lines, lines
    assert lines[-2:-1] == ['{"legs": 8}'], lines
    assert not [line for line in lines if "schema" in line or "final_result" in line], lines
