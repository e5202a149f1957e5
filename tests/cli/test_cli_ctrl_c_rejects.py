"""Ctrl-C at `yiem run`'s approval question (DESIGN §14): the held call is rejected as the
user stopped the run, and that rejection is its result, which the session keeps and the
model reads next, whether the run is `--tools` (the loop) or `--agent FILE` (an Agent, as
`yiem chat` stops what it holds), not "skipped: the run was aborted"."""

from __future__ import annotations

import importlib
import json
from pathlib import Path

import pytest

from tests.cli.test_cli_approvals_output import TOOL_FILE, FakeTty
from yiemagent.ai.providers.faux import FauxModel, faux_message, faux_tool_call
from yiemagent.cli.approvals import STOPPED_REASON
from yiemagent.cli.main import main

cli_main_module = importlib.import_module("yiemagent.cli.main")
cli_approvals_module = importlib.import_module("yiemagent.cli.approvals")


@pytest.mark.parametrize("agent_file", [False, True], ids=["tools", "agent-file"])
def test_ctrl_c_at_the_question_answers_the_call_with_its_rejection(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    agent_file: bool,
) -> None:
    """The result was "Tool call skipped: the run was aborted": the abort that ends the
    run came before the rejection in the loop, so the user's answer was lost."""
    tools = tmp_path / "tools"
    tools.mkdir()
    (tools / "delete_file.py").write_text(TOOL_FILE)
    victim = tmp_path / "old.log"
    victim.write_text("x")
    fm = FauxModel([faux_message(faux_tool_call("delete_file", {"path": str(victim)}, id="d1"))])
    monkeypatch.setattr(cli_main_module, "resolve_model", lambda *args, **kwargs: fm.model)

    def ctrl_c(question: str) -> str:
        raise KeyboardInterrupt

    monkeypatch.setattr(cli_approvals_module.sys, "stdin", FakeTty())
    monkeypatch.setattr("builtins.input", ctrl_c)
    if agent_file:
        (tmp_path / "agent.toml").write_text('[agents.cleaner]\ntools = ["tools"]\n')
        where = ["--agent", str(tmp_path / "agent.toml")]
    else:
        where = ["--tools", str(tools)]
    code = main(["run", "delete old.log", "--json", *where])
    events = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert code == 130
    ends = [e for e in events if e["type"] == "tool_execution_end"]
    assert [e["result"]["content"][0]["text"] for e in ends] == [
        f"Tool call rejected by the user: {STOPPED_REASON}"
    ]
    assert events[-1]["type"] == "agent_end" and events[-1]["reason"] == "aborted"
    assert victim.exists()
