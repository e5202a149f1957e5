"""Each built-in check of DESIGN §19 on hand-built runs: what passes, what fails, and the
reason it gives."""

from __future__ import annotations

from typing import Any, Literal
from unicodedata import normalize

import pytest
from hypothesis import given, strategies as st

from yiemagent.errors import ConfigError
from yiemagent.evals import (
    Case,
    Check,
    CheckResult,
    EvalRun,
    contains,
    equals,
    matches,
    max_cost,
    max_tool_calls,
    max_turns,
    no_tool_called,
    not_contains,
    output_is,
    run_eval,
    tool_called,
)
from yiemagent.types import AssistantMessage, TextContent, ToolCall, ToolResultMessage, UserMessage

from ._agents import make_agent


def run_of(
    text: str,
    calls: list[tuple[str, dict[str, Any]]] = (),  # type: ignore[assignment]
    *,
    expected: Any = None,
    output: Any = None,
    cost: float = 0.0,
) -> EvalRun:
    """A run that made `calls` (one turn) and answered `text` (a second turn)."""
    messages: list[Any] = [UserMessage("q")]
    if calls:
        tool_calls = [ToolCall(f"c{i}", name, args) for i, (name, args) in enumerate(calls)]
        messages.append(AssistantMessage(list(tool_calls), stop_reason="toolUse"))
        messages += [ToolResultMessage(c.id, c.name, [TextContent("r")]) for c in tool_calls]
    messages.append(AssistantMessage([TextContent(text)]))
    case = Case("c", "q", expected=expected)
    return EvalRun(case, 0, "ok", text, output, messages, cost_usd=cost)


def verdict(check: Any, run: EvalRun) -> CheckResult:
    result = check(run)
    assert isinstance(result, CheckResult)
    return result


def test_contains_ignores_case_and_needs_every_text() -> None:
    assert verdict(contains("paris"), run_of("It is Paris.")).passed
    assert verdict(contains(["paris", "france"]), run_of("Paris, France")).passed
    failed = verdict(contains(["paris", "rome"]), run_of("Paris, France"))
    assert not failed.passed and "lacks 'rome'" in failed.reason
    assert not verdict(contains("Paris", case_sensitive=True), run_of("paris")).passed


def test_contains_any_of_and_expected() -> None:
    assert verdict(contains(["x", "paris"], any_of=True), run_of("paris")).passed
    failed = verdict(contains(["x", "y"], any_of=True), run_of("paris"))
    assert not failed.passed and "none of" in failed.reason
    assert verdict(contains(), run_of("It is 391.", expected="391")).passed
    assert not verdict(contains(), run_of("It is 392.", expected="391")).passed


def test_a_pass_says_what_was_found() -> None:
    """`contains()` and `equals()` take the case's `expected`: a report showed them passed as
    "✓ contains()" with no reason, naming nothing they had looked for."""
    assert verdict(contains(), run_of("It is 391.", expected="391")).reason == "answer has '391'"
    found = verdict(contains(["paris", "france"]), run_of("Paris, France"))
    assert found.reason == "answer has each of ['paris', 'france']"
    assert verdict(equals(), run_of(" 391 ", expected="391")).reason == "answer is '391'"


@pytest.mark.parametrize(
    ("needle", "text", "found"),
    [
        ("36", "15% of 240 is 36.", True),
        ("36", "= 36.0", True),
        ("36", "360", False),
        ("36", "136", False),
        ("36", "36.5", False),
        ("1048576", "1,048,576", True),
        ("14.14", "about 14.1421", True),
        ("5", "15", False),
        # a minus sign makes another number: "5" is not the answer "-5" (nor "−5", the
        # typographic minus); a hyphen after a word or a digit is no sign
        ("5", "It is -5 degrees.", False),
        ("5", "-5", False),
        ("5", "x = \u22125", False),
        ("5", "(-5)", False),
        ("5", "pages 3-5", True),
        ("5", "GPT-5", True),
        ("5", "$5", True),
        ("-5", "It is -5 degrees.", True),
        ("-5", "It is \u22125 degrees.", True),
        ("-5", "-50", False),
        ("-5", "-5.5", False),
        ("-5", "5", False),
        ("-5", "pages 3-5", False),
        ("\u22125", "x = -5", True),
    ],
)
def test_contains_reads_a_number_as_a_whole_number(needle: str, text: str, found: bool) -> None:
    """pydantic-evals' `Contains` and promptfoo's `contains` match any substring; here a
    number is a number: "5" is not in "15" nor in "-5", and "-5" is not in "-50"."""
    assert verdict(contains(needle), run_of(text)).passed is found
    assert verdict(not_contains(needle), run_of(text)).passed is not found


