"""The user data folder's session database cannot be opened (a folder of that name, a
named pipe) and no `--sessions` was given: the one line names the database, not the
option. It read "--sessions : cannot open ...", naming an option the user never gave,
with an empty value (DESIGN §8)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests._yiem import yiem_in


@pytest.mark.parametrize("kind", ["folder", "pipe"])
def test_yiem_sessions_names_the_default_database_not_the_option(tmp_path: Path, kind: str) -> None:
    db = tmp_path / "data" / "sessions.db"
    if kind == "folder":
        db.mkdir(parents=True)
    else:
        db.parent.mkdir()
        os.mkfifo(db)
    done = yiem_in(tmp_path, "sessions")
    assert done.returncode != 0
    (line,) = done.stderr.strip().splitlines()
    assert line.startswith(f"yiem: error: cannot open the session database '{db}'"), line
    assert "--sessions" not in line
