"""`yiem trace SESSION --db FILE` on a session database damaged on disk (a bad sector, a
copy cut short, an edit by hand): one line naming the file and the session (DESIGN §8)."""

from __future__ import annotations

from pathlib import Path

import pytest

from yiemagent.cli.main import main
from yiemagent.sessions import SqliteSessionStore
from yiemagent.types import AssistantMessage, TextContent, UserMessage


def test_a_damaged_session_database_is_one_line_naming_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """SQLite's "database disk image is malformed" was the whole message: which file, and
    which session, it did not say."""
    db = tmp_path / "sessions.db"
    with SqliteSessionStore(db) as store:
        for n in range(300):
            store.append("s", UserMessage(f"question {n} " + "q" * 500))
            store.append("s", AssistantMessage([TextContent(f"answer {n} " + "a" * 500)]))
    data = bytearray(db.read_bytes())
    middle = len(data) // 2
    data[middle : middle + 3000] = b"U" * 3000  # pages in the middle of the messages table
    db.write_bytes(bytes(data))
    page = tmp_path / "s.html"

    assert main(["trace", "s", "--db", str(db), "--html", str(page)]) == 1
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert (
        line == f"yiem: error: cannot read session 's' from {db}: database disk image is malformed"
    )
    assert not page.exists()
