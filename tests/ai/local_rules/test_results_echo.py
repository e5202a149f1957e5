"""`results_echo`: an answer that copies the words handing results back is no answer."""

from __future__ import annotations

from collections.abc import Callable

from hypothesis import given, strategies as st

from tests.ai._local_kit import FakeRuntime
from tests.ai.local_rules._kit import CALCULATOR, answer, conversation, notes, offer, run, turn
from yiemagent.ai.providers.local.prompt import AFTER_RESULTS, copies
from yiemagent.ai.providers.local.rules import DEFAULT_POLICY, ResultsEcho

ROUND = conversation(
    "Convert 5 kilograms to pounds.",
    ("calculator", {"expression": "5 * 2.2046"}, "5 * 2.2046 = 11.023"),
)
ECHO = answer(AFTER_RESULTS)
NEAR_ECHO = answer("These are the results of the calls you made.")


async def test_only_a_prompt_that_ends_with_results_is_checked() -> None:
    after, before = offer(), offer()
    await ResultsEcho().shape(turn(ROUND, [CALCULATOR]), after)
    await ResultsEcho().shape(turn(ROUND[:1], [CALCULATOR]), before)
    assert after.no_echo and not before.no_echo


async def test_a_copy_is_asked_again_with_its_first_word_barred(
    fake: Callable[..., FakeRuntime],
) -> None:
    runtime = fake([ECHO, answer("5 kilograms are 11.023 pounds.")])
    message = await run(ROUND, [CALCULATOR])
    assert message.text == "5 kilograms are 11.023 pounds."
    assert [n["action"] for n in notes(message, "results_echo")] == ["stopped"]
    replies = [r for r in runtime.requests if "response_format" in r]
    assert "logit_bias" not in replies[0]
    assert replies[1]["logit_bias"] == [["Those", False]]


async def test_a_second_copy_gives_way_to_the_results(
    fake: Callable[..., FakeRuntime],
) -> None:
    fake([ECHO, NEAR_ECHO])
    message = await run(ROUND, [CALCULATOR])
    assert message.text == "5 * 2.2046 = 11.023"
    assert [n["action"] for n in notes(message, "results_echo")] == ["stopped", "repaired"]


async def test_without_the_rule_the_copy_is_the_answer(
    fake: Callable[..., FakeRuntime],
) -> None:
    fake([ECHO])
    message = await run(ROUND, [CALCULATOR], DEFAULT_POLICY.without("results_echo"))
    assert message.text == AFTER_RESULTS


async def test_an_answer_that_starts_alike_and_differs_is_shown_whole(
    fake: Callable[..., FakeRuntime],
) -> None:
    fake([answer("Those are 11.023 pounds."), answer("Those")])
    assert (await run(ROUND, [CALCULATOR])).text == "Those are 11.023 pounds."
    assert (await run(ROUND, [CALCULATOR])).text == "Those"


@given(st.text(max_size=80))
def test_copies_settles_once_and_for_all(answer_text: str) -> None:
    # Once `copies` has decided on a prefix, every longer answer gets the same verdict:
    # what was shown can never turn out to be a copy.
    verdict = copies(answer_text)
    if verdict is None:
        return
    for more in ("", " the", " results", "x", ". And more words follow here"):
        assert copies(answer_text + more) is verdict
