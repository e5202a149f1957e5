"""`chain_step`: after results, a further call of a used tool must take something new from
them."""

from __future__ import annotations

from collections.abc import Callable

from tests.ai._local_kit import FakeRuntime
from tests.ai.local_rules._kit import READ_FILE, answer, conversation, notes, reply, run, scene
from yiemagent.ai.providers.local.rules import DEFAULT_POLICY, ChainStepRule, Dropped

_READ = conversation(
    "Read a.txt and follow it.", ("read_file", {"path": "a.txt"}, "The answer is in b.txt")
)


def test_the_next_step_runs_and_a_call_taking_nothing_new_is_dropped() -> None:
    at = scene(_READ, [READ_FILE])
    assert ChainStepRule().judge(READ_FILE, {"path": "b.txt"}, at) is None
    assert isinstance(ChainStepRule().judge(READ_FILE, {"path": "a.txt, again"}, at), Dropped)


def test_a_reader_follows_only_a_file_the_results_name() -> None:
    # "Bring the blue folder." names no file: neither a phrase made into a path nor a
    # folder is read next, while a file the result writes is.
    notes_read = conversation(
        "Read notes.txt", ("read_file", {"path": "notes.txt"}, "Bring the blue folder to dist/.")
    )
    at = scene(notes_read, [READ_FILE])
    for path in ("blue_folder", "dist/", "blue_folder.txt"):
        assert isinstance(ChainStepRule().judge(READ_FILE, {"path": path}, at), Dropped)
    pointer = scene(
        conversation("Read a.txt", ("read_file", {"path": "a.txt"}, "See docs/B.md.")),
        [READ_FILE],
    )
    assert ChainStepRule().judge(READ_FILE, {"path": "docs/b.md"}, pointer) is None


def test_before_any_result_it_says_nothing() -> None:
    at = scene(conversation("Read a.txt"), [READ_FILE])
    assert ChainStepRule().judge(READ_FILE, {"path": "anything"}, at) is None


async def test_through_the_provider_with_and_without_the_rule(
    fake: Callable[..., FakeRuntime],
) -> None:
    fake([reply(("read_file", {"path": "a.txt, again"})), answer("It is in b.txt.")])
    answered = await run(_READ, [READ_FILE], DEFAULT_POLICY.without("grounded"))
    assert answered.text == "It is in b.txt."
    assert [n["action"] for n in notes(answered, "chain_step")] == ["dropped"]
    fake([reply(("read_file", {"path": "a.txt, again"}))])
    off = DEFAULT_POLICY.without("chain_step", "grounded")
    called = await run(_READ, [READ_FILE], off)
    assert called.tool_calls[0].arguments == {"path": "a.txt, again"}
