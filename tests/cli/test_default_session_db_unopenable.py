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


@pytest.mark.parametrize("command", [["sessions"], ["sessions", "release", "s1"]])
@pytest.mark.parametrize("where", ["data", "data/deeper"], ids=["is-a-file", "under-a-file"])
def test_a_user_data_folder_that_cannot_be_made_is_named_with_what_to_do(
    tmp_path: Path, command: list[str], where: str
) -> None:
    """A file where the data folder should be: the line was the bare "[Errno 17] File
    exists: '.../data'" (or "[Errno 20] Not a directory"), naming neither the session
    database nor a way out."""
    (tmp_path / "data").write_text("a file, not a folder")
    folder = tmp_path / where
    done = yiem_in(tmp_path, *command, env={"YIEM_DATA_DIR": str(folder)})
    assert done.returncode == 1
    (line,) = done.stderr.strip().splitlines()
    assert line.startswith(
        f"yiem: error: cannot make the user data folder {folder} for the session database: "
    ), line
    assert line.endswith("set YIEM_DATA_DIR to a folder that can be written, or give --sessions")
    assert "Errno" not in line
    assert (tmp_path / "data").read_text() == "a file, not a folder"
