"""`yiem trace` without `--html` (DESIGN §8, §13): it said only "Missing option '--html'".
Now the page goes beside the log (`run.jsonl` gives `run.html`) or, for a stored session,
into `SESSION_ID.html` in the current folder; a file already there that is no `yiem trace`
page is kept and the command says how to choose another; a log on standard input, which
gives no name, is one line asking for `--html`. `yiem` in a subprocess; the log is a real
`yiem run --json` against a replay server on 127.0.0.1."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests._yiem import yiem_in
from tests.ai.servers import ReplayServer, openai_chunks, sse_reply
from yiemagent.sessions import SqliteSessionStore
from yiemagent.types import AssistantMessage, TextContent, UserMessage

pytestmark = pytest.mark.timeout(180)

TITLE = "<title>yiem trace: "


def _logged_run(tmp_path: Path) -> Path:
    with ReplayServer() as server:
        server.enqueue(sse_reply(openai_chunks({"content": "Four."})))
        done = yiem_in(tmp_path, "run", "2 + 2?", "--json", "--model", "openai-compatible/m",
                       "--base-url", server.url + "/v1")  # fmt: skip
    assert done.returncode == 0, done.stderr
    logs = tmp_path / "logs"
    logs.mkdir()
    log = logs / "run.jsonl"
    log.write_text(done.stdout)
    return log


def test_the_page_goes_beside_the_log_and_replaces_only_its_own(tmp_path: Path) -> None:
    log = _logged_run(tmp_path)
    page = log.with_name("run.html")
    for _ in range(2):  # the second time over the page the first wrote
        done = yiem_in(tmp_path, "trace", str(log))
        assert done.returncode == 0, done.stderr
        assert done.stderr == f"wrote {page} (1 turn, 1 call)\n"
        assert TITLE in page.read_text()
    page.write_text("my notes")
    done = yiem_in(tmp_path, "trace", str(log))
    assert done.returncode == 1
    assert done.stderr == (
        f"yiem: error: {page} exists and is no yiem trace page, so it is kept: give --html "
        "FILE for the page, or --html - for standard output\n"
    )
    assert page.read_text() == "my notes"


def test_a_stored_session_goes_to_its_id_in_the_current_folder(tmp_path: Path) -> None:
    db = tmp_path / "s.db"
    with SqliteSessionStore(db) as store:
        store.append("launch-7", UserMessage([TextContent("When?")]))
        store.append("launch-7", AssistantMessage([TextContent("Friday.")], model="m"))
    done = yiem_in(tmp_path, "trace", "launch-7", "--sessions", str(db))
    assert done.returncode == 0, done.stderr
    assert done.stderr == "wrote launch-7.html (1 turn, 1 call)\n"
    assert TITLE in (tmp_path / "launch-7.html").read_text()


def test_a_log_on_standard_input_asks_for_html_in_one_line(tmp_path: Path) -> None:
    done = yiem_in(tmp_path, "trace", "-", input="")
    assert done.returncode == 1 and done.stdout == ""
    assert done.stderr == (
        "yiem: error: the log is on standard input, so the page has no default name: give "
        "--html FILE for the page, or --html - for standard output\n"
    )
