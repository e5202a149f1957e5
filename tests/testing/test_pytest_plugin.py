"""The `yiem_cassette` fixture and `--cassette-mode once|new|none` (DESIGN §19), run in a
pytest of their own on a test file that talks to a faux model through an Agent."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow  # each test runs pytest itself, several times

TEST_FILE = """
from yiemagent import Agent
from yiemagent.ai.providers.faux import FauxModel


def test_talk(yiem_cassette):
    fm = FauxModel(["Hello there."])
    agent = Agent(model=yiem_cassette(fm.model))
    assert agent.prompt_sync("Hi").text == "Hello there."
    mode = "recorded" if yiem_cassette.recording else "replayed"
    print(f"[{mode}, {fm.call_count} model calls]")
"""


def run_pytest(folder: Path, *options: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "yiemagent.testing.pytest_plugin",
         "-p", "no:cacheprovider", "-q", "-s", "test_talk.py", *options],
        capture_output=True,
        text=True,
        cwd=folder,
        timeout=300,
    )  # fmt: skip


def test_once_records_then_replays_new_records_again_none_only_replays(tmp_path: Path) -> None:
    (tmp_path / "test_talk.py").write_text(TEST_FILE, encoding="utf-8")
    cassette = tmp_path / "cassettes" / "test_talk" / "test_talk.jsonl"

    first = run_pytest(tmp_path)
    assert first.returncode == 0, first.stdout + first.stderr
    assert "[recorded, 1 model calls]" in first.stdout
    assert len(cassette.read_text().splitlines()) == 1

    second = run_pytest(tmp_path, "--cassette-mode", "once")
    assert second.returncode == 0 and "[replayed, 0 model calls]" in second.stdout

    offline = run_pytest(tmp_path, "--cassette-mode", "none")
    assert offline.returncode == 0 and "[replayed, 0 model calls]" in offline.stdout

    again = run_pytest(tmp_path, "--cassette-mode", "new")
    assert again.returncode == 0 and "[recorded, 1 model calls]" in again.stdout
    assert len(cassette.read_text().splitlines()) == 1  # replaced, not appended to

    cassette.unlink()
    missing = run_pytest(tmp_path, "--cassette-mode", "none")
    assert missing.returncode == 1
    assert f"no cassette {cassette} (--cassette-mode none only replays)" in missing.stdout
    assert not cassette.exists()


def test_a_replay_that_differs_says_how_to_record_again(tmp_path: Path) -> None:
    # The failure showed the diff only: nothing said that a meant change (an edited
    # prompt) needs --cassette-mode new, and the default mode kept replaying the old one.
    test_file = tmp_path / "test_talk.py"
    test_file.write_text(TEST_FILE, encoding="utf-8")
    assert run_pytest(tmp_path).returncode == 0
    test_file.write_text(TEST_FILE.replace('"Hi"', '"Hi there"'), encoding="utf-8")
    cassette = tmp_path / "cassettes" / "test_talk" / "test_talk.jsonl"
    for mode in ("once", "none"):
        changed = run_pytest(tmp_path, "--cassette-mode", mode)
        assert changed.returncode == 1
        assert "CassetteMismatch" in changed.stdout
        hint = (
            f"The test sent other requests than its cassette {cassette} holds. If the change"
            " is meant, record it again: pytest --cassette-mode new test_talk.py::test_talk"
        )
        assert hint in " ".join(changed.stdout.split()), changed.stdout
    assert run_pytest(tmp_path, "--cassette-mode", "new").returncode == 0
    assert run_pytest(tmp_path, "--cassette-mode", "none").returncode == 0


def test_a_failure_that_is_no_mismatch_gets_no_hint(tmp_path: Path) -> None:
    (tmp_path / "test_talk.py").write_text(TEST_FILE, encoding="utf-8")
    assert run_pytest(tmp_path).returncode == 0
    broken = TEST_FILE.replace('== "Hello there."', '== "Goodbye."')
    (tmp_path / "test_talk.py").write_text(broken, encoding="utf-8")
    failed = run_pytest(tmp_path)
    assert failed.returncode == 1
    assert "record it again" not in failed.stdout


UNPRINTABLE_FAILURE = """

class Unprintable(Exception):
    def __str__(self):
        raise RuntimeError("str exploded")