def test_not_contains() -> None:
    assert verdict(not_contains(["openai", "gpt-"]), run_of("I am yiem.")).passed
    failed = verdict(not_contains(["openai"]), run_of("Made by OpenAI"))
    assert not failed.passed and "openai" in failed.reason


def test_equals_text_output_and_expected() -> None:
    assert verdict(equals("391"), run_of("  391\n")).passed
    failed = verdict(equals("391"), run_of("391."))
    assert not failed.passed and "expected '391'" in failed.reason
    assert verdict(equals({"a": 1}), run_of("{}", output={"a": 1})).passed
    assert not verdict(equals({"a": 1}), run_of("{}", output={"a": 2})).passed
    assert verdict(equals(), run_of("yes", expected="yes")).passed


def test_matches() -> None:
    assert verdict(matches(r"\b\d{2}:\d{2}\b"), run_of("It is 09:41 now")).passed
    assert not verdict(matches(r"^\d+$"), run_of("It is 9")).passed
    with pytest.raises(ConfigError, match="not a regular expression"):
        matches("(")


def test_tool_called_with_an_argument_subset() -> None:
    run = run_of("ok", [("get_time", {"place": "Tokyo, Japan", "format": "24h"})])
    assert verdict(tool_called("get_time"), run).passed
    assert verdict(tool_called("get_time", {"format": "24h"}), run).passed
    other = verdict(tool_called("get_time", {"place": "tokyo"}), run)
    assert not other.passed and "other arguments" in other.reason
    assert verdict(tool_called("get_time", {"place": "tokyo"}, substring=True), run).passed
    missing = verdict(tool_called("calculator"), run)
    assert not missing.passed and "not called (called: get_time)" in missing.reason
    nested = run_of("ok", [("f", {"a": {"b": 1, "c": 2}})])
    assert verdict(tool_called("f", {"a": {"b": 1}}), nested).passed
    assert not verdict(tool_called("f", {"a": {"b": 2}}), nested).passed


def test_tool_called_times() -> None:
    run = run_of("ok", [("calculator", {"e": "1"}), ("calculator", {"e": "2"})])
    assert verdict(tool_called("calculator", times=2), run).passed
    assert not verdict(tool_called("calculator", times=1), run).passed


def test_no_tool_called_and_max_tool_calls() -> None:
    assert verdict(no_tool_called(), run_of("hi")).passed
    run = run_of("ok", [("calculator", {}), ("read_file", {})])
    failed = verdict(no_tool_called(), run)
    assert not failed.passed and "calculator, read_file" in failed.reason
    assert verdict(no_tool_called(["get_time"]), run).passed
    assert not verdict(no_tool_called("read_file"), run).passed
    assert verdict(max_tool_calls(2), run).passed
    assert not verdict(max_tool_calls(1), run).passed


def test_output_is_value_and_schema() -> None:
    schema = {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}
    assert verdict(output_is(schema), run_of('{"n": 3}')).passed
    assert verdict(output_is(schema), run_of('```json\n{"n": 3}\n```')).passed
    bad = verdict(output_is(schema), run_of('{"n": "three"}'))
    assert not bad.passed and "at n" in bad.reason
    assert not verdict(output_is(schema), run_of("three")).passed
    assert verdict(output_is([1, 2]), run_of("[1, 2]")).passed
    assert not verdict(output_is([1, 2]), run_of("[2, 1]")).passed
    assert verdict(output_is(), run_of("", output={"n": 3}, expected={"n": 3})).passed


