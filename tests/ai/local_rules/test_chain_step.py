"""`chain_step`: after results, a further call of a used tool must take something new from
them, and a computation may not feed its result back into an earlier call of its tool."""

from __future__ import annotations

from collections.abc import Callable

from tests.ai._local_kit import FakeRuntime
from tests.ai.local_rules._kit import (
    CALCULATOR,
    READ_FILE,
    answer,
    conversation,
    notes,
    reply,
    run,
    scene,
    tool,
)
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


_NUMBER = {"type": "integer", "description": "x"}
TIMES = tool("times", {"a": _NUMBER, "b": _NUMBER})


def test_a_result_fed_back_into_its_own_call_is_dropped() -> None:
    # times(14, 6) gave 84: times(84, 6) and times(84, 84) repeat the computation on its
    # own result (the small model goes on until the round budget); times(84, 5) brings
    # the request's 5 and runs.
    asked = conversation("Work out 14 times 6, then times 5.", ("times", {"a": 14, "b": 6}, "84"))
    at = scene(asked, [TIMES])
    for again in ({"a": 84, "b": 6}, {"a": 84, "b": 84}, {"a": 6, "b": 84}):
        assert isinstance(ChainStepRule().judge(TIMES, again, at), Dropped), again
    assert ChainStepRule().judge(TIMES, {"a": 84, "b": 5}, at) is None


def test_an_expression_on_its_own_result_is_dropped_and_a_new_step_runs() -> None:
    # The calculator repeats the expression in its result; its numbers are still the
    # earlier call's, not new ones.
    asked = conversation(
        "What is 30% of 70, plus 4?", ("calculator", {"expression": "30% * 70"}, "30% * 70 = 21")
    )
    at = scene(asked, [CALCULATOR])
    for again in ("21 * 70", "21 / 30", "21 * 21"):
        judged = ChainStepRule().judge(CALCULATOR, {"expression": again}, at)
        assert isinstance(judged, Dropped), again
    assert ChainStepRule().judge(CALCULATOR, {"expression": "21 + 4"}, at) is None
    halved = ChainStepRule().judge(CALCULATOR, {"expression": "21 / 2"}, at)
    assert halved is None  # a number no call held: a step the request may ask in words


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
