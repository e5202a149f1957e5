"""What a new user of `yiem` meets (DESIGN §8): install hints that work from a checkout,
a tools folder with one broken file, a missing trace file, `--json` without the repeated
partial message, `--help` that reads well, and a price warning only where a price counts."""

from __future__ import annotations

import importlib
import json
import re
from pathlib import Path
from typing import Any

import pytest

from yiemagent.ai.providers.faux import FauxModel, faux_message, faux_tool_call
from yiemagent.cli.main import main
from yiemagent.errors import install_hint

cli_main_module = importlib.import_module("yiemagent.cli.main")
SRC = Path(cli_main_module.__file__).resolve().parents[1]

GOOD_TOOL = """
from yiemagent import AgentTool

def execute(tool_call_id, args, signal, on_update):
    return "pong"

def get_tool():
    return AgentTool(name="ping", label="Ping", description="Answer pong",
                     input_schema={"type": "object", "properties": {}}, execute=execute)
"""


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture
def faux_ping(monkeypatch: pytest.MonkeyPatch) -> FauxModel:
    fm = FauxModel(
        [faux_message(faux_tool_call("ping", {})), "It answered " + "pong, " * 40 + "done."],
        model_id="cli-faux",
    )
    monkeypatch.setattr(cli_main_module, "resolve_model", lambda *args, **kwargs: fm.model)
    return fm


def test_every_install_hint_is_the_checkouts_pip_with_dash_e() -> None:
    """yiemagent is not on PyPI: from a checkout the hint is `.venv/bin/pip install -e`."""
    assert install_hint("mcp").endswith("pip install -e '.[mcp]'")
    written = [
        f"{path.relative_to(SRC)}:{number}"
        for path in SRC.rglob("*.py")
        if path.name != "errors.py"
        for number, line in enumerate(path.read_text().splitlines(), 1)
        if re.search(r"pip install '?yiemagent\[", line)
    ]
    assert written == [], f"hints not made by install_hint: {written}"


def test_run_loads_the_good_tools_and_warns_on_a_broken_one(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, faux_ping: FauxModel
) -> None:
    (tmp_path / "ping.py").write_text(GOOD_TOOL)
    (tmp_path / "helpers.py").write_text("def helper():\n    return 1\n")
    code, out, err = _run(capsys, "run", "ping it", "--tools", str(tmp_path))
    assert code == 0, err
    assert out.startswith("It answered pong")
    assert "helpers.py not loaded: defines no get_tool() function" in err
    assert err.startswith("yiem: warning: ")  # as the run's other warnings, and batch's
    assert "name starting with _ (e.g. _helpers.py" in err
    assert [t.name for t in faux_ping.contexts[0].tools or []] == ["ping", "listTools"]


@pytest.mark.parametrize(
    ("broken", "hint"),
    [
        ("import not_installed_anywhere_xyz\n", False),  # a package the user lacks
        ("def get_tool(:\n", False),  # a syntax error
        ("from helpers import twice\n", True),  # a helper package beside it, without _
    ],
)
def test_the_helper_module_hint_comes_only_where_a_helper_is_the_cause(
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
    faux_ping: FauxModel,
    broken: str,
    hint: bool,
) -> None:
    """A tool file that failed on a missing package or a typo got, after its own line, a
    second one about naming helper modules `_helpers.py`, which sent the user off to rename
    files that had nothing to do with it."""
    (tmp_path / "ping.py").write_text(GOOD_TOOL)
    (tmp_path / "broken.py").write_text(broken)
    if hint:  # a package: load_dir does not read it, so only broken.py's import fails
        (tmp_path / "helpers").mkdir()
        (tmp_path / "helpers" / "__init__.py").write_text("def twice(x):\n    return 2 * x\n")
    code, _, err = _run(capsys, "run", "ping it", "--tools", str(tmp_path))
    assert code == 0, err
    assert f"yiem: warning: tool file {tmp_path / 'broken.py'} not loaded: " in err
    assert ("name starting with _ (e.g. _helpers.py" in err) is hint, err