def test_max_turns_and_max_cost() -> None:
    two_turns = run_of("ok", [("calculator", {})], cost=0.002)
    assert verdict(max_turns(2), two_turns).passed
    failed = verdict(max_turns(1), two_turns)
    assert not failed.passed and failed.reason == "2 turns (at most 1)"
    assert verdict(max_cost(0.002), two_turns).passed
    assert not verdict(max_cost(0.001), two_turns).passed
    with pytest.raises(ConfigError):
        max_turns(-1)
    with pytest.raises(ConfigError):
        max_cost("a lot")  # type: ignore[arg-type]


def test_a_check_without_its_argument_needs_the_cases_expected() -> None:
    with pytest.raises(ConfigError, match="no 'expected'"):
        contains()(run_of("x"))


def test_a_boolean_is_not_the_number_one() -> None:
    """JSON keeps `true` and `1` apart (Python's `True == 1` does not): a model that
    passes `1` for a flag, or `true` for a count, has not made the expected call."""
    flagged = run_of("ok", [("set_alarm", {"on": 1, "count": True, "level": 2.0})])
    assert not verdict(tool_called("set_alarm", {"on": True}), flagged).passed
    assert not verdict(tool_called("set_alarm", {"count": 1}), flagged).passed
    assert verdict(tool_called("set_alarm", {"level": 2}), flagged).passed  # numbers are numbers
    assert not verdict(output_is({"ok": True}), run_of('{"ok": 1}')).passed
    assert not verdict(output_is([0]), run_of("[false]")).passed
    assert verdict(output_is({"n": 1}), run_of('{"n": 1.0}')).passed
    assert not verdict(equals(1), run_of("", output=True)).passed
    assert verdict(equals(True), run_of("", output=True)).passed


def test_a_failed_output_is_quotes_text_with_its_own_characters() -> None:
    # The reason read `got '{"city": "\u5317\u4eac"}'`: a report in any language other
    # than English showed escapes where the answer's words were.
    result = verdict(output_is({"city": "北京"}), run_of('{"city": "上海"}'))
    assert not result.passed
    assert "上海" in result.reason and "北京" in result.reason
    assert "\\u" not in result.reason


_COMPOSABLE = st.text(
    alphabet=st.sampled_from("aeiouAEIOU cnsz\u00e9\u00c5\u00f1\u0301\u0308\u030a\u0303\u1e69"),
    min_size=1,
    max_size=12,
)


@given(needle=_COMPOSABLE, before=_COMPOSABLE, case_sensitive=st.booleans())
def test_text_checks_read_composed_and_decomposed_text_alike(
    needle: str, before: str, case_sensitive: bool
) -> None:
    """`contains("café")` failed on "café" written with a combining accent (NFD, as macOS
    file names and some models give it): the same text to a reader, other code points."""
    forms: tuple[tuple[Literal["NFC", "NFD"], Literal["NFC", "NFD"]], ...] = (
        ("NFC", "NFD"),
        ("NFD", "NFC"),
    )
    for form, other in forms:
        said, answer = normalize(form, needle), normalize(other, f"{before} {needle}")
        check = contains(said, case_sensitive=case_sensitive)
        assert verdict(check, run_of(answer)).passed
        assert not verdict(not_contains(said, case_sensitive=case_sensitive), run_of(answer)).passed
        assert verdict(equals(said), run_of(normalize(other, needle))).passed


async def test_contains_and_equals_in_an_eval_read_a_decomposed_answer() -> None:
    said = {"script": "say", "text": normalize("NFD", "Un café, s'il vous plaît")}
    checks: list[Check] = [
        contains("CAFÉ"),
        equals("Un café, s'il vous plaît"),
        not_contains("café"),
    ]
    (ran,) = (await run_eval([Case("c", "Order", checks, metadata=said)], make_agent)).cases
    assert [(c.passed, c.reason) for c in ran.checks] == [
        (True, "answer has 'CAFÉ'"),
        (True, 'answer is "Un café, s\'il vous plaît"'),
        (False, f"answer has 'café' ({said['text']!r})"),  # the answer as it came
    ]
