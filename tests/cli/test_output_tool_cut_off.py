"""A typed run's output tool call cut off by the output token limit is not a value the schema
refused: nothing was checked, the arguments were never whole. `yiem run` said "✗ the answer
does not match the schema: not executed: the response hit the output token limit; …", which
sends a user to their schema for a problem of `max_tokens`. Now such a line says the answer
was not taken and why. `yiem run` in a subprocess against a replay server speaking the
OpenAI wire format on 127.0.0.1; the chat's view fed by a real agent's events."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.cli._typed_output import AGENT_FILE, LEGS, chat_lines, run_typed, tool_call_reply
from yiemagent import Agent
from yiemagent.ai.providers.faux import FauxModel, faux_message, faux_tool_call

pytestmark = pytest.mark.timeout(180)

NOT_TAKEN = (
    "✗ the answer was not taken: not executed: the response hit the output token limit; "
    "re-issue the call with complete arguments"
)


def test_run_says_a_cut_off_answer_was_not_taken(tmp_path: Path) -> None:
    replies = [
        tool_call_reply("c0", "final_result", '{"legs": 8', "length"),  # cut off mid-arguments
        tool_call_reply("c1", "final_result", json.dumps({"legs": 8})),
    ]
    code, out, err = run_typed(tmp_path, replies)
    assert code == 0, err
    assert out == '{"legs": 8}\n'
    assert err.splitlines()[:-1] == [NOT_TAKEN], err


def test_chat_says_a_cut_off_answer_was_not_taken(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fm = FauxModel(
        [
            faux_message(faux_tool_call("final_result", {"legs": 8}), stop_reason="length"),
            faux_message(faux_tool_call("final_result", {"legs": 8})),
        ]
    )
    agent = Agent(model=fm.model, stream_fn=fm.stream_fn, output_type=LEGS)
    lines = chat_lines(tmp_path, monkeypatch, AGENT_FILE, agent, "How many legs?")
    assert NOT_TAKEN in lines, lines
    assert lines[-2:-1] == ['{"legs": 8}'], lines
    assert not [line for line in lines if "schema" in line or "final_result" in line], lines
