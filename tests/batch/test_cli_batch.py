"""`yiem batch` (DESIGN §16): runs a task file into a results file, `--summary` prints
counts, failures by reason, tokens and cost; bad input is one line and a non-zero exit;
Ctrl-C records the running tasks as interrupted and exits 130, and the same command then
finishes the batch."""

from __future__ import annotations

import importlib.util
import json
import os
import re
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from tests._signals import stop_when_ready
from tests.batch._kit import assert_each_id_once, mixed_tasks, result_lines, write_tasks
from tests.cli.chat._tmux import TOOLS as CHAT_TOOLS
from yiemagent.cli.batch import expand_ray_flag
from yiemagent.cli.main import main

ROOT = Path(__file__).resolve().parents[2]
AGENT = "tests.batch._agents:make_faux_agent"


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_batch_then_summary(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    tasks = write_tasks(tmp_path / "tasks.jsonl", mixed_tasks(30, "cli"))
    out = tmp_path / "results.jsonl"
    code, stdout, err = _run(
        capsys,
        "batch",
        str(tasks),
        "--out",
        str(out),
        "--agent",
        AGENT,
        "--concurrency",
        "8",
        "--timeout",
        "0.5",
        "--retries",
        "1",
    )
    assert code == 1  # some tasks fail by design
    assert "30 tasks: 30 done" in stdout
    assert err.strip().splitlines()[-1].startswith("yiem: error: ")
    assert_each_id_once(out, [f"cli-{i}" for i in range(30)])

    code, stdout, err = _run(capsys, "batch", "--summary", str(out))
    assert code == 0, err
    assert stdout.splitlines()[0].startswith("tasks: 30 (")
    assert "failures by reason:" in stdout and "model_error: 3" in stdout
    assert "timeout: 3" in stdout
    assert "cost: $" in stdout and "tokens: " in stdout

    code, stdout, _ = _run(capsys, "batch", str(tasks), "--out", str(out), "--agent", AGENT)
    assert code == 1 and "(30 before this run, 0 ok, 0 failed" in stdout


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["batch"], "give the tasks file and --results"),
        (["batch", "missing.jsonl", "--out", "r.jsonl"], "tasks file missing.jsonl does not exist"),
        (["batch", "--summary", "missing.jsonl"], "results file missing.jsonl does not exist"),
        (
            ["batch", "t.jsonl", "--out", "r.jsonl", "--agent", "nope"],
            "--agent nope: no agent file nope (nor a MODULE:FUNCTION)",
        ),
        (["batch", "t.jsonl", "--out", "r.jsonl", "--agent", "no_such_mod:f"], "cannot import"),
        (
            ["batch", "t.jsonl", "--out", "r.jsonl", "--tools", "nodir"],
            "--tools nodir: not a folder",
        ),
        (["batch", "t.jsonl", "--out", "r.jsonl", "--model", "nope/x"], "nope"),
        (
            ["batch", "t.jsonl", "--out", "r.jsonl", "--base-url", "http://127.0.0.1:1/v1"],
            "--base-url is for a server; local/qwen2.5-coder-0.5b runs in-process. Use --model "
            "openai-compatible/<model id> with --base-url",
        ),
        (["batch", "t.jsonl", "--out", "r.jsonl", "--concurrency", "0"], "concurrency"),
        (
            ["batch", "t.jsonl", "--out", "no/r.jsonl"],
            "cannot write no/r.jsonl (--out): folder no does not exist",
        ),
        (["batch", "t.jsonl", "--out", "."], "cannot write . (--out): it is a folder"),
        (
            ["batch", "t.jsonl", "--out", "r.jsonl", "--agent", AGENT, "--tools", "."],
            f"--tools does not go with --agent {AGENT}: the function builds the agent",
        ),
        (
            ["batch", "t.jsonl", "--out", "r.jsonl", "--agent", "t.toml", "--system", "Be brief."],
            "--system does not go with --agent: set it in the agent file",
        ),
    ],
)
def test_bad_input_is_one_line_and_a_non_zero_exit(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    argv: list[str],
    message: str,
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "t.jsonl").write_text('{"id": 1, "prompt": "p"}\n')
    code, _, err = _run(capsys, *argv)
    assert code != 0
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith("yiem: error: ") and message in lines[0], lines[0]
    assert "Traceback" not in err
    assert not (tmp_path / "r.jsonl").exists() or (tmp_path / "r.jsonl").read_bytes() == b""


