"""The note after an answer cut off (stop reason "length") names the limit that cut it:
the user's `--max-tokens N` when given, the model's output limit otherwise, in `yiem run`
and `yiem chat` alike."""

from __future__ import annotations

import importlib
import os
import subprocess
import sys
from pathlib import Path

import pytest
from rich.text import Text

from yiemagent.ai.providers.faux import FauxModel, faux_message
from yiemagent.cli.chat._app import ChatApp
from yiemagent.cli.chat._view import LiveView
from yiemagent.cli.chat.setup import ChatOptions, build_setup
from yiemagent.cli.main import main
from yiemagent.cli.render import CUT_OFF
from yiemagent.types import AgentEndEvent, MessageEndEvent, Usage

cli_main_module = importlib.import_module("yiemagent.cli.main")

CUT_TEXT = "The piston is connected to a crank"


def run_cut_off(
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    text: str,
    output_tokens: int,
    *flags: str,
) -> tuple[str, str]:
    """`yiem run` on a model whose one answer is `text`, cut off after `output_tokens`."""
    answer = faux_message(*([text] if text else []), stop_reason="length")
    answer.usage = Usage(input=20, output=output_tokens)
    fm = FauxModel([answer])
    monkeypatch.setattr(cli_main_module, "resolve_model", lambda *args, **kwargs: fm.model)
    code = main(["run", "Explain engines", *flags])
    out, err = capsys.readouterr()
    assert code == 0, err
    return out, err


def test_the_note_names_the_users_max_tokens(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    out, err = run_cut_off(capsys, monkeypatch, CUT_TEXT, 8, "--max-tokens", "8")
    assert out == CUT_TEXT + "\n"
    assert "⋯ cut off: the answer reached --max-tokens 8; raise it for a longer answer" in err
    assert "model's output limit" not in err


def test_an_answer_with_no_text_says_the_limit_came_before_any(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """With `--max-tokens 8` the embedded model spent its tokens before any text: nothing
    was printed but a note about "the answer" as if one had been shown."""
    out, err = run_cut_off(capsys, monkeypatch, "", 8, "--max-tokens", "8")
    assert out == ""
    assert "⋯ cut off: --max-tokens 8 was reached before any text of the answer" in err


@pytest.mark.parametrize(
    ("flags", "output_tokens"),
    [((), 300), (("--max-tokens", "500"), 300)],
    ids=["no-max-tokens", "model-limit-first"],
)
def test_the_models_own_limit_is_named_when_it_cut_the_answer(
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    flags: tuple[str, ...],
    output_tokens: int,
) -> None:
    _, err = run_cut_off(capsys, monkeypatch, CUT_TEXT, output_tokens, *flags)
    assert CUT_OFF in err
    assert "--max-tokens" not in err


def test_the_chat_names_its_max_tokens_too() -> None:
    lines: list[Text] = []
    view = LiveView(lines.append, lambda: None)
    view.max_tokens = 16
    answer = faux_message(CUT_TEXT, stop_reason="length")
    answer.usage = Usage(input=20, output=16)
    view(MessageEndEvent(message=answer))
    view(AgentEndEvent(messages=[answer]))
    said = [line.plain for line in lines]
    assert "⋯ cut off: the answer reached --max-tokens 16; raise it for a longer answer" in said


@pytest.mark.local_model
@pytest.mark.slow
def test_the_embedded_model_cut_off_by_max_tokens_says_which_limit(tmp_path: Path) -> None:
    proc = subprocess.run(
        [
            str(Path(sys.executable).parent / "yiem"),
            *("run", "Explain what a bicycle is.", "--max-tokens", "8", "--tools", str(tmp_path)),
        ],
        capture_output=True,
        text=True,
        timeout=240,
        env={**os.environ, "PYTHONUNBUFFERED": "1", "COLUMNS": "200"},
    )
    assert proc.returncode == 0, proc.stderr
    assert "⋯ cut off:" in proc.stderr and "--max-tokens 8" in proc.stderr, proc.stderr
    assert "model's output limit" not in proc.stderr


@pytest.mark.parametrize(
    ("team", "flag"),
    [("[agents.brief]\nmax_tokens = 12\n", None), (None, 12)],
    ids=["agent-file", "max-tokens"],
)
def test_the_chat_knows_the_limit_its_agent_has(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, team: str | None, flag: int | None
) -> None:
    """`--max-tokens` or, with `--agent`, the file's `max_tokens`: the one the note names."""
    monkeypatch.setenv("YIEM_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.delenv("YIEM_CHAT_FAUX_SCRIPT", raising=False)
    file = tmp_path / "team.toml"
    if team is not None:
        file.write_text(team)
    options = ChatOptions(
        model="openai-compatible/m",
        base_url="http://127.0.0.1:9/v1",  # never called
        agent=str(file) if team is not None else None,
        max_tokens=flag,
    )
    setup = build_setup(options)
    try:
        assert ChatApp(setup).view.max_tokens == 12
    finally:
        setup.sessions.close()
