"""`--agent` read the same way by every command (docs/teams.md, "Agent files"): a path on the
command line is from the folder the command runs in. `yiem batch` and `yiem eval` take a
factory as `FILE.py:FUNCTION` (the spelling of a dataset's function checks) as well as
`MODULE:FUNCTION`; `yiem batch` took `agents/make.py` for a module name ("cannot import
agents/make.py") and `yiem eval` read it as an agent file (TOML). `yiem run`, `yiem chat`
and `yiem serve` take agent files only, and say so of a factory."""

from __future__ import annotations

import json
import os
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

from yiemagent.cli.main import main

FACTORY = textwrap.dedent(
    """
    import os

    from yiemagent import Agent
    from yiemagent.ai.providers.faux import FauxModel, faux_message, faux_text

    def make_agent():
        fm = FauxModel([faux_message(faux_text(f"made by make.py in {os.getpid()}"))])
        return Agent(model=fm.model, stream_fn=fm.stream_fn)
    """
)


@pytest.fixture(autouse=True)
def imports_undone(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """The factory's folder and module go with the test (a command's process imports the
    file once; these commands run in this one)."""
    monkeypatch.setattr(sys, "path", list(sys.path))
    yield
    for name in [n for n in sys.modules if n in ("make", "agents") or n.startswith("agents.")]:
        del sys.modules[name]


def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The folder the command runs in: `agents/make.py`, and the cases in `data/`."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "agents").mkdir()
    (tmp_path / "agents" / "make.py").write_text(FACTORY)
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "tasks.jsonl").write_text('{"id": "a", "prompt": "hi"}\n')
    case = {"name": "a", "input": "hi", "checks": [{"contains": "make.py"}]}
    (tmp_path / "data" / "cases.jsonl").write_text(json.dumps(case) + "\n")


def test_batch_takes_a_python_file_factory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    project(tmp_path, monkeypatch)
    args = ["batch", "data/tasks.jsonl", "--results", "out.jsonl"]
    code = main([*args, "--agent", "agents/make.py:make_agent", "--workers", "pool"])
    assert code == 0, capsys.readouterr().err
    (line,) = (tmp_path / "out.jsonl").read_text().splitlines()
    made, pid = json.loads(line)["text"].rsplit(" in ", 1)
    assert made == "made by make.py"
    assert int(pid) != os.getpid()  # a worker process imported the file too


def test_eval_takes_a_python_file_factory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    project(tmp_path, monkeypatch)
    code = main(["eval", "data/cases.jsonl", "--agent", "agents/make.py:make_agent"])
    out = capsys.readouterr()
    assert code == 0, out.err
    assert "1/1" in out.out


@pytest.mark.parametrize("command", ["batch", "eval"])
@pytest.mark.parametrize(
    ("spec", "said"),
    [
        ("agents/nope.py:make_agent", "no file agents/nope.py"),
        ("agents/make.py:build", "has no function 'build'"),
        ("make.py:make_agent", "no file make.py"),  # not from the dataset's folder
    ],
)
def test_a_bad_python_file_factory_is_one_line(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    command: str,
    spec: str,
    said: str,
) -> None:
    project(tmp_path, monkeypatch)
    (tmp_path / "data" / "make.py").write_text(FACTORY)
    data = "data/tasks.jsonl" if command == "batch" else "data/cases.jsonl"
    args = ["--results", "out.jsonl"] if command == "batch" else []
    code = main([command, data, "--agent", spec, *args])
    err = capsys.readouterr().err
    assert code == 1
    assert err.startswith(f"yiem: error: --agent {spec}: ") and said in err, err
    assert err.count("\n") == 1
    assert not (tmp_path / "out.jsonl").exists()


@pytest.mark.parametrize("command", ["run", "chat", "serve"])
@pytest.mark.parametrize("spec", ["agents/make.py:make_agent", "agents.make:make_agent"])
def test_run_chat_and_serve_say_they_take_agent_files(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    command: str,
    spec: str,
) -> None:
    project(tmp_path, monkeypatch)
    args = {"run": ["hi"], "chat": [], "serve": ["--port", "0"]}[command]
    code = main([command, "--agent", spec, *args])
    err = capsys.readouterr().err
    assert code == 1
    assert err == (
        f"yiem: error: --agent {spec}: yiem {command} takes an agent file (FILE.toml[:NAME]); "
        "a FILE.py:FUNCTION or MODULE:FUNCTION factory is for yiem batch and yiem eval\n"
    )
