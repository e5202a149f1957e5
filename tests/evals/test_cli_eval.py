"""`yiem eval` (DESIGN §19): the table, the JSON and HTML reports, the exit status on a
failed case and on a regression against a baseline, and one line for a bad dataset."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests._signals import stop_when_ready
from tests._yiem import yiem_in
from yiemagent.cli.main import main
from yiemagent.errors import install_hint

ROOT = Path(__file__).resolve().parents[2]
AGENT = "tests.evals._agents:make_agent"

DATASET = """\
cases:
  - name: multiply
    input: What is 17 * 23?
    metadata: {script: calc, expression: "17 * 23"}
    checks:
      - contains: "391"
      - tool_called: {name: calculator, args: {expression: "17 * 23"}}
      - max_turns: 2
  - name: capital
    input: Capital of France?
    metadata: {script: say, text: Paris.}
    checks: [{contains: paris}, no_tool_called]
"""


def dataset(tmp_path: Path, text: str = DATASET) -> Path:
    path = tmp_path / "d.yaml"
    path.write_text(text, encoding="utf-8")
    return path


def test_a_passing_dataset_prints_the_table_and_writes_both_reports(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out, page = tmp_path / "r.json", tmp_path / "r.html"
    code = main(["eval", str(dataset(tmp_path)), "--agent", AGENT, "--json", str(out),
                 "--html", str(page)])  # fmt: skip
    shown = capsys.readouterr()
    assert code == 0, shown.err
    table = shown.out
    assert "multiply" in table and "capital" in table and table.count("PASS") == 2
    assert "2/2 cases passed, 0 failed; 45 tokens, $0.0030" in table
    report = json.loads(out.read_text())
    assert (report["passed"], report["failed"]) == (2, 0)
    assert [c["name"] for c in report["cases"]] == ["multiply", "capital"]
    html = page.read_text()
    assert 'data-case="multiply"' in html and "r.runs/001-multiply-run1.html" in html
    assert (tmp_path / "r.runs" / "001-multiply-run1.html").is_file()


def test_off_a_terminal_the_progress_is_a_line_now_and_then(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`yiem eval ... > out.txt` (or in CI) said nothing on stderr until every case had run,
    minutes on the embedded model; `yiem batch` writes a line now and then. The lines say
    "eval:", the command the user ran, not "batch:"."""
    code = main(["eval", str(dataset(tmp_path)), "--agent", AGENT])
    shown = capsys.readouterr()
    assert code == 0, shown.err
    lines = shown.err.splitlines()
    assert lines[0] == "eval: 2 to run (0 done before)"
    # "(2 ok, 0 failed)" read as the verdict, which a failed check then contradicted
    assert lines[-1].startswith("eval: 2/2 done (2 answered, 0 errors)")
    assert "eval:" not in shown.out  # the table's stdout stays the table
    assert "batch:" not in shown.err


