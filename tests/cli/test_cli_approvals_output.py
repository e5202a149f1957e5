"""`yiem run` with held tool calls (y/n on the terminal, `--yes`, no terminal) and with
`--output-schema FILE.json` (the validated JSON on stdout), on the faux model (DESIGN §14,
§8: errors are one line)."""

from __future__ import annotations

import importlib
import io
import json
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.cli.chat._tmux import Pane
from yiemagent import ToolResultMessage
from yiemagent.ai.providers.faux import FauxModel, faux_message, faux_text, faux_tool_call
from yiemagent.cli.approvals import NO_TERMINAL_REASON
from yiemagent.cli.main import main
from yiemagent.types import Usage, text_of

cli_main_module = importlib.import_module("yiemagent.cli.main")
cli_approvals_module = importlib.import_module("yiemagent.cli.approvals")

TOOL_FILE = '''
from pathlib import Path
from yiemagent import tool

@tool(requires_approval=True)
def delete_file(path: str) -> str:
    """Delete a file."""
    Path(path).unlink()
    return f"deleted {path}"

def get_tool():
    return delete_file
'''


def held_delete(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, usage: Usage | None = None
) -> tuple[Path, Path, FauxModel]:
    """A tools folder in `tmp_path` with the approval-gated `delete_file`, the file
    `old.log` beside it, and `yiem run`'s model replaced by a faux model that calls
    `delete_file` on it (its reply counting `usage`), then says "Done.". Returns the
    folder, the file and the model."""
    tools = tmp_path / "tools"
    tools.mkdir()
    (tools / "delete_file.py").write_text(TOOL_FILE)
    victim = tmp_path / "old.log"
    victim.write_text("x")
    held = faux_message(faux_tool_call("delete_file", {"path": str(victim)}, id="d1"))
    if usage is not None:
        held.usage = usage
    fm = FauxModel([held, "Done."])
    monkeypatch.setattr(cli_main_module, "resolve_model", lambda *args, **kwargs: fm.model)
    return tools, victim, fm


def ctrl_c_at_the_question(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, agent_file: bool, usage: Usage | None = None
) -> tuple[Path, FauxModel, list[str]]:
    """`held_delete` on a terminal whose user presses Ctrl-C at the approval question.
    Returns the file, the model and the `yiem run` arguments naming the tools: `--tools
    DIR`, or with `agent_file` `--agent FILE` of an agent that uses that folder."""
    tools, victim, fm = held_delete(tmp_path, monkeypatch, usage)

    def ctrl_c(question: str) -> str:
        raise KeyboardInterrupt

    monkeypatch.setattr(cli_approvals_module.sys, "stdin", FakeTty())
    monkeypatch.setattr("builtins.input", ctrl_c)
    if not agent_file:
        return victim, fm, ["--tools", str(tools)]
    (tmp_path / "agent.toml").write_text('[agents.cleaner]\ntools = ["tools"]\n')
    return victim, fm, ["--agent", str(tmp_path / "agent.toml")]


@pytest.fixture
def setup(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, Path, FauxModel]:
    return held_delete(tmp_path, monkeypatch)


def result_seen(fm: FauxModel) -> ToolResultMessage:
    return next(m for m in fm.contexts[1].messages if isinstance(m, ToolResultMessage))


def test_yes_approves_held_calls(
    setup: tuple[Path, Path, FauxModel], capsys: pytest.CaptureFixture[str]
) -> None:
    tools, victim, fm = setup
    code = main(["run", "delete old.log", "--tools", str(tools), "--yes"])
    out, err = capsys.readouterr()
    assert code == 0, err
    assert not victim.exists()
    assert out.strip() == "Done."
    assert "approved (--yes): delete_file(" in err
    assert text_of(result_seen(fm).content).startswith("deleted ")


