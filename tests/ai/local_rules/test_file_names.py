"""`file_names`: a placeholder path is replaced by the file name the user gave."""

from __future__ import annotations

from collections.abc import Callable

from tests.ai._local_kit import FakeRuntime
from tests.ai.local_rules._kit import READ_FILE, conversation, notes, reply, run, scene
from yiemagent.ai.providers.local.rules import DEFAULT_POLICY, FileNames, Repaired


def test_a_placeholder_path_becomes_the_given_file_name() -> None:
    messages = conversation("Summarise notes.md please.")
    verdict = FileNames().judge(
        READ_FILE, {"path": "path/to/notes.md"}, scene(messages, [READ_FILE])
    )
    assert isinstance(verdict, Repaired)
    assert verdict.arguments == {"path": "notes.md"}


def test_the_given_name_and_a_request_without_file_names_are_left_alone() -> None:
    rule = FileNames()
    given = conversation("Summarise notes.md please.")
    assert rule.judge(READ_FILE, {"path": "notes.md"}, scene(given, [READ_FILE])) is None
    none = conversation("Summarise my notes.")
    assert rule.judge(READ_FILE, {"path": "a.md"}, scene(none, [READ_FILE])) is None


async def test_the_repair_is_in_the_details_and_switching_it_off_keeps_the_path(
    fake: Callable[..., FakeRuntime],
) -> None:
    messages = conversation("Summarise notes.md please.")
    fake([reply(("read_file", {"path": "path/to/notes.md"}))])
    repaired = await run(messages, [READ_FILE])
    assert repaired.tool_calls[0].arguments == {"path": "notes.md"}
    assert [n["action"] for n in notes(repaired, "file_names")] == ["repaired"]
    fake([reply(("read_file", {"path": "path/to/notes.md"}))])
    kept = await run(
        messages, [READ_FILE], DEFAULT_POLICY.without("file_names", "grounded", "relevant")
    )
    assert kept.tool_calls[0].arguments == {"path": "path/to/notes.md"}
    assert notes(kept, "file_names") == []