def test_trace_of_a_missing_file_says_the_file_does_not_exist(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    missing = tmp_path / "missing.jsonl"
    code, _, err = _run(capsys, "trace", str(missing), "--html", str(tmp_path / "x.html"))
    assert code == 1
    assert (
        err.strip() == f"yiem: error: {missing}: the file does not exist (give a yiem run "
        "--json log, or a stored session's id)"
    )


def test_trace_of_a_folder_says_it_is_a_folder(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """A folder exists: "the file does not exist" would send the user looking for it."""
    code, _, err = _run(capsys, "trace", str(tmp_path), "--html", str(tmp_path / "x.html"))
    assert code == 1
    assert (
        err.strip() == f"yiem: error: {tmp_path}: is a folder, not a file (give a yiem run "
        "--json log, or a stored session's id)"
    )
    assert not (tmp_path / "x.html").exists()


def test_run_json_sends_deltas_and_trace_still_reads_the_log(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, faux_ping: FauxModel
) -> None:
    (tmp_path / "tools").mkdir()
    (tmp_path / "tools" / "ping.py").write_text(GOOD_TOOL)
    code, out, err = _run(capsys, "run", "ping it", "--tools", str(tmp_path / "tools"), "--json")
    assert code == 0, err
    events = [json.loads(line) for line in out.splitlines()]
    updates = [e for e in events if e["type"] == "message_update"]
    assert updates and all("message" not in e for e in updates)
    assert all("partial" not in e["assistant_message_event"] for e in updates)
    text = "".join(
        e["assistant_message_event"]["delta"]
        for e in updates
        if e["assistant_message_event"]["type"] == "text_delta"
    )
    ends = [
        e["message"]
        for e in events
        if e["type"] == "message_end" and e["message"]["role"] == "assistant"
    ]
    assert text == "".join(b.get("text", "") for m in ends for b in m["content"])
    # each line is its delta, not the message so far (which made the log quadratic)
    assert max(len(line) for line in out.splitlines() if '"message_update"' in line) < 1000
    log = tmp_path / "run.jsonl"
    log.write_text(out)
    code, _, err = _run(capsys, "trace", str(log), "--html", str(tmp_path / "run.html"))
    assert code == 0, err
    assert "(2 turns, 3 calls)" in err


def test_trace_refuses_to_write_the_page_over_what_it_reads(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, faux_ping: FauxModel
) -> None:
    """`--html run.jsonl` replaced the run's log with the page; `--html sessions.db` (the
    --db it reads) replaced every stored session."""
    (tmp_path / "tools").mkdir()
    (tmp_path / "tools" / "ping.py").write_text(GOOD_TOOL)
    code, out, err = _run(capsys, "run", "ping it", "--tools", str(tmp_path / "tools"), "--json")
    assert code == 0, err
    log = tmp_path / "run.jsonl"
    log.write_text(out)
    code, _, err = _run(capsys, "trace", str(log), "--html", str(log))
    assert code == 1
    assert err.strip() == (
        f"yiem: error: cannot write {log} (--html): it is the run's log, which it would replace"
    )
    assert log.read_text() == out

    from yiemagent.sessions import SqliteSessionStore
    from yiemagent.types import UserMessage

    db = tmp_path / "sessions.db"
    with SqliteSessionStore(db) as store:
        store.append("s1", UserMessage(content="hi"))
    before = db.read_bytes()
    code, _, err = _run(capsys, "trace", "s1", "--db", str(db), "--html", str(db))
    assert code == 1
    assert err.strip() == (
        f"yiem: error: cannot write {db} (--html): it is the session database, which it "
        "would replace"
    )
    assert db.read_bytes() == before


def test_help_keeps_sentences_whole_and_shows_flags_without_a_type(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COLUMNS", "80")
    code, out, _ = _run(capsys, "--help")
    assert code == 0
    flat = " ".join(out.replace("│", " ").split())
    assert "steering while it works" in flat
    assert "turns down the page, model and tool calls" in flat
    code, out, _ = _run(capsys, "run", "--help")
    assert "<bool>" not in out
    assert re.search(r"--json\s+Print every event", out)


def test_no_price_line_unless_a_price_is_needed(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    code, _, err = _run(
        capsys, "run", "hi", "--model", "openai-compatible/m", "--base-url", "http://127.0.0.1:9/v1"
    )
    assert code == 1
    assert "price" not in err
    code, _, err = _run(
        capsys,
        "run",
        "hi",
        "--model",
        "openai-compatible/m",
        "--base-url",
        "http://127.0.0.1:9/v1",
        "--max-cost",
        "0.5",
    )
    assert "no price is known for openai-compatible/m" in err


def test_a_tools_folder_with_no_tool_file_is_one_warning_and_the_run_goes_on(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, faux_ping: FauxModel
) -> None:
    """`--tools DIR` where DIR holds no `*.py` that `load_dir` takes (here: a helper, a note
    and the real tools one folder down) loaded nothing and said nothing."""
    (tmp_path / "_helpers.py").write_text("X = 1\n")
    (tmp_path / "notes.txt").write_text("my tools\n")
    (tmp_path / "tools").mkdir()
    (tmp_path / "tools" / "ping.py").write_text(GOOD_TOOL)
    code, out, err = _run(capsys, "run", "ping it", "--tools", str(tmp_path))
    assert code == 0, err
    assert out  # the run went on (the faux model's answer)
    assert err.splitlines()[0] == (
        f"yiem: warning: --tools {tmp_path}: no tool file there (a *.py defining get_tool(); "
        "subfolders are not read), so none is loaded"
    )
    assert err.count("warning") == 1
    assert [t.name for t in faux_ping.contexts[0].tools or []] == ["listTools"]

    faux_ping.add(faux_message(faux_tool_call("ping", {})), "pong")
    code, _, err = _run(capsys, "run", "ping it", "--tools", str(tmp_path / "tools"))
    assert code == 0 and "warning" not in err  # a folder with a tool: no word


@pytest.mark.parametrize("command", ["batch", "eval"])
def test_batch_and_eval_say_so_too_before_anything_runs(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, command: str
) -> None:
    (tmp_path / "tasks.jsonl").write_text(
        '{"id": "1", "prompt": "p"}\n' if command == "batch" else '{"name": "a", "input": "p"}\n'
    )
    (tmp_path / "empty").mkdir()
    extra = ["--out", str(tmp_path / "r.jsonl")] if command == "batch" else []
    argv = [command, str(tmp_path / "tasks.jsonl"), *extra, "--tools", str(tmp_path / "empty")]
    code, _, err = _run(capsys, *argv, "--model", "nope/x")
    assert code == 1
    warning, error = err.strip().splitlines()
    assert warning.startswith(f"yiem: warning: --tools {tmp_path / 'empty'}: no tool file there")
    assert error.startswith("yiem: error: ") and "nope" in error


@pytest.mark.timeout(120)  # the openai SDK's first import: seconds of CPU under load
def test_a_base_url_without_its_api_root_says_which_url_was_not_found(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """`--base-url http://host:port` where the server serves `/v1`: its 404 "Not Found" said
    nothing of where; the line now names the request, so the missing `/v1` shows."""
    pytest.importorskip("openai")
    from tests.ai.servers import ReplayServer, Reply

    with ReplayServer() as server:
        server.enqueue(Reply(404, {"content-type": "text/plain"}, b"Not Found"))
        code, out, err = _run(
            capsys, "run", "hi", "--model", "openai-compatible/m", "--base-url", server.url
        )
    assert code == 1 and out == ""
    (line,) = err.strip().splitlines()[-1:]
    assert line == (
        "yiem: error: the run failed: HTTP 404 from the server "
        f"(POST {server.url}/chat/completions): Not Found"
    ), err


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (
            ["--model", "openai-compatible/m", "--base-url", "http://127.0.0.1:9/v1",
             "--tool-calls", "bogus"],
            "--tool-calls must be one of native, text, schema, not 'bogus'",
        ),
        (
            ["--model", "openai/gpt-4o", "--tool-calls", "text"],
            "--tool-calls is for local servers (openai-compatible/..., ollama/...), "
            "not 'openai/gpt-4o'",
        ),
    ],
)  # fmt: skip
def test_a_bad_tool_calls_option_is_named_as_the_option(
    capsys: pytest.CaptureFixture[str], argv: list[str], expected: str
) -> None:
    """The line named get_model's argument, `tool_calls`, to a user who typed --tool-calls."""
    code, out, err = _run(capsys, "run", "hi", *argv)
    assert code == 1 and out == ""
    assert err.strip() == f"yiem: error: {expected}"


@pytest.mark.timeout(120)
def test_a_password_in_the_base_url_is_not_said_back(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """`--base-url http://user:PASSWORD@host/v1` (a proxy's basic auth): a failed connection
    said the URL whole, password included; a `?key=` in it was hidden, but its scrub ate the
    ": " after the URL."""
    pytest.importorskip("openai")
    import socket

    with socket.socket() as free:
        free.bind(("127.0.0.1", 0))
        dead = free.getsockname()[1]  # nothing listens there once closed
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-0123456789abcdef")
    for url, shown in [
        (f"http://bob:s3cretpw@127.0.0.1:{dead}/v1", f"http://bob:***@127.0.0.1:{dead}/v1/"),
        (f"http://127.0.0.1:{dead}/v1?key=s3cretpw", "?key=***: "),
    ]:
        code, out, err = _run(
            capsys, "run", "hi", "--model", "openai-compatible/m", "--base-url", url
        )
        assert code == 1 and out == ""
        (line,) = err.strip().splitlines()[-1:]
        assert "s3cretpw" not in err and shown in line, line


@pytest.mark.parametrize(
    ("argv", "said"),
    [
        (
            ["models", "list"],
            "yiem: error: No such command 'list'. (the commands of yiem models: install;"
            " yiem models alone lists the models)",
        ),
        (["mcp", "bogus"], "yiem: error: No such command 'bogus'. (the commands of yiem mcp:"),
        (["frob"], "yiem: error: No such command 'frob'. (the commands of yiem: run, chat,"),
        (["modles"], "yiem: error: No such command 'modles'. Did you mean 'models'?"),
    ],
)
def test_an_unknown_command_names_the_ones_there_are(
    capsys: pytest.CaptureFixture[str], argv: list[str], said: str
) -> None:
    # `yiem models list` said "No such command 'list'." and nothing of what there is.
    code, _out, err = _run(capsys, *argv)
    assert code == 2
    assert err.startswith(said), err
    assert len(err.strip().splitlines()) == 1


def test_run_says_an_answer_was_cut_off_at_the_output_limit(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # The embedded model's answer ended "... which is connected to a crank" (stop reason
    # "length") and yiem run printed it as a whole answer.
    fm = FauxModel([faux_message("The piston is connected to a crank", stop_reason="length")])
    monkeypatch.setattr(cli_main_module, "resolve_model", lambda *args, **kwargs: fm.model)
    code, out, err = _run(capsys, "run", "Explain engines")
    assert code == 0, err
    assert out == "The piston is connected to a crank\n"
    assert "⋯ cut off: the answer reached the model's output limit" in err


def _command_paths() -> list[list[str]]:
    """Every `yiem` command and subcommand, as the words that name it."""
    import typer.main

    group: Any = typer.main.get_command(cli_main_module.app)
    paths: list[list[str]] = []

    def walk(command: Any, words: list[str]) -> None:
        paths.append(words)
        for name in getattr(command, "commands", {}):
            walk(command.commands[name], [*words, name])

    walk(group, [])
    return paths


def test_no_help_page_shows_the_docstrings_sections_for_programmers(
    capsys: pytest.CaptureFixture[str],
) -> None:
    # `yiem sessions release --help` ended on "Raises: CliError: a bad id, ...".
    paths = _command_paths()
    assert ["sessions", "release"] in paths and ["mcp", "list"] in paths
    for words in paths:
        code, out, _ = _run(capsys, *words, "--help")
        assert code == 0, words
        for section in ("Raises:", "Args:", "Returns:", "CliError"):
            assert section not in out, (words, section)


@pytest.mark.parametrize(
    ("argv", "hint"),
    [
        (["run", "What", "time", "is", "it?"], 'yiem run "What time is it?"'),
        (["run", "What's", "up?"], '''yiem run "What's up?"'''),
        (["run", "--", "-5", "+", "3?"], 'yiem run -- "-5 + 3?"'),
        (["run", "Say", '"hi"', "$HOME"], """yiem run 'Say "hi" $HOME'"""),
        (["mcp", "list", "python", "server.py"], 'yiem mcp list "python server.py"'),
    ],
)
def test_a_text_left_unquoted_is_told_to_be_quoted(
    capsys: pytest.CaptureFixture[str], argv: list[str], hint: str
) -> None:
    # It said only "Got unexpected extra argument(s) (time is it?)".
    code, _out, err = _run(capsys, *argv)
    assert code == 2
    line = err.strip()
    assert len(line.splitlines()) == 1
    assert line.startswith("yiem: error: Got unexpected extra argument"), line
    assert line.endswith(f"is one argument: put it in quotes, {hint})"), line


def test_other_commands_extra_arguments_get_no_quoting_hint(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code, _out, err = _run(capsys, "trace", "a.jsonl", "b.jsonl", "--html", "-")
    assert code == 2
    assert err.strip() == "yiem: error: Got unexpected extra argument(s) (b.jsonl)"
