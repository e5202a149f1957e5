"""Ctrl-C at `yiem run`'s approval question (DESIGN §14): the held call is rejected as the
user stopped the run, and that rejection is its result, which the session keeps and the
model reads next, whether the run is `--tools` (the loop) or `--agent FILE` (an Agent, as
`yiem chat` stops what it holds), not "skipped: the run was aborted"."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.cli.test_cli_approvals_output import ctrl_c_at_the_question
from yiemagent.cli.approvals import STOPPED_REASON
from yiemagent.cli.main import main


@pytest.mark.parametrize("agent_file", [False, True], ids=["tools", "agent-file"])
def test_ctrl_c_at_the_question_answers_the_call_with_its_rejection(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    agent_file: bool,
) -> None:
    """The result was "Tool call skipped: the run was aborted": the abort that ends the
    run came before the rejection in the loop, so the user's answer was lost."""
    victim, _, where = ctrl_c_at_the_question(tmp_path, monkeypatch, agent_file)
    code = main(["run", "delete old.log", "--json", *where])
    events = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert code == 130
    ends = [e for e in events if e["type"] == "tool_execution_end"]
    assert [e["result"]["content"][0]["text"] for e in ends] == [
        f"Tool call rejected by the user: {STOPPED_REASON}"
    ]
    assert events[-1]["type"] == "agent_end" and events[-1]["reason"] == "aborted"
    assert victim.exists()