def test_talk(yiem_cassette):
    fm = FauxModel(["Hello there."])
    Agent(model=yiem_cassette(fm.model)).prompt_sync("Hi")
    raise Unprintable()
"""


def test_a_failure_whose_text_cannot_be_made_is_reported_as_a_failure(tmp_path: Path) -> None:
    (tmp_path / "test_talk.py").write_text(TEST_FILE, encoding="utf-8")
    assert run_pytest(tmp_path).returncode == 0
    header = TEST_FILE.split("def test_talk", 1)[0]
    (tmp_path / "test_talk.py").write_text(header + UNPRINTABLE_FAILURE, encoding="utf-8")
    failed = run_pytest(tmp_path)
    assert failed.returncode == 1, failed.stdout + failed.stderr  # 3: an internal error
    assert "INTERNALERROR" not in failed.stdout + failed.stderr
    assert "record it again" not in failed.stdout


def test_the_mode_is_checked(tmp_path: Path) -> None:
    (tmp_path / "test_talk.py").write_text(TEST_FILE, encoding="utf-8")
    done = run_pytest(tmp_path, "--cassette-mode", "always")
    assert done.returncode == 4
    assert "argument --cassette-mode: invalid choice: 'always'" in done.stderr


FLAKY_FILE = """
import os

from yiemagent import Agent
from yiemagent.ai.providers.faux import FauxModel


def test_talk(yiem_cassette):
    fm = FauxModel([os.environ.get("ANSWER", "Hello there.")])
    agent = Agent(model=yiem_cassette(fm.model))
    text = agent.prompt_sync("Hi").text
    assert text == "Hello there.", f"[failed on {text!r}]"
    print(f"[{'recorded' if yiem_cassette.recording else 'replayed'}: {text}]")
"""


def test_a_test_that_fails_while_recording_leaves_no_cassette(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """vcr/vcr #765 (`record_on_error`): a test that failed while recording kept its
    cassette, so every later run replayed the failure (a 429, a cut-off call) until
    someone deleted the file. Here `once` replayed the failing answer for ever, and `new`
    threw away a good cassette for a failed recording."""
    (tmp_path / "test_talk.py").write_text(FLAKY_FILE, encoding="utf-8")
    cassette = tmp_path / "cassettes" / "test_talk" / "test_talk.jsonl"
    monkeypatch.setenv("ANSWER", "Rate limited, try later.")

    failed = run_pytest(tmp_path)
    assert failed.returncode == 1 and "[failed on 'Rate limited, try later.']" in failed.stdout
    assert not cassette.exists() and not cassette.with_name(cassette.name + ".part").exists()

    monkeypatch.setenv("ANSWER", "Hello there.")
    passed = run_pytest(tmp_path)  # recorded afresh, not the failure replayed
    assert passed.returncode == 0 and "[recorded: Hello there.]" in passed.stdout
    good = cassette.read_text()

    monkeypatch.setenv("ANSWER", "Rate limited, try later.")
    failed_anew = run_pytest(tmp_path, "--cassette-mode", "new")
    assert failed_anew.returncode == 1
    assert cassette.read_text() == good  # the good cassette stays
    replayed = run_pytest(tmp_path, "--cassette-mode", "none")
    assert replayed.returncode == 0 and "[replayed: Hello there.]" in replayed.stdout


TWO_AGENTS_FILE = """
from yiemagent import Agent
from yiemagent.ai.providers.faux import FauxModel


def test_talk(yiem_cassette):
    answers = []
    for text in ("first", "second"):
        fm = FauxModel([text])
        agent = Agent(model=yiem_cassette(fm.model))
        answers.append(agent.prompt_sync("Hi").text)
    print(f"[{'recorded' if yiem_cassette.recording else 'replayed'}: {answers}]")
