"""One name for one concept on the command line: every `yiem` command that reads the stored
sessions names their store `--sessions` (a SQLite file or a postgresql:// URL), as
`yiem serve` and `yiem sessions` do; `yiem trace` also keeps `--db`, its earlier spelling,
out of `--help`."""

from __future__ import annotations

from pathlib import Path

import pytest

from yiemagent.cli.main import main
from yiemagent.sessions import SqliteSessionStore
from yiemagent.types import AssistantMessage, TextContent, UserMessage


@pytest.fixture
def db(tmp_path: Path) -> Path:
    path = tmp_path / "sessions.db"
    with SqliteSessionStore(path) as store:
        store.append("s1", UserMessage("What time is it?"))
        store.append("s1", AssistantMessage([TextContent("Noon.")]))
    return path


@pytest.mark.parametrize("flag", ["--sessions", "--db"])
def test_yiem_trace_reads_the_store_sessions_names(
    db: Path, tmp_path: Path, flag: str, capsys: pytest.CaptureFixture[str]
) -> None:
    page = tmp_path / "s1.html"
    assert main(["trace", "s1", flag, str(db), "--html", str(page)]) == 0, capsys.readouterr()
    assert "Noon." in page.read_text(encoding="utf-8")


def test_yiem_sessions_lists_the_store_sessions_names(
    db: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["sessions", "--sessions", str(db)]) == 0
    assert capsys.readouterr().out.split() == ["s1"]


@pytest.mark.parametrize("command", ["serve", "sessions", "trace"])
def test_every_reader_of_the_store_offers_sessions_and_only_it(
    command: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main([command, "--help"]) == 0
    shown = capsys.readouterr().out
    assert "--sessions" in shown and "--db" not in shown  # the earlier name works, unshown


def test_yiem_trace_given_both_names_says_they_are_one(
    db: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["trace", "s1", "--sessions", str(db), "--db", str(db)]
    assert main([*argv, "--html", str(tmp_path / "p.html")]) != 0
    assert capsys.readouterr().err.strip().splitlines() == [
        "yiem: error: --db is --sessions by its earlier name; give one of them"
    ]