@pytest.mark.parametrize(
    ("code", "says"),
    [
        ("1 / 0\n", "ZeroDivisionError: division by zero"),
        ("def f(:\n", "SyntaxError: invalid syntax ({name}.py, line 1)"),
        ("x = 1\n", "{name} has no function 'make'"),
    ],
)
def test_an_agent_module_that_fails_is_one_line_naming_the_option(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    code: str,
    says: str,
) -> None:
    """A `--agent MODULE:FUNCTION` whose module's code raised said only the error's text
    ("yiem: error: division by zero"), not that it came from importing the `--agent`
    module."""
    monkeypatch.chdir(tmp_path)
    name = f"yiem_factory_{tmp_path.name}"  # a module name no other test imported
    (tmp_path / f"{name}.py").write_text(code)
    (tmp_path / "t.jsonl").write_text('{"id": 1, "prompt": "p"}\n')
    exit_code, _, err = _run(
        capsys, "batch", "t.jsonl", "--out", "r.jsonl", "--agent", f"{name}:make"
    )
    expected = says.format(name=name)
    if "has no function" not in expected:
        expected = f"cannot import {name}: {expected}"
    assert exit_code == 1
    assert err.strip() == f"yiem: error: --agent {name}:make: {expected}", err
    assert not (tmp_path / "r.jsonl").exists()