def test_one_usage_line_counts_the_runs_before_and_after_the_decision(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """`yiem run` printed a usage line when the run stopped on the held call, before the
    question, and another after the decided run, which counted that run only: the last
    line, where a user reads what the command spent, left out the first model call."""
    from yiemagent.types import Usage

    tools = tmp_path / "tools"
    tools.mkdir()
    (tools / "delete_file.py").write_text(TOOL_FILE)
    victim = tmp_path / "old.log"
    victim.write_text("x")
    spent = Usage(input=100, output=10, total_tokens=110)
    held = faux_message(faux_tool_call("delete_file", {"path": str(victim)}, id="d1"))
    held.usage = spent
    done = faux_message(faux_text("Done."))
    done.usage = Usage(input=30, output=5, total_tokens=35)
    fm = FauxModel([held, done])
    monkeypatch.setattr(cli_main_module, "resolve_model", lambda *args, **kwargs: fm.model)
    assert main(["run", "delete old.log", "--tools", str(tools), "--yes"]) == 0
    err = capsys.readouterr().err
    usage = [line for line in err.splitlines() if line.startswith("tokens: ")]
    assert len(usage) == 1 and usage[0].startswith("tokens: 130 in, 15 out · "), err


@pytest.mark.parametrize("agent_file", [False, True], ids=["tools", "agent-file"])
def test_without_a_terminal_held_calls_are_not_run_and_the_command_fails(
    setup: tuple[Path, Path, FauxModel],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    agent_file: bool,
) -> None:
    """With no terminal to ask, nobody rejected the call: the model was told "rejected by
    the user" and the command exited 0, as if the user had refused and all went well."""
    tools, victim, fm = setup
    if agent_file:
        (tmp_path / "agent.toml").write_text(f'[agents.cleaner]\ntools = ["{tools}"]\n')
        where = ["--agent", str(tmp_path / "agent.toml")]
    else:
        where = ["--tools", str(tools)]
    code = main(["run", "delete old.log", *where])
    out, err = capsys.readouterr()
    assert code == 1, err
    assert victim.exists()
    seen = text_of(result_seen(fm).content)
    assert seen == f"Tool call not run: {NO_TERMINAL_REASON}"
    assert "rejected" not in seen and "nobody can approve it here (no terminal)" in seen
    assert out.strip() == "Done."  # the model's answer is still shown
    assert "not run: delete_file(" in err and "rejected" not in err, err
    assert err.strip().splitlines()[-1] == (
        "yiem: error: a tool call was not run: it needs approval and there is no terminal to "
        "ask; "
        "run again with --yes to approve it, or from a terminal"
    ), err


class FakeTty(io.StringIO):
    def isatty(self) -> bool:
        return True


@pytest.mark.parametrize(("answer", "deleted"), [("y", True), ("n", False), ("", False)])
def test_the_terminal_is_asked_y_or_n(
    setup: tuple[Path, Path, FauxModel],
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    answer: str,
    deleted: bool,
) -> None:
    tools, victim, fm = setup
    asked: list[str] = []

    def fake_input(question: str) -> str:
        asked.append(question)
        return answer

    monkeypatch.setattr(cli_approvals_module.sys, "stdin", FakeTty())
    monkeypatch.setattr("builtins.input", fake_input)
    code = main(["run", "delete old.log", "--tools", str(tools)])
    assert code == 0
    assert asked == [f"Run delete_file({json.dumps({'path': str(victim)})})? [y/N] "]
    assert victim.exists() != deleted
    assert result_seen(fm).is_error != deleted


def test_output_schema_prints_the_validated_json(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    schema = tmp_path / "legs.json"
    schema.write_text(json.dumps({"type": "object", "properties": {"legs": {"type": "integer"}},
                                  "required": ["legs"]}))  # fmt: skip
    fm = FauxModel(
        [
            faux_message(faux_tool_call("final_result", {"legs": "eight"})),
            faux_message(faux_tool_call("final_result", {"legs": 8})),
        ]
    )
    monkeypatch.setattr(cli_main_module, "resolve_model", lambda *args, **kwargs: fm.model)
    code = main(["run", "How many legs?", "--output-schema", str(schema)])
    out, err = capsys.readouterr()
    assert code == 0, err
    assert out == '{"legs": 8}\n'


def test_output_schema_with_json_keeps_the_event_log_on_stdout(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """`--json` is the event log `yiem trace` reads: with `--output-schema` the events went
    to stderr, among the other lines there, and no clean log could be kept; the value is
    `agent_end`'s `output`."""
    schema = tmp_path / "legs.json"
    schema.write_text(json.dumps({"type": "object", "properties": {"legs": {"type": "integer"}},
                                  "required": ["legs"]}))  # fmt: skip
    fm = FauxModel([faux_message(faux_tool_call("final_result", {"legs": 8}))])
    monkeypatch.setattr(cli_main_module, "resolve_model", lambda *args, **kwargs: fm.model)
    code = main(["run", "How many legs?", "--output-schema", str(schema), "--json"])
    out, err = capsys.readouterr()
    assert code == 0, err
    events = [json.loads(line) for line in out.splitlines()]
    assert events[0]["type"] == "agent_start"
    assert events[-1]["type"] == "agent_end" and events[-1]["output"] == {"legs": 8}
    log = tmp_path / "run.jsonl"
    log.write_text(out)
    page = tmp_path / "run.html"
    assert main(["trace", str(log), "--html", str(page)]) == 0, capsys.readouterr().err
    assert "final_result" in page.read_text()


@pytest.mark.parametrize(
    ("content", "says"),
    [(None, "No such file"), ("{not json", "not JSON"), ('{"type": 7}', "not a valid JSON Schema")],
)
def test_bad_output_schema_file_is_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], content: str | None, says: str
) -> None:
    path = tmp_path / "schema.json"
    if content is not None:
        path.write_text(content)
    code = main(["run", "hi", "--output-schema", str(path)])
    _, err = capsys.readouterr()
    lines = err.strip().splitlines()
    assert code == 1 and len(lines) == 1 and says in lines[0], err
    assert lines[0].startswith("yiem: error: --output-schema ")


def test_an_output_schema_whose_ref_points_nowhere_is_one_line_before_the_model(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A `$ref` to a definition the schema lacks passes the meta-schema. The model was
    called (and paid), then checking its answer raised: "agent loop failed" with a
    traceback on stderr and "the run failed: _WrappedReferencingError: ...". Now it is one
    line naming the `$ref`, before any model call."""
    schema = tmp_path / "legs.json"
    schema.write_text(json.dumps({"type": "object", "properties": {"legs": {"$ref": "#/$defs/n"}},
                                  "$defs": {"count": {"type": "integer"}}}))  # fmt: skip
    fm = FauxModel(['{"legs": 8}'] * 3)
    monkeypatch.setattr(cli_main_module, "resolve_model", lambda *args, **kwargs: fm.model)
    code = main(["run", "How many legs?", "--output-schema", str(schema)])
    out, err = capsys.readouterr()
    assert code == 1 and out == ""
    assert err == (
        f"yiem: error: --output-schema {schema}: output_type is not a valid JSON Schema: "
        "$ref '#/$defs/n' points to nothing in it\n"
    )
    assert fm.call_count == 0


def test_output_never_valid_is_one_error_line_exit_1(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    schema = tmp_path / "n.json"
    schema.write_text('{"type": "integer"}')
    bad: Any = faux_message(faux_tool_call("final_result", {"result": "x"}))
    fm = FauxModel([bad, bad, bad])
    monkeypatch.setattr(cli_main_module, "resolve_model", lambda *args, **kwargs: fm.model)
    code = main(["run", "n?", "--output-schema", str(schema)])
    out, err = capsys.readouterr()
    assert code == 1 and out == ""
    line = err.strip().splitlines()[-1]
    assert line.startswith("yiem: error: the run failed: The model gave no valid JSON Schema")


RUN_ON_FAUX = """
import sys
import yiemagent.cli.main as cli
from yiemagent.ai.providers.faux import FauxModel, faux_message, faux_text, faux_tool_call
from yiemagent.types import Usage

held = faux_message(faux_tool_call("delete_file", {"path": sys.argv[1]}, id="d1"))
held.usage = Usage(input=100, output=10, total_tokens=110)
fm = FauxModel([held, faux_text("Done.")])
cli.resolve_model = lambda *args, **kwargs: fm.model
sys.exit(cli.main(sys.argv[2:]))
"""


def test_ctrl_c_at_the_question_stops_and_keeps_the_usage_line(tmp_path: Path) -> None:
    """Ctrl-C at `Run delete_file(...)? [y/N]` in a real terminal: the question was asked
    on a worker thread, so `input()` never saw the Ctrl-C and the command waited for an
    Enter; a second Ctrl-C exited without the usage line of the run that held the call.
    Now it stops at once as any other abort: the call does not run, the usage is shown,
    exit 130."""
    tools = tmp_path / "tools"
    tools.mkdir()
    (tools / "delete_file.py").write_text(TOOL_FILE)
    victim = tmp_path / "old.log"
    victim.write_text("x")
    script = tmp_path / "run_on_faux.py"
    script.write_text(RUN_ON_FAUX)
    command = [sys.executable, str(script), str(victim), "run", "delete old.log",
               "--tools", str(tools)]  # fmt: skip
    pane = Pane(tmp_path, command=command, faux=False, width=200)
    try:
        pane.wait("? [y/N]")
        pane.keys("C-c")
        assert pane.exit_code(timeout=20) == 130  # no second Ctrl-C, no Enter
        screen = pane.screen()
    finally:
        pane.close()
    lines = [line for line in screen.splitlines() if line.strip()]
    assert lines[-1] == "__EXIT=130__" and lines[-2] == "yiem: interrupted", screen
    assert lines[-3].startswith("tokens: 100 in, 10 out · "), screen
    assert "✗ delete_file error: " in screen, screen
    assert victim.exists()
    assert "Traceback" not in screen


@pytest.mark.parametrize("agent_file", [False, True], ids=["tools", "agent-file"])
def test_ctrl_c_at_the_question_ends_the_run_as_an_abort_with_its_usage(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    agent_file: bool,
) -> None:
    """Ctrl-C at the question (`input()` raises KeyboardInterrupt), with `--tools` and with
    `--agent FILE`: the run ends as any aborted run, with the usage line of the run that
    held the call (it was dropped: the interrupt left the command at once)."""
    usage = Usage(input=100, output=10, total_tokens=110)
    victim, fm, where = ctrl_c_at_the_question(tmp_path, monkeypatch, agent_file, usage)
    code = main(["run", "delete old.log", *where])
    err = capsys.readouterr().err
    lines = err.strip().splitlines()
    assert code == 130, err
    assert lines[-1] == "yiem: interrupted", err
    assert lines[-2].startswith("tokens: 100 in, 10 out · "), err
    assert victim.exists()
    assert len(fm.contexts) == 1  # the model was not called again


@pytest.mark.parametrize("answer", ["y", "n"])
def test_a_held_call_s_arrow_line_is_shown_once(
    setup: tuple[Path, Path, FauxModel],
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    answer: str,
) -> None:
    """The run that follows the decision starts the held call again (its events say so),
    and the terminal showed its `→ delete_file {...}` line a second time under the
    question, as if the model had called it twice."""
    tools = setup[0]
    monkeypatch.setattr(cli_approvals_module.sys, "stdin", FakeTty())
    monkeypatch.setattr("builtins.input", lambda question: answer)
    assert main(["run", "delete old.log", "--tools", str(tools)]) == 0
    err = capsys.readouterr().err
    assert err.count("→ delete_file ") == 1, err
    ended = "← delete_file: deleted " if answer == "y" else "✗ delete_file error: Tool call rej"
    assert ended in err.split("→ delete_file ")[1], err


def test_a_sub_agent_s_held_call_s_arrow_line_is_shown_once(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """`yiem run --agent` where a sub-agent's call is held: the parent's call of the
    sub-agent and the sub-agent's call each showed their `→` line again after `--yes`."""
    tools = tmp_path / "tools"
    tools.mkdir()
    (tools / "delete_file.py").write_text(TOOL_FILE)
    victim = tmp_path / "old.log"
    victim.write_text("x")
    (tmp_path / "team.toml").write_text(
        '[agents.lead]\nas_tools = ["cleaner"]\n\n'
        '[agents.cleaner]\ndescription = "Deletes files."\ntools = ["tools"]\n'
    )
    fm = FauxModel(
        [
            faux_message(faux_tool_call("cleaner", {"input": "delete old.log"}, id="c1")),
            faux_message(faux_tool_call("delete_file", {"path": str(victim)}, id="d1")),
            "Deleted.",
            "Done.",
        ]
    )
    monkeypatch.setattr(cli_main_module, "resolve_model", lambda *args, **kwargs: fm.model)
    code = main(["run", "delete old.log", "--agent", str(tmp_path / "team.toml"), "--yes"])
    out, err = capsys.readouterr()
    assert code == 0, err
    assert out.strip() == "Done."
    assert not victim.exists()
    assert err.count("→ cleaner ") == 1 and err.count("cleaner → delete_file ") == 1, err
