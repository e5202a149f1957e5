"""`yiem sessions` reads a session database: `--sessions` naming a file that is not there (a
typo, another folder) is one error line naming it, exit 1, and no empty database is left
behind under the mistyped name (DESIGN §8). `yiem trace` answers the same way."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests._yiem import yiem_in
from yiemagent import TextContent, UserMessage
from yiemagent.sessions import SqliteSessionStore

pytestmark = pytest.mark.timeout(120)


@pytest.mark.parametrize("command", [("sessions",), ("sessions", "release", "s", "--yes")])
def test_a_missing_database_is_one_line_and_is_not_made(
    tmp_path: Path, command: tuple[str, ...]
) -> None:
    typo = tmp_path / "sesions.db"
    done = yiem_in(tmp_path, *command, "--sessions", str(typo), env={"NO_COLOR": "1"})
    assert (done.returncode, done.stdout) == (1, "")
    assert done.stderr == (
        f"yiem: error: --sessions {typo}: no session database there (leave --sessions out "
        "for the default one, where yiem chat and yiem serve keep theirs)\n"
    )
    assert not typo.exists()


def test_an_existing_database_is_listed(tmp_path: Path) -> None:
    db = tmp_path / "s.db"
    with SqliteSessionStore(db) as store:
        store.append("kept", UserMessage(content=[TextContent("hi")]))
    done = yiem_in(tmp_path, "sessions", "--sessions", str(db), env={"NO_COLOR": "1"})
    assert (done.returncode, done.stdout, done.stderr) == (0, "kept\n", "")


def test_an_empty_database_says_so_on_stderr(tmp_path: Path) -> None:
    """It printed nothing at all, which reads as a command that did not work; the ids
    still go alone on stdout, for scripts."""
    db = tmp_path / "s.db"
    SqliteSessionStore(db).close()
    done = yiem_in(tmp_path, "sessions", "--sessions", str(db), env={"NO_COLOR": "1"})
    assert (done.returncode, done.stdout) == (0, "")
    assert done.stderr == f"yiem: no stored sessions in {db}\n"
