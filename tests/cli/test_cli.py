"""`yiem` (DESIGN §8): errors print one line and exit non-zero; `run` streams the answer and
shows each tool call; `--json` prints every event as a JSON line; `models` lists the
catalogue. Most tests run in-process on the faux model; the ones marked `local_model` run
the real command on the embedded model."""

from __future__ import annotations

import importlib
import io
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests._signals import stop_when_ready
from tests._slow_load import slow_load_script
from yiemagent.ai.providers.faux import FauxModel, faux_message, faux_text, faux_tool_call
from yiemagent.cli.main import main
from yiemagent.errors import install_hint
from yiemagent.types import Usage

cli_main_module = importlib.import_module("yiemagent.cli.main")

YIEM = [sys.executable, "-m", "yiemagent.cli.main"]


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def _one_error_line(err: str) -> str:
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith("yiem: error: ")
    assert "Traceback" not in err
    return lines[0]


def test_bad_tools_folder_is_one_line_and_exit_1(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    code, _, err = _run(capsys, "run", "hi", "--tools", str(tmp_path / "missing"))
    assert code == 1
    assert "not a folder" in _one_error_line(err)


def test_unknown_model_is_one_line_and_exit_1(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = _run(capsys, "run", "hi", "--model", "nope/model-x")
    assert code == 1
    assert "unknown model 'nope/model-x'" in _one_error_line(err)


def test_broken_tool_file_is_one_line_naming_the_file(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    (tmp_path / "broken.py").write_text("raise RuntimeError('boom at import')\n")
    code, _, err = _run(capsys, "run", "hi", "--tools", str(tmp_path))
    assert code == 1
    line = _one_error_line(err)
    assert "broken.py" in line and "boom at import" in line


def test_uninstalled_larger_model_says_how_to_install(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytest.importorskip("yiemagent.ai.providers.local")
    from yiemagent.ai.providers.local import LOCAL_MODELS, is_installed

    # An empty cache folder: a verified 1.5B file another checkout assembled in the user's
    # cache counts as installed (and runs), which is not the case under test.
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    if is_installed(LOCAL_MODELS["qwen2.5-coder-1.5b"]):
        pytest.skip("the 1.5B model's packages are installed here")
    code, _, err = _run(capsys, "run", "hi", "--model", "local/qwen2.5-coder-1.5b")
    assert code == 1
    line = _one_error_line(err)
    assert "yiem models install local/qwen2.5-coder-1.5b" in line
    assert "pip install -e '.[local-large]'" in line  # from the checkout, without the CLI


def test_usage_error_is_one_line_exit_2(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = _run(capsys, "run")
    assert code == 2
    assert "Missing argument" in _one_error_line(err)


def test_models_lists_the_catalogue_and_local_status(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = _run(capsys, "models")
    assert code == 0
    rows = {line.split()[0]: line for line in out.splitlines() if line.strip()}
    assert "openai/gpt-4o-mini" in rows and "anthropic/claude-sonnet-4-5" in rows
    local = rows["local/qwen2.5-coder-0.5b"]
    assert "(default)" in local and "installed" in local
    assert local.split()[3] == "free"


def test_models_says_unknown_not_free_for_a_hosted_model_without_a_price(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Without `genai-prices` (the demo's install) a hosted model has no known price; a new
    user read "free" beside gpt-4o."""
    import dataclasses

    from yiemagent.ai import models as catalogue
    from yiemagent.types.model import ModelCost

    unpriced = {
        name: dataclasses.replace(m, cost=ModelCost()) if m.api != "local" else m
        for name, m in catalogue.MODELS.items()
    }
    monkeypatch.setattr(catalogue, "MODELS", unpriced)
    code, out, _ = _run(capsys, "models")
    assert code == 0
    rows = {line.split()[0]: line.split() for line in out.splitlines() if line.strip()}
    assert rows["openai/gpt-4o-mini"][3] == "unknown"
    assert rows["anthropic/claude-sonnet-4-5"][3] == "unknown"
    assert rows["local/qwen2.5-coder-0.5b"][3] == "free"
    # with the price database installed, "unknown" is its verdict: no hint
    assert "unknown prices" not in out

    monkeypatch.setitem(sys.modules, "genai_prices", None)  # the demo's install: not there
    code, out, _ = _run(capsys, "models")
    assert code == 0
    assert (
        "unknown prices: the price database (genai-prices) is not installed; it comes with "
        f"the openai and anthropic extras: {install_hint('openai')}"
    ) in out.splitlines()


def _statuses(out: str) -> dict[str, str]:
    """`yiem models`' status column by model id (every row of the table, however long)."""
    rows = (line.split(None, 4) for line in out.splitlines()[1:])
    return {row[0]: row[4] for row in rows if len(row) == 5 and "/" in row[0]}


def test_models_says_which_hosted_models_can_run_here(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A new user's question "which of these can I use now?": a hosted model's status
    names what it lacks (its SDK, then its key) or says it is ready; before, it was blank."""
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test-0123")
    code, out, _ = _run(capsys, "models")
    assert code == 0
    status = _statuses(out)
    assert status["openai/gpt-4o-mini"] == "needs OPENAI_API_KEY"
    assert status["anthropic/claude-sonnet-4-5"] == "ready"
    assert status["local/qwen2.5-coder-0.5b"].startswith("installed")

    monkeypatch.setitem(sys.modules, "anthropic", None)  # not installed
    code, out, _ = _run(capsys, "models")
    assert code == 0
    rows = {line.split()[0]: line for line in out.splitlines() if line.strip()}
    assert rows["anthropic/claude-haiku-4-5"].endswith("needs the anthropic SDK")
    assert f"to install the anthropic SDK: {install_hint('anthropic')}" in out.splitlines()


@pytest.fixture
def faux_calculator(monkeypatch: pytest.MonkeyPatch) -> FauxModel:
    """`yiem run` on a faux model that calls the calculator, then answers."""
    fm = FauxModel(
        [
            faux_message(faux_tool_call("calculator", {"expression": "17 * 23"})),
            "The answer is 391.",
        ],
        model_id="cli-faux",
    )
    monkeypatch.setattr(cli_main_module, "resolve_model", lambda *args, **kwargs: fm.model)
    return fm


def test_the_usage_line_says_the_output_tokens_spent_reasoning(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """`Usage.reasoning` was in every event of `--json` but not on the line a person reads."""
    usage = Usage(input=100, output=40, reasoning=25, total_tokens=140)
    fm = FauxModel([faux_message(faux_text("Thought it through."), usage=usage)])
    monkeypatch.setattr(cli_main_module, "resolve_model", lambda *args, **kwargs: fm.model)
    code, out, err = _run(capsys, "run", "Think.")
    assert code == 0 and out == "Thought it through.\n"
    [line] = [line for line in err.splitlines() if line.startswith("tokens: ")]
    assert line.startswith("tokens: 100 in, 40 out (25 reasoning) · "), line


def test_run_streams_the_answer_and_shows_the_tool_call(
    capsys: pytest.CaptureFixture[str], faux_calculator: FauxModel
) -> None:
    code, out, err = _run(capsys, "run", "What is 17 * 23?")
    assert code == 0
    assert out == "The answer is 391.\n"
    lines = err.strip().splitlines()
    assert lines[0] == '→ calculator {"expression": "17 * 23"}'
    assert lines[1].startswith("← calculator: 17 * 23 = 391 (") and lines[1].endswith(" ms)")
    assert lines[2].startswith("tokens: ") and lines[2].endswith(" s")
    tools = [t.name for t in faux_calculator.contexts[0].tools or []]
    assert tools == ["calculator", "get_time", "read_file", "listTools"]


def test_run_json_prints_every_event_as_a_json_line(
    capsys: pytest.CaptureFixture[str], faux_calculator: FauxModel
) -> None:
    code, out, _ = _run(capsys, "run", "What is 17 * 23?", "--json")
    assert code == 0
    events = [json.loads(line) for line in out.splitlines()]
    types = [e["type"] for e in events]
    assert types[0] == "agent_start" and types[-1] == "agent_end"
    assert "message_update" in types and "tool_execution_start" in types
    [end] = [e for e in events if e["type"] == "tool_execution_end"]
    assert end["result"]["content"][0]["text"] == "17 * 23 = 391"
    assert events[-1]["reason"] == "stop"


def test_run_keeps_a_tools_undecodable_output_on_a_utf8_stdout(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A tool's output holding a lone surrogate (bytes that were not UTF-8, decoded with
    # surrogateescape) made writing the event line to a UTF-8 stdout raise.
    (tmp_path / "raw.py").write_text(
        "from yiemagent import tool\n\n\n"
        "@tool\n"
        "def raw() -> str:\n"
        '    """Returns bytes that were not UTF-8."""\n'
        "    return b'ok \\xff'.decode('utf-8', 'surrogateescape')\n\n\n"
        "def get_tool():\n"
        "    return raw\n"
    )
    fm = FauxModel([faux_message(faux_tool_call("raw", {})), "Done."], model_id="cli-faux-raw")
    monkeypatch.setattr(cli_main_module, "resolve_model", lambda *args, **kwargs: fm.model)
    raw = io.BytesIO()
    monkeypatch.setattr(sys, "stdout", io.TextIOWrapper(raw, encoding="utf-8"))
    code = main(["run", "Use raw.", "--json", "--tools", str(tmp_path)])
    sys.stdout.flush()
    events = [json.loads(line) for line in raw.getvalue().decode("utf-8").splitlines()]
    assert code == 0
    [end] = [e for e in events if e["type"] == "tool_execution_end"]
    assert end["result"]["content"][0]["text"] == "ok \udcff"
    assert events[-1]["type"] == "agent_end"
    # Without --json the answer is printed, not lost to an encoding error.
    fm.add(faux_message(faux_tool_call("raw", {})), "Done.")
    raw.seek(0)
    raw.truncate()
    assert main(["run", "Use raw.", "--tools", str(tmp_path)]) == 0
    sys.stdout.flush()
    assert raw.getvalue().decode("utf-8").strip().endswith("Done.")


def test_provider_failure_is_one_line_and_exit_1(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    fm = FauxModel([], model_id="cli-faux-empty")
    monkeypatch.setattr(cli_main_module, "resolve_model", lambda *args, **kwargs: fm.model)
    code, _, err = _run(capsys, "run", "hi")
    assert code == 1
    assert "No more faux responses queued" in err.strip().splitlines()[-1]
    assert err.strip().splitlines()[-1].startswith("yiem: error: the run failed")


# ── the real command on the embedded model ───────────────────────────────────


def _env() -> dict[str, str]:
    return {**os.environ, "PYTHONUNBUFFERED": "1", "COLUMNS": "200"}


@pytest.mark.local_model
@pytest.mark.slow
def test_yiem_run_calculator_on_the_embedded_model() -> None:
    proc = subprocess.run(
        [*YIEM, "run", "What is 17 * 23? Use the calculator."],
        capture_output=True,
        text=True,
        timeout=240,
        env=_env(),
    )
    assert proc.returncode == 0, proc.stderr
    assert "391" in proc.stdout
    assert "→ calculator" in proc.stderr and "= 391" in proc.stderr
    assert "Traceback" not in proc.stderr


@pytest.mark.local_model
@pytest.mark.slow
def _answer_started(process: subprocess.Popen[str]) -> bool:
    """Whether the answer has started streaming (its first character read)."""
    assert process.stdout is not None
    return bool(process.stdout.read(1))


@pytest.mark.parametrize(
    ("sent", "code", "said"),
    [
        (signal.SIGINT, 130, "yiem: interrupted"),
        # a supervisor's or `timeout`'s SIGTERM used to cut the answer mid-line, silently
        (signal.SIGTERM, 143, "yiem: terminated"),
    ],
    ids=["ctrl-c", "sigterm"],
)
def test_a_signal_winds_the_run_down_cleanly(
    tmp_path: Path, sent: signal.Signals, code: int, said: str
) -> None:
    ended = stop_when_ready(
        [*YIEM, "run", "Write a long story about a lighthouse keeper.", "--tools", str(tmp_path)],
        sent,
        _answer_started,
        env=_env(),
        end_within_s=60,
    )
    err = ended.err
    assert ended.code == code, err
    assert ended.after_s < 30
    assert err.strip().splitlines()[-1] == said
    assert "Traceback" not in err


# ── a new user's stumbles (one clear line, non-zero, nothing lost) ─────────────


def test_no_arguments_shows_help_without_an_empty_error_line(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code, out, err = _run(capsys)
    assert "Usage: yiem" in out
    assert "yiem: error:" not in err
    assert err.strip() == ""
    assert code == 2


def test_a_failed_run_prints_only_the_error_line(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    fm = FauxModel([], model_id="cli-faux-empty")
    monkeypatch.setattr(cli_main_module, "resolve_model", lambda *args, **kwargs: fm.model)
    code, _, err = _run(capsys, "run", "hi")
    assert code == 1
    assert "No more faux responses queued" in _one_error_line(err)


@pytest.mark.parametrize("prompt", ["", "   \n"])
def test_an_empty_prompt_is_one_line_and_exit_2(
    capsys: pytest.CaptureFixture[str], faux_calculator: FauxModel, prompt: str
) -> None:
    code, _, err = _run(capsys, "run", prompt)
    assert code == 2
    assert "prompt is empty" in _one_error_line(err)
    assert faux_calculator.contexts == []


def test_base_url_with_the_embedded_model_is_refused(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = _run(capsys, "run", "hi", "--base-url", "http://127.0.0.1:1/v1")
    assert code == 1
    line = _one_error_line(err)
    assert "--base-url" in line and "openai-compatible/" in line


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["--model", "openai-compatible/m"], "needs --base-url"),
        (["--model", "openai-compatible/m", "--base-url", "127.0.0.1:8080"], "not an http://"),
    ],
)
def test_a_server_model_s_url_problems_name_the_option(
    capsys: pytest.CaptureFixture[str], args: list[str], says: str
) -> None:
    code, _, err = _run(capsys, "run", "hi", *args)
    assert code == 1
    line = _one_error_line(err)
    assert says in line and "--base-url http://127.0.0.1:8080/v1" in line
    assert "base_url=" not in line


def test_tool_lines_are_not_wrapped_when_stderr_is_not_a_terminal(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    fm = FauxModel(
        [
            faux_message(faux_tool_call("calculator", {"expression": " + ".join(["1"] * 60)})),
            "60",
        ],
        model_id="cli-faux-long",
    )
    monkeypatch.setattr(cli_main_module, "resolve_model", lambda *args, **kwargs: fm.model)
    monkeypatch.setenv("COLUMNS", "80")
    code, _, err = _run(capsys, "run", "sum")
    assert code == 0
    lines = err.strip().splitlines()
    assert lines[0].startswith("→ calculator") and lines[1].startswith("← calculator")
    assert lines[1].endswith(" ms)") and len(lines) == 3, err


def test_an_answer_the_locale_cannot_encode_is_escaped_not_lost(tmp_path: Path) -> None:
    script = tmp_path / "run_faux.py"
    script.write_text(
        "import sys\n"
        "import yiemagent.cli.main as m\n"
        "from yiemagent.ai.providers.faux import FauxModel\n"
        "fm = FauxModel(['\\u304a\\u306f\\u3088\\u3046 \\u2192 ok'], model_id='cli-loc')\n"
        "m.resolve_model = lambda *args, **kwargs: fm.model\n"
        "m.main(sys.argv[1:])\n",
        encoding="utf-8",
    )
    (tmp_path / "tools").mkdir()
    env = {**os.environ, "LC_ALL": "C", "LANG": "C", "PYTHONUTF8": "0"}
    env.update(PYTHONCOERCECLOCALE="0", PYTHONIOENCODING="")
    answer = "\u304a\u306f\u3088\u3046 \u2192 ok"
    for extra in ([], ["--json"]):
        proc = subprocess.run(
            [sys.executable, str(script), "run", "hi", "--tools", str(tmp_path / "tools"), *extra],
            capture_output=True,
            env=env,
            timeout=60,
        )
        assert b"Traceback" not in proc.stderr
        assert proc.returncode == 0, proc.stderr
        out = proc.stdout.decode("ascii")
        if extra:
            texts = [
                block["text"]
                for event in map(json.loads, out.splitlines())
                if event["type"] == "message_end" and event["message"]["role"] == "assistant"
                for block in event["message"]["content"]
            ]
            assert texts == [answer]
        else:
            assert out == "\\u304a\\u306f\\u3088\\u3046 \\u2192 ok\n"


def test_ctrl_c_before_the_run_starts_exits_130_not_0(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    def interrupted(*args: object, **kwargs: object) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(cli_main_module, "resolve_model", interrupted)
    code, out, err = _run(capsys, "run", "hi")
    assert code == 130
    assert out == ""
    assert err.strip() == "yiem: interrupted"


def _loading(process: subprocess.Popen[str]) -> bool:
    """Whether the next line on stderr is the slow load's "loading" (after the warning
    for the empty tools folder)."""
    assert process.stderr is not None
    line = process.stderr.readline()
    if "no tool file there" in line:
        line = process.stderr.readline()
    assert line.strip() == "loading"
    return True


def test_ctrl_c_while_the_embedded_model_loads_exits_130_at_once(tmp_path: Path) -> None:
    script = slow_load_script(tmp_path, resolving="yiemagent.cli.main", announce=True)
    (tmp_path / "tools").mkdir()
    ended = stop_when_ready(
        [sys.executable, str(script), "run", "hi", "--tools", str(tmp_path / "tools")],
        signal.SIGINT,
        _loading,
        env=_env(),
        end_within_s=30,
    )
    out, err = ended.out, ended.err
    assert ended.code == 130, err
    assert ended.after_s < 10
    assert err.strip().splitlines()[-1] == "yiem: interrupted"
    assert "Traceback" not in err and out == ""


def test_ctrl_c_while_the_model_loads_in_a_terminal_leaves_the_cursor_and_no_bar(
    tmp_path: Path,
) -> None:
    """On a terminal the load shows a progress bar, which hides the cursor. Ctrl-C then
    exited without stopping the bar: it was drawn again after "yiem: interrupted" (the
    shell's prompt following on its line) and the cursor stayed hidden in the shell."""
    script = slow_load_script(tmp_path, resolving="yiemagent.cli.main", announce=False)
    (tmp_path / "tools").mkdir()
    command = [sys.executable, str(script), "run", "hi", "--tools", str(tmp_path / "tools")]
    socket = f"yiem-test-{os.getpid()}-load"

    def tmux(*args: str) -> str:
        return subprocess.run(
            ["tmux", "-L", socket, "-f", os.devnull, *args],
            capture_output=True, text=True, timeout=30, check=True,
        ).stdout  # fmt: skip

    shell = f"{subprocess.list2cmdline(command)}; echo __EXIT=$?__; sleep 60"
    tmux("new-session", "-d", "-s", "run", "-x", "150", "-y", "20", shell)
    try:
        deadline = time.monotonic() + 60
        while "Loading" not in tmux("capture-pane", "-p", "-t", "run"):
            assert time.monotonic() < deadline, tmux("capture-pane", "-p", "-t", "run")
            time.sleep(0.2)
        time.sleep(0.5)  # the bar has been drawn and refreshed
        tmux("send-keys", "-t", "run", "C-c")
        while "__EXIT=" not in (screen := tmux("capture-pane", "-p", "-t", "run")):
            assert time.monotonic() < deadline, screen
            time.sleep(0.2)
        cursor = tmux("display", "-p", "-t", "run", "#{cursor_flag}").strip()
    finally:
        subprocess.run(["tmux", "-L", socket, "kill-server"], capture_output=True, check=False)
    lines = [line for line in screen.splitlines() if line.strip()]
    assert lines[-2:] == ["yiem: interrupted", "__EXIT=130__"], screen
    assert "Loading" not in screen
    assert cursor == "1"  # the shell's cursor is visible again


@pytest.mark.parametrize("extra", [[], ["--json"]])
def test_reaching_max_turns_without_an_answer_is_one_error_line_and_exit_1(
    capsys: pytest.CaptureFixture[str], faux_calculator: FauxModel, extra: list[str]
) -> None:
    code, out, err = _run(capsys, "run", "What is 17 * 23?", "--max-turns", "1", *extra)
    assert code == 1
    lines = err.strip().splitlines()
    assert lines[-1] == (
        "yiem: error: the turn limit was reached after 1 model call without an answer; "
        "raise it with --max-turns, e.g. --max-turns 2"
    )
    assert [line for line in lines if line.startswith("yiem:")] == [lines[-1]]
    assert "Traceback" not in err
    if extra:  # nothing lost: the JSON lines still end with the run's end and its reason
        assert json.loads(out.splitlines()[-1])["reason"] == "max_turns"
    else:  # the tool call was still shown
        assert lines[0].startswith("→ calculator") and lines[1].startswith("← calculator")


def test_the_turn_limit_message_counts_in_plain_english(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    fm = FauxModel(
        [faux_message(faux_tool_call("calculator", {"expression": f"{i} + 1"})) for i in range(3)],
        model_id="cli-faux-loop",
    )
    monkeypatch.setattr(cli_main_module, "resolve_model", lambda *args, **kwargs: fm.model)
    code, _, err = _run(capsys, "run", "count", "--max-turns", "3")
    assert code == 1
    assert "after 3 model calls without an answer" in err.strip().splitlines()[-1]
    assert err.strip().splitlines()[-1].endswith("--max-turns 6")


def test_an_answer_within_max_turns_exits_0(
    capsys: pytest.CaptureFixture[str], faux_calculator: FauxModel
) -> None:
    code, out, err = _run(capsys, "run", "What is 17 * 23?", "--max-turns", "2")
    assert code == 0
    assert out == "The answer is 391.\n"
    assert "yiem:" not in err


@pytest.mark.local_model
@pytest.mark.slow
def test_ctrl_c_while_the_model_is_assembled_leaves_no_partial_file(tmp_path: Path) -> None:
    pytest.importorskip("xllamacpp")
    cache = tmp_path / "cache"
    models = cache / "yiemagent" / "models"
    (tmp_path / "tools").mkdir()
    proc = subprocess.Popen(
        [*YIEM, "run", "hi", "--tools", str(tmp_path / "tools")],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**_env(), "XDG_CACHE_HOME": str(cache)},
    )
    try:
        deadline = time.monotonic() + 60
        while not list(models.glob(".assemble-*")) and time.monotonic() < deadline:
            time.sleep(0.005)
        assert list(models.glob(".assemble-*")), "the assembly never started"
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 130, err
    assert err.strip().splitlines()[-1] == "yiem: interrupted"
    assert list(models.iterdir()) == [], "a partial model file was left in the cache"


def test_a_prompt_starting_with_a_dash_says_to_use_double_dash(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code, _, err = _run(capsys, "run", "-5 + 3?")
    assert code == 2
    line = _one_error_line(err)
    assert "No such option: -5" in line and "yiem run -- " in line


def test_what_a_tool_prints_does_not_break_the_answer_or_the_json_lines(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    (tmp_path / "noisy.py").write_text(
        "from yiemagent import tool\n"
        "print('noisy tool file imported')\n"
        "@tool\n"
        "def shout(text: str) -> str:\n"
        '    """Upper-case a text.\n\n    Args:\n        text: The text.\n    """\n'
        "    print('DEBUG: shouting', text)\n"
        "    return text.upper()\n"
        "get_tool = lambda: shout\n"
    )
    for extra in ([], ["--json"]):
        fm = FauxModel(
            [faux_message(faux_tool_call("shout", {"text": "hi"})), "HI"], model_id="cli-noisy"
        )
        monkeypatch.setattr(cli_main_module, "resolve_model", lambda *args, m=fm, **kwargs: m.model)
        code, out, err = _run(capsys, "run", "shout hi", "--tools", str(tmp_path), *extra)
        assert code == 0
        assert "noisy tool file imported" in err and "DEBUG: shouting hi" in err
        if extra:
            assert [json.loads(line)["type"] for line in out.splitlines()][-1] == "agent_end"
        else:
            assert out == "HI\n"


def test_a_closed_stdout_is_one_clear_line_before_any_model_call(
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    faux_calculator: FauxModel,
) -> None:
    monkeypatch.setattr(sys, "stdout", None)
    code, _, err = _run(capsys, "run", "What is 17 * 23?")
    assert code == 1
    assert "standard output is closed" in _one_error_line(err)
    assert faux_calculator.contexts == []


def test_text_that_looks_like_an_emoji_code_is_shown_as_it_is(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """rich turns `:x:`, `:warning:` and the like into emoji in what it prints, so a path
    or a tool's argument holding such a code was shown changed: `--agent :x` printed
    "yiem: error: ❌ cannot read the agent file", the path gone from the one error line,
    and a call with the argument ":x: + 1" was shown as "❌ + 1". Every console of the CLI
    now prints text as it is."""
    code, _, err = _run(capsys, "run", "hi", "--tools", str(tmp_path / ":x:"))
    assert code == 1
    assert err == f"yiem: error: --tools {tmp_path / ':x:'}: not a folder\n"
    code, _, err = _run(capsys, "run", "hi", "--agent", ":warning:")
    assert code == 1 and err.startswith("yiem: error: :warning:: cannot read"), err
    fm = FauxModel(
        [faux_message(faux_tool_call("calculator", {"expression": ":x: + 1"})), "Done :x:."],
        model_id="cli-faux-emoji",
    )
    monkeypatch.setattr(cli_main_module, "resolve_model", lambda *args, **kwargs: fm.model)
    code, out, err = _run(capsys, "run", "Compute :x: + 1")
    assert code == 0 and out == "Done :x:.\n"
    lines = err.strip().splitlines()
    assert lines[0] == '→ calculator {"expression": ":x: + 1"}'
    assert lines[1].startswith("✗ calculator error: cannot evaluate ':x: + 1'"), lines
    assert "❌" not in err and "⚠" not in err


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_escape_sequences_a_tool_or_model_wrote_are_shown_not_obeyed(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """inspect_ai#4854: text an agent's tools read (a web page, a file) reached the
    operator's terminal raw, and the terminal obeyed its escape sequences: clear the
    screen, retitle the window, write over lines already printed. The tool line shows each
    control character as a symbol (ESC as ␛); the answer does too on a terminal, and goes
    as written into a file or a pipe."""
    monkeypatch.chdir(tmp_path)  # read_file reads below the working folder
    (tmp_path / "page.txt").write_text("Welcome\x1b[2J\x1b]0;pwned\x07\rALL TESTS PASSED")
    answer = "It says\x1b[1A\x1b[K fine.\r\n"
    fm = FauxModel(
        [faux_message(faux_tool_call("read_file", {"path": "page.txt"})), answer] * 2,
        model_id="cli-faux-escapes",
    )
    monkeypatch.setattr(cli_main_module, "resolve_model", lambda *args, **kwargs: fm.model)
    code, out, err = _run(capsys, "run", "What does the page say?")
    assert code == 0 and out == answer  # not a terminal: as written
    [result] = [line for line in err.splitlines() if line.startswith("← read_file:")]
    assert "\x1b" not in err and "\x07" not in err and "\r" not in err
    assert result.startswith("← read_file: Welcome␛[2J␛]0;pwned␇ ALL TESTS PASSED (")

    terminal = _Terminal()
    monkeypatch.setattr(sys, "stdout", terminal)
    code, _, _ = _run(capsys, "run", "What does the page say?")
    assert code == 0 and terminal.getvalue() == "It says␛[1A␛[K fine.\n"