"""


def test_two_models_asking_the_same_replay_each_its_own_answer(tmp_path: Path) -> None:
    """kevin1024/vcrpy #842: identical requests replayed the first recording each time,
    not the recordings in order. Here each `yiem_cassette(model)` call of a test replayed
    the cassette afresh, so the second agent asking "Hi" got the first agent's answer
    (and an eval's repeats, each agent made anew, all replayed the first run)."""
    (tmp_path / "test_talk.py").write_text(TWO_AGENTS_FILE, encoding="utf-8")
    recorded = run_pytest(tmp_path)
    assert "[recorded: ['first', 'second']]" in recorded.stdout, recorded.stdout
    replayed = run_pytest(tmp_path, "--cassette-mode", "none")
    assert "[replayed: ['first', 'second']]" in replayed.stdout, replayed.stdout


SAME_NAMES_FILE = """
import pytest

from yiemagent import Agent
from yiemagent.ai.providers.faux import FauxModel


def talk(yiem_cassette, answer):
    fm = FauxModel([answer])
    text = Agent(model=yiem_cassette(fm.model)).prompt_sync("Hi").text
    print(f"[{answer}: {text}, {yiem_cassette.path.name}]")
    assert text == answer


class TestOne:
    def test_talk(self, yiem_cassette):
        talk(yiem_cassette, "one")


class TestTwo:
    def test_talk(self, yiem_cassette):
        talk(yiem_cassette, "two")


@pytest.mark.parametrize("answer", ["a/b", "a b", pytest.param("x" * 300, id="x" * 300)])
def test_param(yiem_cassette, answer):
    talk(yiem_cassette, answer)
"""


def test_tests_whose_names_clean_up_alike_keep_cassettes_apart(tmp_path: Path) -> None:
    """pytest-insta #267 and pytest-recording's class-qualified names: a method of two
    test classes, or parameters that differ only in characters a file name cannot hold
    ("a/b", "a b"), were given one cassette, so the second test replayed the first one's
    answer; and a long parameter made a file name the system refuses
    (kiwicom/pytest-recording #172)."""
    (tmp_path / "test_talk.py").write_text(SAME_NAMES_FILE, encoding="utf-8")
    for mode in ("once", "none"):
        done = run_pytest(tmp_path, "--cassette-mode", mode)
        assert done.returncode == 0, done.stdout + done.stderr
    names = sorted(p.name for p in (tmp_path / "cassettes" / "test_talk").iterdir())
    assert len(names) == 5, names
    assert "TestOne.test_talk.jsonl" in names and "TestTwo.test_talk.jsonl" in names
    assert all(len(name) <= 130 for name in names), names


RERUN_CONFTEST = """
from _pytest.runner import runtestprotocol


def pytest_runtest_protocol(item, nextitem):
    # a failed test runs once more, the same item again, as pytest-rerunfailures does it
    item.ihook.pytest_runtest_logstart(nodeid=item.nodeid, location=item.location)
    reports = runtestprotocol(item, nextitem=nextitem, log=False)
    if any(report.failed for report in reports):
        reports = runtestprotocol(item, nextitem=nextitem, log=False)
    for report in reports:
        item.ihook.pytest_runtest_logreport(report=report)
    item.ihook.pytest_runtest_logfinish(nodeid=item.nodeid, location=item.location)
    return True
"""

FAILS_ONCE_FILE = """
from pathlib import Path

from yiemagent import Agent
from yiemagent.ai.providers.faux import FauxModel

TRIES = Path(__file__).with_name("tries")


def test_talk(yiem_cassette):
    fm = FauxModel(["Hello there."])
    text = Agent(model=yiem_cassette(fm.model)).prompt_sync("Hi").text
    tries = int(TRIES.read_text()) + 1 if TRIES.exists() else 1
    TRIES.write_text(str(tries))
    print(f"[try {tries}: {text}]")
    assert tries > 1, "fails the first time"
"""


def test_a_test_that_passes_when_run_again_keeps_its_recording(tmp_path: Path) -> None:
    """A flaky test run again by pytest-rerunfailures (the same item, once more) passed on
    the second try, yet its recording was dropped as a failed test's: the first try's
    failure stayed noted on the item, so `once` recorded afresh on every run and `none`
    found no cassette."""
    (tmp_path / "conftest.py").write_text(RERUN_CONFTEST, encoding="utf-8")
    (tmp_path / "test_talk.py").write_text(FAILS_ONCE_FILE, encoding="utf-8")
    cassette = tmp_path / "cassettes" / "test_talk" / "test_talk.jsonl"
    done = run_pytest(tmp_path)
    assert done.returncode == 0 and "[try 2: Hello there.]" in done.stdout, done.stdout
    assert cassette.exists()
    replayed = run_pytest(tmp_path, "--cassette-mode", "none")
    assert replayed.returncode == 0 and "[try 3: Hello there.]" in replayed.stdout