def test_a_failed_case_exits_1_and_says_why(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    changed = DATASET.replace('contains: "391"', 'contains: "392"')
    code = main(["eval", str(dataset(tmp_path, changed)), "--agent", AGENT])
    shown = capsys.readouterr()
    assert code == 1
    assert "FAIL" in shown.out and "answer lacks '392'" in shown.out
    assert shown.err.splitlines()[-1] == "yiem: error: 1 of 2 cases failed"  # after the progress


def test_repeat_shows_pass_at_k_and_a_baseline_lists_the_regression(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    old = tmp_path / "old.json"
    assert main(["eval", str(dataset(tmp_path)), "--agent", AGENT, "--json", str(old)]) == 0
    capsys.readouterr()
    changed = DATASET.replace('contains: "391"', 'contains: "392"')
    code = main(["eval", str(dataset(tmp_path, changed)), "--agent", AGENT, "--repeat", "3",
                 "--baseline", str(old)])  # fmt: skip
    shown = capsys.readouterr()
    assert code == 1
    assert "pass@3" in shown.out and "pass^3" in shown.out and "regressed" in shown.out
    assert f"against {old}: regressions: multiply; fixes: none" in shown.out
    assert "mean pass@1 0.50, pass@3 0.50, pass^3 0.50" in shown.out
    assert (
        shown.err.splitlines()[-1] == f"yiem: error: 1 of 2 cases failed, 1 regressed against {old}"
    )


def test_a_baseline_names_the_cases_it_has_that_this_run_has_not(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A case dropped from the dataset (or renamed) since the baseline is no regression,
    and the summary said only "regressions: none; fixes: none": a case that failed before
    could leave the dataset unseen. The cases on one side only are named."""
    old = tmp_path / "old.json"
    assert main(["eval", str(dataset(tmp_path)), "--agent", AGENT, "--json", str(old)]) == 0
    capsys.readouterr()
    renamed = DATASET.replace("name: capital", "name: capital_city")
    code = main(["eval", str(dataset(tmp_path, renamed)), "--agent", AGENT, "--baseline",
                 str(old)])  # fmt: skip
    shown = capsys.readouterr()
    assert code == 0, shown.err
    assert (
        f"against {old}: regressions: none; fixes: none; new: capital_city; not in this run: "
        "capital"
    ) in " ".join(shown.out.split())


@pytest.mark.parametrize(
    ("text", "line"),
    [
        ("cases:\n - name: a\n   input: x\n  - oops\n", "d.yaml: not valid YAML at line 4"),
        (
            "cases:\n  - name: a\n    input: x\n    checks: [contain: x]\n",
            "d.yaml: case 'a': checks[0]: unknown check 'contain'",
        ),
        ("cases:\n  - name: a\n", "d.yaml: case 'a': input: missing"),
    ],
)
def test_a_bad_dataset_is_one_line_and_a_non_zero_exit(
    tmp_path: Path, text: str, line: str
) -> None:
    done = yiem_in(tmp_path, "eval", str(dataset(tmp_path, text)), timeout=120)
    assert done.returncode != 0
    assert done.stdout == ""
    assert len(done.stderr.splitlines()) == 1, done.stderr
    assert done.stderr.startswith(f"yiem: error: {tmp_path}/") and line in done.stderr


@pytest.mark.parametrize(
    ("flag", "target", "why"),
    [
        ("--json", "no/r.json", "folder {tmp}/no does not exist"),
        ("--html", ".", "it is a folder"),
        ("--results", "no/runs.jsonl", "folder {tmp}/no does not exist"),
    ],
)
def test_an_unwritable_output_path_is_one_line_before_any_case_runs(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], flag: str, target: str, why: str
) -> None:
    path = tmp_path / target
    code = main(["eval", str(dataset(tmp_path)), "--agent", AGENT, flag, str(path)])
    shown = capsys.readouterr()
    assert code == 1
    assert shown.out == ""  # no table: no case ran
    reason = why.format(tmp=tmp_path)
    assert shown.err.strip() == f"yiem: error: cannot write {path} ({flag}): {reason}"


def test_checks_a_factory_made_are_named_for_their_call_and_a_bare_failure_says_so(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`checks.py:longer_than: 3` and `...: 100` were both reported as "check" (the inner
    function's name), so the table and the JSON could not tell which one failed; and a
    check that returns False over repeats said "failed 2/2 runs: " with nothing after."""
    (tmp_path / "checks.py").write_text(
        "def longer_than(n):\n"
        "    def check(run):\n"
        "        return len(run.text) > n\n"
        "    return check\n",
        encoding="utf-8",
    )
    text = """\
cases:
  - name: capital
    input: Capital of France?
    metadata: {script: say, text: Paris.}
    checks:
      - checks.py:longer_than: 3
      - checks.py:longer_than: {n: 100}
"""
    out = tmp_path / "r.json"
    code = main(["eval", str(dataset(tmp_path, text)), "--agent", AGENT, "--repeat", "2",
                 "--json", str(out)])  # fmt: skip
    shown = capsys.readouterr()
    assert code == 1, shown.err
    checks = json.loads(out.read_text())["cases"][0]["checks"]
    assert [(c["name"], c["passed"], c["reason"]) for c in checks] == [
        ("longer_than(3)", True, ""),
        ("longer_than(n=100)", False, "failed 2/2 runs"),
    ]


def test_a_results_file_with_a_torn_last_line_warns_as_the_command_does(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The repair of `--results` (an eval killed mid-write) was said as a bare library log
    line, not as one of the command's `yiem: warning:` lines."""
    runs = tmp_path / "runs.jsonl"
    assert main(["eval", str(dataset(tmp_path)), "--agent", AGENT, "--results", str(runs)]) == 0
    capsys.readouterr()
    runs.write_bytes(runs.read_bytes()[:-20])
    assert main(["eval", str(dataset(tmp_path)), "--agent", AGENT, "--results", str(runs)]) == 0
    warnings = [x for x in capsys.readouterr().err.splitlines() if "torn" in x]
    assert len(warnings) == 1, warnings
    assert warnings[0].startswith(f"yiem: warning: {runs}: dropping a torn last line ("), warnings


@pytest.mark.parametrize("keep", [True, False], ids=["results", "no-results"])
def test_ctrl_c_says_how_to_go_on(tmp_path: Path, keep: bool) -> None:
    """An interrupted eval said only "yiem: interrupted", where yiem batch says to run the
    same command again; with --results that is how an eval resumes too."""
    import signal

    cases = "".join(
        f"  - name: c{i}\n    input: hi\n    metadata: {{kind: ok, delay_s: 0.5}}\n"
        for i in range(12)
    )
    data = dataset(tmp_path, "cases:\n" + cases)
    runs = tmp_path / "runs.jsonl"

    def running(process: subprocess.Popen[str]) -> bool:
        assert process.stderr is not None
        if "to run" not in process.stderr.readline():  # "eval: 12 to run ..."
            return False
        time.sleep(1.5)  # the runs have started
        return True

    ended = stop_when_ready(
        [sys.executable, "-m", "yiemagent.cli.main", "eval", str(data), "--agent",
         "tests.batch._agents:make_faux_agent", "--concurrency", "1",
         *(["--results", str(runs)] if keep else [])],
        signal.SIGINT,
        running,
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )  # fmt: skip
    stderr = ended.err
    assert ended.code == 130, stderr
    last = stderr.strip().splitlines()[-1]
    if keep:
        assert last == (
            f"yiem: interrupted; run the same command again to finish (the runs done are "
            f"kept in {runs})"
        )
    else:
        assert last == (
            "yiem: interrupted; with --results RUNS.jsonl the runs done are kept and the "
            "same command resumes"
        )
    assert "Traceback" not in stderr


@pytest.mark.parametrize(
    ("agent", "flags", "why"),
    [
        (AGENT, ["--tools", "."], f"--tools does not go with --agent {AGENT}: the function"),
        ("team.toml", ["--system", "Be brief."], "--system does not go with --agent: set it"),
    ],
)
def test_an_option_the_agent_sets_is_refused_not_ignored(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], agent: str, flags: list[str], why: str
) -> None:
    """`yiem eval --agent ... --tools DIR` ran every case without the tools, silently;
    `yiem run` and `yiem serve` refuse such an option, and so does eval now."""
    (tmp_path / "team.toml").write_text('[agents.a]\nsystem_prompt = "x"\n', encoding="utf-8")
    if agent.endswith(".toml"):
        agent = str(tmp_path / agent)
    code = main(["eval", str(dataset(tmp_path)), "--agent", agent, *flags])
    shown = capsys.readouterr()
    assert code == 1 and shown.out == ""  # no case ran
    (line,) = shown.err.strip().splitlines()
    assert line.startswith("yiem: error: ") and why in line, line


def test_an_agent_file_without_max_turns_gets_the_max_turns_option(tmp_path: Path) -> None:
    """As in `yiem run` and `yiem batch`: the eval's agent-file agents had no turn limit."""
    from yiemagent.batch import BatchTask
    from yiemagent.cli.eval_cmd import AgentFileFactory

    team = tmp_path / "team.toml"
    team.write_text('[agents.a]\nsystem_prompt = "x"\n', encoding="utf-8")
    agent = AgentFileFactory(str(team), max_turns=3)(BatchTask("1", "hi"))
    assert agent.max_turns == 3
    team.write_text("[agents.a]\nmax_turns = 5\n", encoding="utf-8")
    assert AgentFileFactory(str(team), max_turns=3)(BatchTask("1", "hi")).max_turns == 5


@pytest.mark.parametrize("flag", ["--json", "--html", "--results"])
def test_an_output_that_is_the_dataset_is_refused_and_the_dataset_kept(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], flag: str
) -> None:
    """`--json d.yaml` (a slip for `d.json`) replaced the dataset with the report."""
    data = dataset(tmp_path)
    code = main(["eval", str(data), "--agent", AGENT, flag, str(data)])
    shown = capsys.readouterr()
    assert code == 1
    assert shown.out == ""  # no case ran
    assert shown.err.strip() == (
        f"yiem: error: cannot write {data} ({flag}): it is the dataset, which it would replace"
    )
    assert data.read_text(encoding="utf-8") == DATASET


def test_json_and_html_on_one_file_is_refused_before_any_case_runs(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The page written last replaced the JSON report."""
    out = tmp_path / "r.out"
    code = main(["eval", str(dataset(tmp_path)), "--agent", AGENT, "--json", str(out),
                 "--html", str(out)])  # fmt: skip
    shown = capsys.readouterr()
    assert code == 1 and shown.out == ""
    assert shown.err.strip() == (
        f"yiem: error: cannot write {out} (--html): it is the --json file, which it would replace"
    )
    assert not out.exists()


def test_a_judge_whose_model_has_no_key_is_refused_before_any_case_runs(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # Every case ran, then each verdict was "the judge failed: no API key".
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    judged = DATASET + "      - judge: {rubric: Names Paris., model: openai/gpt-4o-mini}\n"
    judged = judged.replace("checks: [{contains: paris}, no_tool_called]", "checks:")
    runs = tmp_path / "runs.jsonl"
    code = main(["eval", str(dataset(tmp_path, judged)), "--agent", AGENT, "--results", str(runs)])
    shown = capsys.readouterr()
    assert code == 1 and shown.out == ""
    assert shown.err.strip() == (
        "yiem: error: case 'capital': the judge's model openai/gpt-4o-mini needs an API key:"
        " set OPENAI_API_KEY in the environment (nothing was run)"
    )
    assert not runs.exists()


def test_a_judge_whose_model_has_no_sdk_says_so_before_the_key(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Without the openai extra the refusal asked for a key; set, the judge still failed."""
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.setitem(sys.modules, "openai", None)  # as if the extra were not installed
    judged = DATASET + "      - judge: {rubric: Names Paris., model: openai/gpt-4o-mini}\n"
    judged = judged.replace("checks: [{contains: paris}, no_tool_called]", "checks:")
    code = main(["eval", str(dataset(tmp_path, judged)), "--agent", AGENT])
    shown = capsys.readouterr()
    assert code == 1 and shown.out == ""
    assert shown.err.strip() == (
        "yiem: error: case 'capital': the judge's model openai/gpt-4o-mini needs the openai "
        f"SDK, which is not installed: {install_hint('openai')} (nothing was run)"
    )


def test_a_results_file_that_is_not_one_names_results(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    runs = tmp_path / "runs.jsonl"
    runs.write_text("garbage\n")
    code = main(["eval", str(dataset(tmp_path)), "--agent", AGENT, "--results", str(runs)])
    shown = capsys.readouterr()
    assert code == 1 and shown.out == ""
    assert shown.err.strip() == (
        f"yiem: error: --results: {runs} line 1 is not a result line (Expecting value: line 1 "
        "column 1 (char 0)); is it the results file of a batch?"
    )


def test_a_bad_baseline_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    old = tmp_path / "old.json"
    old.write_text('{"cases": 3}')
    code = main(["eval", str(dataset(tmp_path)), "--agent", AGENT, "--baseline", str(old)])
    assert code == 1
    assert (
        capsys.readouterr().err.strip()
        == f"yiem: error: {old}: not an eval report (no 'cases' list)"
    )


def test_results_keeps_the_runs_and_the_same_command_checks_them_again(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    runs = tmp_path / "runs.jsonl"
    assert main(["eval", str(dataset(tmp_path)), "--agent", AGENT, "--results", str(runs)]) == 0
    before = runs.read_text()
    assert len(before.splitlines()) == 2
    capsys.readouterr()
    changed = DATASET.replace('contains: "391"', 'contains: "392"')
    code = main(["eval", str(dataset(tmp_path, changed)), "--agent", AGENT, "--results",
                 str(runs)])  # fmt: skip
    assert code == 1 and "answer lacks '392'" in capsys.readouterr().out
    assert runs.read_text() == before  # no run again: the same runs, checked again


@pytest.mark.parametrize(
    ("edit", "rerun"),
    [
        (("input: Capital of France?", "input: Capital of Italy?"), True),
        (("text: Paris.}", "text: Rome.}"), True),
        (("contains: paris", "contains: paris."), False),  # a check: no new model call
    ],
    ids=["input", "metadata", "check"],
)
def test_a_case_edited_since_its_run_was_kept_runs_again(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], edit: tuple[str, str], rerun: bool
) -> None:
    """`--results` kept each run under its case's name only. Asking another question in
    an edited case (its input, or the metadata its agent is built from) and running the
    same command reused the old question's answer: the eval checked "Paris." against
    "Capital of Italy?". Now a kept run that answered another question is made again (its
    line replaced, each case still once in the file); a run whose case changed only in its
    checks is checked again, with no new model call."""
    runs = tmp_path / "runs.jsonl"
    assert main(["eval", str(dataset(tmp_path)), "--agent", AGENT, "--results", str(runs)]) == 0
    before = {json.loads(line)["id"]: line for line in runs.read_text().splitlines()}
    capsys.readouterr()
    changed = DATASET.replace(*edit)
    code = main(["eval", str(dataset(tmp_path, changed)), "--agent", AGENT, "--results",
                 str(runs)])  # fmt: skip
    shown = capsys.readouterr()
    after = {json.loads(line)["id"]: line for line in runs.read_text().splitlines()}
    assert len(runs.read_text().splitlines()) == 2 and set(after) == {"multiply", "capital"}
    assert after["multiply"] == before["multiply"]
    if rerun:
        assert "eval: 1 to run (1 done before)" in shown.err
        assert after["capital"] != before["capital"]
        asked = json.loads(after["capital"])["messages"][0]["content"][0]["text"]
        assert asked == ("Capital of Italy?" if "Italy" in changed else "Capital of France?")
        if "Rome" in changed:  # the new answer is checked, not the kept one
            assert code == 1 and "answer lacks 'paris' ('Rome.')" in shown.out
    else:
        assert "eval: 0 to run (2 done before)" in shown.err
        assert after == before


def test_html_whose_runs_folder_is_a_file_is_refused_before_any_case_runs(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`--html r.html` writes each run's timeline into `r.runs/`. With a file of that name
    there, every case ran (and was paid for), then the eval failed with "cannot write
    r.html: File exists", naming the wrong file, and the report was lost. Now it is one
    line naming `r.runs`, before any case runs."""
    (tmp_path / "r.runs").write_text("my notes")
    code = main(["eval", str(dataset(tmp_path)), "--agent", AGENT, "--html",
                 str(tmp_path / "r.html")])  # fmt: skip
    err = capsys.readouterr().err
    assert code == 1
    assert err == (
        f"yiem: error: cannot write {tmp_path / 'r.html'} (--html): {tmp_path / 'r.runs'}, "
        "the folder for each run's timeline, is a file\n"
    )
    assert (tmp_path / "r.runs").read_text() == "my notes"


def test_metadata_that_is_not_json_is_one_line_before_any_case_runs(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """YAML read `when: 2024-01-01` as a date (a plain one is text now; the explicit tag
    still makes one). The case ran (its model call made), then writing its result line
    failed: "yiem: error: Object of type date is not JSON serializable", naming neither
    the file, the case nor the field, and the same on every rerun. Now the dataset is
    refused in one line naming them, before any case runs."""
    runs = tmp_path / "runs.jsonl"
    when = "when: !!timestamp 2024-01-01"
    bad = DATASET.replace("text: Paris.}", f"text: Paris., {when}}}", 1)
    path = dataset(tmp_path, bad)
    code = main(["eval", str(path), "--agent", AGENT, "--results", str(runs)])
    err = capsys.readouterr().err
    assert code == 1
    assert err == (
        f"yiem: error: {path}: case 'capital': metadata: must be JSON data (Object of type "
        "date is not JSON serializable; quote a date or a time to make it text)\n"
    )
    assert not runs.exists() or runs.read_bytes() == b""


AGENT_FILE = """\
[agents.helper]
system_prompt = "Answer in one word."
"""


def test_an_agent_file_answers_through_a_real_openai_compatible_server(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from tests.ai.servers import ReplayServer, openai_chunks, sse_reply

    agents = tmp_path / "team.toml"
    agents.write_text(AGENT_FILE, encoding="utf-8")
    case = "  - name: capital\n    input: Capital of France?\n    checks: [{contains: paris}]\n"
    data = dataset(tmp_path, "cases:\n" + case)
    with ReplayServer() as server:
        server.replies.put(sse_reply(openai_chunks({"content": "Paris"})))
        model = ["--model", "openai-compatible/m", "--base-url", server.url]
        code = main(["eval", str(data), "--agent", f"{agents}:helper", *model])
        asked = [r.body for r in server.requests if r.method == "POST"]
    shown = capsys.readouterr()
    assert code == 0, shown.err
    assert "1/1 cases passed" in shown.out
    assert asked[-1]["messages"][0] == {"role": "system", "content": "Answer in one word."}


def test_a_bad_agent_file_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    agents = tmp_path / "team.toml"
    agents.write_text("[agents.helper]\nsystem_prmpt = 'x'\n", encoding="utf-8")
    code = main(["eval", str(dataset(tmp_path)), "--agent", str(agents)])
    err = capsys.readouterr().err.strip()
    assert code == 1 and len(err.splitlines()) == 1
    assert err.startswith(f"yiem: error: {agents}: [agents.helper]") and "system_prmpt" in err


def test_a_class_named_as_the_factory_is_one_line_before_any_case_runs(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A pydantic model is callable, so it was taken for a factory and every case then
    failed with pydantic's validation error; a class is refused up front."""
    (tmp_path / "settings_not_factory.py").write_text(
        "from pydantic import BaseModel\n\n\nclass Settings(BaseModel):\n    model: str\n",
        encoding="utf-8",
    )
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    out = tmp_path / "r.json"
    code = main(["eval", str(dataset(tmp_path)), "--agent", "settings_not_factory:Settings",
                 "--json", str(out)])  # fmt: skip
    err = capsys.readouterr().err.strip()
    assert code != 0 and len(err.splitlines()) == 1, err
    assert err == (
        "yiem: error: --agent settings_not_factory:Settings: Settings is a class; the factory "
        "must be a function (or async function) returning an Agent"
    )
    assert not out.exists()


def test_json_dash_writes_the_report_to_stdout_and_no_file_named_dash(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    code = main(["eval", str(dataset(tmp_path)), "--agent", AGENT, "--json", "-"])
    shown = capsys.readouterr()
    assert code == 0, shown.err
    assert json.loads(shown.out)["passed"] == 2  # stdout is the report alone
    assert "2/2 cases passed" in shown.err
    assert not (tmp_path / "-").exists()


@pytest.mark.parametrize("flag", ["--html", "--results"])
def test_a_dash_for_a_file_only_option_is_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, flag: str
) -> None:
    monkeypatch.chdir(tmp_path)
    code = main(["eval", str(dataset(tmp_path)), "--agent", AGENT, flag, "-"])
    err = capsys.readouterr().err
    assert code != 0
    assert err.strip().splitlines() == [err.strip()] and err.startswith(f"yiem: error: {flag} -: ")
    assert not (tmp_path / "-").exists()


def test_the_summary_line_says_what_the_judge_spent(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The grading model's tokens and cost were in no line of `yiem eval`: an eval judged
    by a paid model cost more than its summary said."""
    (tmp_path / "grade.py").write_text(
        "from yiemagent.ai.providers.faux import FauxModel, faux_message, faux_tool_call\n"
        "from yiemagent.evals import judge\n"
        "from yiemagent.types import Cost, Usage\n"
        "spent = Usage(input=40, output=8, total_tokens=48, cost=Cost(total=0.0005))\n"
        "verdict = {'reason': 'It names Paris.', 'passed': True}\n"
        "grader = FauxModel([faux_message(faux_tool_call('final_result', verdict), "
        "usage=spent)], model_id='judge-cli')\n"
        "def graded(rubric):\n"
        "    return judge(rubric, model=grader.model)\n"
    )
    text = """\
cases:
  - name: capital
    input: Capital of France?
    metadata: {script: say, text: Paris.}
    checks: [{"grade.py:graded": The answer names Paris.}]
"""
    code = main(["eval", str(dataset(tmp_path, text)), "--agent", AGENT])
    shown = capsys.readouterr()
    assert code == 0, shown.out + shown.err
    assert "1/1 cases passed, 0 failed; 15 tokens, $0.0010" in shown.out
    assert "; judge: 48 tokens, $0.0005" in shown.out


def test_past_a_long_table_only_the_failing_cases_are_shown(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A dataset of 10,000 cases spent half a minute laying out the table of every case: past
    `LONG_TABLE` cases the table holds the failing ones, and a line says how many are left
    out and which report has them all."""
    from yiemagent.cli.eval_cmd import LONG_TABLE

    count = LONG_TABLE + 5
    lines = [
        json.dumps(
            {
                "name": f"case-{n:03}",
                "input": "Capital of France?",
                "metadata": {"script": "say", "text": "Paris."},
                "checks": [{"contains": "rome" if n in (7, 70) else "paris"}],
            }
        )
        for n in range(count)
    ]
    data = tmp_path / "d.jsonl"
    data.write_text("\n".join(lines) + "\n", encoding="utf-8")
    out = tmp_path / "r.json"
    code = main(["eval", str(data), "--agent", AGENT, "--json", str(out)])
    table = capsys.readouterr().out
    assert code == 1
    assert "case-007" in table and "case-070" in table and table.count("FAIL") == 2
    assert "PASS" not in table and "case-008" not in table
    assert f"{count - 2} of {count} cases not shown ({count - 2} passing); every case is in " in (
        table.replace("\n", " ")
    )
    assert f"{count - 2}/{count} cases passed, 2 failed" in table
    assert len(json.loads(out.read_text())["cases"]) == count
    shorter = tmp_path / "short.jsonl"
    shorter.write_text("\n".join(lines[:LONG_TABLE]) + "\n", encoding="utf-8")
    assert main(["eval", str(shorter), "--agent", AGENT]) == 1
    table = capsys.readouterr().out
    assert table.count("PASS") == LONG_TABLE - 2 and "not shown" not in table