def test_summary_of_a_file_with_a_torn_last_line_warns_as_the_command_does(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`--summary` said the torn line it skipped as a bare library log line (Python's
    last-resort handler), not as one of the command's `yiem: warning:` lines."""
    tasks = write_tasks(tmp_path / "t.jsonl", mixed_tasks(2, "torn"))
    out = tmp_path / "r.jsonl"
    _run(capsys, "batch", str(tasks), "--out", str(out), "--agent", AGENT)
    out.write_bytes(out.read_bytes()[:-20])
    code, stdout, err = _run(capsys, "batch", "--summary", str(out))
    assert code == 0 and stdout.startswith("tasks: 1 (")
    assert err.strip().splitlines() == [
        f"yiem: warning: {out}: dropping a torn last line "
        f"({len(out.read_bytes().splitlines(keepends=True)[-1])} bytes)"
    ]


def test_ray_not_installed_is_one_line_and_no_results_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """`--ray` without the extra said "batch: 1 to run" first, then the error, and left an
    empty results file behind; the missing extra is now said before anything else."""
    monkeypatch.setitem(sys.modules, "ray", None)  # as if not installed: import fails
    tasks = write_tasks(tmp_path / "t.jsonl", mixed_tasks(1, "ray"))
    out = tmp_path / "r.jsonl"
    code, stdout, err = _run(capsys, "batch", str(tasks), "--out", str(out), "--agent", AGENT,
                             "--ray")  # fmt: skip
    assert code == 1 and stdout == ""
    (line,) = err.strip().splitlines()
    assert line.startswith("yiem: error: the Ray backend needs the 'ray' extra: "), line
    assert not out.exists()


@pytest.mark.parametrize("workers", ["auto", "tasks", "pool"])
def test_an_agent_factory_returning_no_agent_is_one_line_before_any_task(
    workers: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """It was an error line for every task (two a task, with its retry), each recorded as
    failed: a setup error reported as the tasks' own failures; and still so with a
    chosen `--workers` after `auto` was checked. Pool workers check it as they start."""
    tasks = write_tasks(tmp_path / "t.jsonl", mixed_tasks(3, "not"))
    out = tmp_path / "r.jsonl"
    factory = "tests.batch._agents:make_model_not_agent"
    argv = ["batch", str(tasks), "--out", str(out), "--agent", factory, "--workers", workers]
    code, stdout, err = _run(capsys, *argv)
    assert code == 1 and stdout == ""
    where = "in a batch worker process" if workers == "pool" else "for task 'not-0'"
    # the pool's workers start after the batch has said what it runs
    said = "batch: 3 to run (0 done before)\n" if workers == "pool" else ""
    assert err == said + (
        f"yiem: error: make_agent ({factory}) must return an Agent, not Model (it returned "
        f"that {where}); no task was run\n"
    )
    assert out.read_bytes() == b""


def test_a_ray_address_that_does_not_connect_is_the_only_output(tmp_path: Path) -> None:
    """`--ray bogus:addr` printed "batch: 1 to run" and Ray's own INFO line ("Connecting
    to existing Ray cluster at address: ...") before its one-line error."""
    if importlib.util.find_spec("ray") is None:  # not imported: this process's Ray tests
        pytest.skip("needs the ray extra")  # set its loopback variable before importing it
    tasks = write_tasks(tmp_path / "t.jsonl", mixed_tasks(1, "ray"))
    out = tmp_path / "r.jsonl"
    argv = ["batch", str(tasks), "--out", str(out), "--agent", AGENT, "--ray", "bogus:addr"]
    done = subprocess.run(
        [str(Path(sys.executable).with_name("yiem")), *argv],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        timeout=120,
    )
    assert done.returncode == 1 and done.stdout == ""
    assert done.stderr.startswith("yiem: error: cannot connect to the Ray cluster at bogus:addr: ")
    assert len(done.stderr.splitlines()) == 1, done.stderr
    assert not out.exists() or out.read_bytes() == b""


@pytest.mark.parametrize(
    "argv",
    [
        ["batch", "--summary", "g.jsonl"],
        ["batch", "t.jsonl", "--out", "g.jsonl", "--agent", AGENT],
    ],
)
def test_a_results_file_that_is_not_one_names_the_option_that_gave_it(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    argv: list[str],
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "t.jsonl").write_text('{"id": 1, "prompt": "p"}\n')
    (tmp_path / "g.jsonl").write_text("garbage\n")
    code, out, err = _run(capsys, *argv)
    flag = argv[argv.index("g.jsonl") - 1]
    assert code == 1 and out == ""
    assert err.strip() == (
        f"yiem: error: {flag}: g.jsonl line 1 is not a result line (Expecting value: line 1 "
        "column 1 (char 0)); is it the results file of a batch?"
    )
    assert (tmp_path / "g.jsonl").read_text() == "garbage\n"


def test_bare_ray_flag_gets_the_local_cluster_and_an_address_is_kept() -> None:
    assert expand_ray_flag(["batch", "t.jsonl", "--ray"]) == ["batch", "t.jsonl", "--ray", "local"]
    assert expand_ray_flag(["batch", "--ray", "t.jsonl", "--out", "r"]) == [
        "batch",
        "--ray",
        "local",
        "t.jsonl",
        "--out",
        "r",
    ]
    assert expand_ray_flag(["batch", "--ray", "auto"]) == ["batch", "--ray", "auto"]
    assert expand_ray_flag(["batch", "--ray", "10.0.0.5:6379", "t.jsonl"])[2] == "10.0.0.5:6379"
    assert expand_ray_flag(["batch", "--ray", "--out", "r"])[2] == "local"
    assert expand_ray_flag(["run", "--ray"]) == ["run", "--ray"]


def _command(tasks: Path, out: Path, *extra: str) -> list[str]:
    yiem = str(Path(sys.executable).parent / "yiem")  # the console script, as users run it
    return [yiem, "batch", str(tasks), "--out", str(out), "--agent", AGENT, "--concurrency", "4",
            *extra]  # fmt: skip


_ENV = {**os.environ, "PYTHONPATH": str(ROOT)}


@pytest.mark.parametrize("workers", [[], ["--workers", "pool"]], ids=["tasks", "pool"])
def test_ctrl_c_records_running_tasks_as_interrupted_and_the_same_command_finishes(
    tmp_path: Path, workers: list[str]
) -> None:
    tasks = [
        {"id": f"i{i}", "prompt": "p", "metadata": {"kind": "ok", "delay_s": 0.3}}
        for i in range(16)
    ]
    tasks_file = write_tasks(tmp_path / "tasks.jsonl", tasks)
    out = tmp_path / "results.jsonl"

    def two_results(_: object) -> bool:
        return out.exists() and out.read_bytes().count(b"\n") >= 2

    command = _command(tasks_file, out, *workers)
    ended = stop_when_ready(command, signal.SIGINT, two_results, env=_ENV, cwd=ROOT)
    stderr = ended.err
    assert ended.code == 130, stderr
    assert stderr.strip().splitlines()[-1] == (
        "yiem: interrupted; run the same command again to finish"
    )
    assert "Traceback" not in stderr
    lines = result_lines(out)
    statuses = [line["status"] for line in lines]
    assert "interrupted" in statuses, statuses
    assert len({line["id"] for line in lines}) == len(lines)
    done_before = {line["id"] for line in lines if line["status"] == "ok"}

    again = subprocess.run(command, cwd=ROOT, env=_ENV, capture_output=True, text=True, timeout=180)
    stdout, stderr = again.stdout, again.stderr
    assert again.returncode == 0, stderr
    assert f"({len(done_before)} before this run" in stdout
    final = assert_each_id_once(out, [t["id"] for t in tasks])
    assert all(line["status"] == "ok" for line in final)
    assert json.loads(out.read_bytes().splitlines()[0])["id"] in done_before


def test_batch_without_a_terminal_prints_plain_progress_lines(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    tasks = write_tasks(
        tmp_path / "tasks.jsonl", [{"id": f"p{i}", "prompt": "p"} for i in range(20)]
    )
    out = tmp_path / "results.jsonl"
    code, _stdout, err = _run(capsys, "batch", str(tasks), "--out", str(out), "--agent", AGENT)
    assert code == 0, err
    lines = [line for line in err.splitlines() if line.startswith("batch: ")]
    assert lines[0] == "batch: 20 to run (0 done before)"
    assert len(lines) >= 3  # a line for each tenth that ended, at most 10 and the last
    assert re.match(
        r"batch: 20/20 done \(20 ok, 0 failed\), 0 running, [\d.]+/s, ETA 0:00, \$0\.0200$",
        lines[-1],
    ), lines[-1]
    assert "\x1b" not in err


def test_progress_lines_count_the_tasks_waiting_as_queued_not_running(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Tasks waiting behind `--concurrency` are "queued": every line accounts for each
    task not done as running or queued. Before, the line after the first of three tasks
    (one at a time) said "0 running" with two still to run."""
    tasks = write_tasks(
        tmp_path / "tasks.jsonl", [{"id": f"q{i}", "prompt": "p"} for i in range(3)]
    )
    out = tmp_path / "results.jsonl"
    argv = ("batch", str(tasks), "--out", str(out), "--agent", AGENT, "--concurrency", "1")
    code, _stdout, err = _run(capsys, *argv)
    assert code == 0, err
    status = [line for line in err.splitlines() if re.match(r"batch: \d+/3 done", line)]
    assert len(status) >= 3, err
    for line in status:
        found = re.match(r"batch: (\d+)/3 done \(.*\), (\d+) running(?:, (\d+) queued)?,", line)
        assert found, line
        done, running, queued = (int(group or 0) for group in found.groups())
        assert running + queued == 3 - done, line
    assert ", 1 running, 1 queued," in status[0], status[0]  # the next task has started
    assert "queued" not in status[-1]  # nothing waits at the end


def test_a_resumed_batch_s_progress_counts_the_tasks_done_before(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # A resumed batch said "2/4 done (1 ok, 0 failed)" and at its end "4/4 done (3 ok, 0
    # failed)": the task done before was in the first number only.
    tasks = write_tasks(
        tmp_path / "tasks.jsonl", [{"id": f"p{i}", "prompt": "p"} for i in range(4)]
    )
    out = tmp_path / "results.jsonl"
    half = write_tasks(tmp_path / "half.jsonl", [{"id": "p0", "prompt": "p"}])
    assert _run(capsys, "batch", str(half), "--out", str(out), "--agent", AGENT)[0] == 0
    code, _stdout, err = _run(capsys, "batch", str(tasks), "--out", str(out), "--agent", AGENT)
    assert code == 0, err
    lines = [line for line in err.splitlines() if line.startswith("batch: ")]
    assert lines[0] == "batch: 3 to run (1 done before)"
    assert lines[-1].startswith("batch: 4/4 done (1 before, 3 ok, 0 failed), 0 running"), lines


def _mcp_servers_of_ours() -> list[int]:
    """The pids of this process's children running the MCP test server."""
    found = []
    for status in Path("/proc").glob("[0-9]*/status"):
        try:
            fields = dict(line.split(":\t", 1) for line in status.read_text().splitlines())
            command = (status.parent / "cmdline").read_bytes()
        except (OSError, ValueError):
            continue  # gone meanwhile
        ours = int(fields["PPid"]) == os.getpid() and not fields["State"].startswith("Z")
        if ours and b"mcp_test_server.py" in command:
            found.append(int(status.parent.name))
    return found


@pytest.mark.skipif(not Path("/proc").is_dir(), reason="reads /proc")
def test_an_agent_file_checked_at_start_leaves_no_mcp_server_running(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`yiem batch --agent FILE` builds the file's agent at start (so that a bad file fails
    at once) and to choose its workers (does it use the embedded model?); those agents
    were never closed, and their MCP servers ran on for the whole batch."""
    pytest.importorskip("mcp", reason="the mcp extra is not installed")
    from tests.mcp.conftest import SERVER

    team = tmp_path / "team.toml"
    command = json.dumps(f"{sys.executable} {SERVER}")
    team.write_text(f'[agents.a]\nmodel = "openai/gpt-4o-mini"\nmcp = [{command}]\n')
    tasks = write_tasks(tmp_path / "tasks.jsonl", [{"id": "t1", "prompt": "hi"}])
    out = tmp_path / "results.jsonl"
    assert _mcp_servers_of_ours() == []
    _run(capsys, "batch", str(tasks), "--out", str(out), "--agent", str(team))
    assert result_lines(out)[0]["id"] == "t1"  # the batch ran
    assert _mcp_servers_of_ours() == []


def test_a_broken_tool_file_is_one_warning_for_all_the_worker_processes(
    tmp_path: Path, capfd: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each worker process loaded the `--tools` folder and warned of its broken file
    itself, as a bare log line: the warning came once per worker, without `yiem: warning:`."""
    monkeypatch.setattr("yiemagent.batch._pool.default_processes", lambda: 2)
    for name in [key for key in os.environ if key.endswith("_API_KEY")]:
        monkeypatch.delenv(name)  # every task fails at once, in its worker
    tools = tmp_path / "tools"
    tools.mkdir()
    shutil.copy(CHAT_TOOLS / "slow.py", tools)
    (tools / "broken.py").write_text("def get_tool(:\n")
    tasks = write_tasks(
        tmp_path / "tasks.jsonl", [{"id": f"w{i}", "prompt": "p"} for i in range(4)]
    )
    argv = ["--tools", str(tools), "--model", "openai/gpt-4o-mini", "--workers", "pool"]
    code = main(["batch", str(tasks), "--out", str(tmp_path / "results.jsonl"), *argv])
    assert code == 1
    err = capfd.readouterr().err
    said = [x for x in err.splitlines() if "broken.py" in x]
    assert len(said) == 1, err
    assert said[0].startswith(f"yiem: warning: tool file {tools / 'broken.py'} not loaded: ")


def test_a_library_warning_during_the_batch_is_a_warning_line_of_the_command(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    tasks = [{"id": "r1", "prompt": "p", "metadata": {"kind": "raise"}}]
    tasks_file = write_tasks(tmp_path / "tasks.jsonl", tasks)
    out = tmp_path / "results.jsonl"
    argv = ["--workers", "tasks", "--retries", "0"]
    code, _, err = _run(
        capsys, "batch", str(tasks_file), "--out", str(out), "--agent", AGENT, *argv
    )
    assert code == 1
    said = [line for line in err.splitlines() if "make_agent failed" in line]
    assert said == [
        "yiem: warning: task r1: make_agent failed: RuntimeError('cannot build an agent for r1')"
    ], err


def test_a_tools_folder_none_of_whose_files_loads_fails_before_any_task(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    tools = tmp_path / "tools"
    tools.mkdir()
    (tools / "broken.py").write_text("def get_tool(:\n")
    tasks = write_tasks(tmp_path / "tasks.jsonl", [{"id": "t1", "prompt": "p"}])
    out = tmp_path / "results.jsonl"
    argv = ["--tools", str(tools), "--model", "openai/gpt-4o-mini"]
    code, _, err = _run(capsys, "batch", str(tasks), "--out", str(out), *argv)
    assert code == 1
    assert err.startswith(f"yiem: error: no tool file of {tools} loaded: "), err
    assert len(err.strip().splitlines()) == 1, err
    assert not out.exists()


def test_out_dash_is_one_line_and_no_file_named_dash(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    tasks = write_tasks(tmp_path / "tasks.jsonl", mixed_tasks(2, "dash"))
    code, stdout, err = _run(capsys, "batch", str(tasks), "--out", "-", "--agent", AGENT)
    assert code != 0 and stdout == ""
    assert err.strip().splitlines() == [err.strip()] and err.startswith("yiem: error: --out -: ")
    assert not (tmp_path / "-").exists()


@pytest.mark.parametrize("content", [b"my notes", b"\xff\xfe\x00bad"])
def test_out_naming_a_file_that_is_no_results_file_is_one_line_and_kept(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], content: bytes
) -> None:
    """`--out notes.txt` on a one-line file without a final newline: the line was dropped
    as "torn", the file rewritten and the batch ran into it (exit 0); the notes were gone."""
    tasks = write_tasks(tmp_path / "tasks.jsonl", mixed_tasks(2, "notes"))
    notes = tmp_path / "notes.txt"
    notes.write_bytes(content)
    code, _, err = _run(capsys, "batch", str(tasks), "--out", str(notes), "--agent", AGENT)
    assert code == 1
    assert err.count("\n") == 1 and err.startswith("yiem: error: --out: "), err
    assert "is not a result line" in err
    assert notes.read_bytes() == content
    code, _, err = _run(capsys, "batch", "--summary", str(notes))
    assert code == 1 and err.count("\n") == 1 and "is not a result line" in err, err
