"""The built-in checks: each is a small callable object with a `name`, called with an
`EvalRun` and returning a `CheckResult` whose reason says what it saw. Text checks read the
final answer; tool checks read the run's tool calls, its sub-agents' included unless
`nested=False` (as a span-based check sees every tool call under the case's run);
`max_turns` and `max_cost` its totals.
`judge` (an LLM grading the answer) lives in `_judge`."""

from __future__ import annotations

import json
import math
import re
import unicodedata
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from yiemagent.errors import ConfigError
from yiemagent.evals._case import CheckResult, EvalRun, describe_args
from yiemagent.types.messages import ToolCall, ToolResultMessage
from yiemagent.types.tools import is_whole_number

__all__ = [
    "contains",
    "equals",
    "matches",
    "max_cost",
    "max_tool_calls",
    "max_turns",
    "no_tool_called",
    "not_contains",
    "output_is",
    "tool_called",
]

_NUMBER = re.compile(r"-?\d+(\.\d+)?")


def _found(text: str, needle: str, case_sensitive: bool) -> bool:
    """Whether `needle` is in `text`; a needle that is a number only as a whole number: "36"
    is not in "360", "136", "36.5" or "-36" but is in "= 36", "36.0" and "pages 30-36" (a
    hyphen after a word or a digit is no sign); "1048576" is in "1,048,576"; "14.14" is in
    "14.1421" (decimals may go on); "-5" is in "-5" and "−5" (U+2212) but not in "-50".
    Both are compared in Unicode's composed form (NFC): "café" typed as e + U+0301 is in
    "café" typed with é, U+00E9, as a reader sees them alike."""
    text, needle = _nfc(text), _nfc(needle)
    if not case_sensitive:
        text, needle = text.lower(), needle.lower()
    needle = needle.replace("\u2212", "-")
    if not _NUMBER.fullmatch(needle):
        return needle in text
    text = re.sub(r"(?<=\d),(?=\d{3})", "", text.replace("\u2212", "-"))
    # a signed needle: no word or digit before its minus; else no digit before, nor a minus
    # that is a sign (at the start, or after no word)
    signed = needle.startswith("-")
    before = r"(?<![\w.])" if signed else r"(?<![\d.])(?<!^-)(?<![^\w)]-)"
    after = "" if "." in needle else r"(?!\d|\.\d*[1-9])"
    return re.search(f"{before}{re.escape(needle)}{after}", text) is not None


def _nfc(text: str) -> str:
    """`text` in Unicode's composed form (NFC), as most keyboards and models write it."""
    return unicodedata.normalize("NFC", text)


def _texts(value: Any, what: str) -> list[str]:
    if isinstance(value, str):
        return [value]
    if (
        isinstance(value, Sequence)
        and value
        and all(isinstance(v, str | int | float) for v in value)
    ):
        return [str(v) for v in value]
    if isinstance(value, int | float) and not isinstance(value, bool):
        return [str(value)]
    raise ConfigError(f"{what} takes a text or a list of texts, not {value!r}")


def _expected(run: EvalRun, given: Any, check: str) -> Any:
    return _given_or_expected(given, run.case.expected, check)


def _given_or_expected(given: Any, expected: Any, check: str) -> Any:
    if given is not None:
        return given
    if expected is None:
        raise ConfigError(f"{check} has no argument and the case has no 'expected'")
    return expected


@dataclass(frozen=True, slots=True)
class _Contains:
    """The answer contains `text` (a list: every text; with `any_of`: at least one),
    ignoring case unless `case_sensitive`. A text that is a number matches only a whole
    number ("36" is not in "360"). No `text`: the case's `expected`."""

    text: str | Sequence[str] | None = None
    any_of: bool = False
    case_sensitive: bool = False

    def __post_init__(self) -> None:
        if self.text is not None:
            _texts(self.text, "contains")

    @property
    def name(self) -> str:
        return f"contains({describe_args([self.text] if self.text is not None else [], {})})"

    def check_expected(self, expected: Any) -> None:
        """Refuse, when a dataset loads, a case this check could only fail at every run:
        no `text` and an `expected` that is missing or not a text."""
        if self.text is None:
            _texts(_given_or_expected(None, expected, "contains"), "contains")

    def __call__(self, run: EvalRun) -> CheckResult:
        wanted = _texts(_expected(run, self.text, "contains"), "contains")
        hits = [t for t in wanted if _found(run.text, t, self.case_sensitive)]
        if self.any_of:
            if hits:
                return CheckResult(True, f"answer has {hits[0]!r}")
            return CheckResult(False, f"answer has none of {wanted} ({_quote(run.text)})")
        missing = [t for t in wanted if t not in hits]
        if missing:
            return CheckResult(False, f"answer lacks {missing[0]!r} ({_quote(run.text)})")
        # Said on a pass too: `contains()` alone (the case's `expected`) showed in a report
        # as "✓ contains()", naming nothing it had looked for.
        return CheckResult(
            True,
            f"answer has {wanted[0]!r}" if len(wanted) == 1 else f"answer has each of {wanted}",
        )


@dataclass(frozen=True, slots=True)
class _NotContains:
    """The answer contains none of `text` (a text or a list), ignoring case unless
    `case_sensitive`; numbers as in `contains`."""

    text: str | Sequence[str]
    case_sensitive: bool = False

    def __post_init__(self) -> None:
        _texts(self.text, "not_contains")

    @property
    def name(self) -> str:
        return f"not_contains({describe_args([self.text], {})})"

    def __call__(self, run: EvalRun) -> CheckResult:
        for item in _texts(self.text, "not_contains"):
            if _found(run.text, item, self.case_sensitive):
                return CheckResult(False, f"answer has {item!r} ({_quote(run.text)})")
        return CheckResult(True)


@dataclass(frozen=True, slots=True)
class _Equals:
    """The answer equals `value`: the validated output when the run has one (a text
    `value` may also equal the answer's text), else the answer's text with surrounding
    white space removed, both texts in Unicode's composed form (NFC). No `value`: the
    case's `expected`."""

    value: Any = None

    @property
    def name(self) -> str:
        return f"equals({describe_args([self.value] if self.value is not None else [], {})})"

    def check_expected(self, expected: Any) -> None:
        """Refuse, when a dataset loads, no `value` in a case without `expected`."""
        _given_or_expected(self.value, expected, "equals")

    def __call__(self, run: EvalRun) -> CheckResult:
        wanted = _expected(run, self.value, "equals")
        if run.output is not None and _json_equal(run.output, wanted):  # a text output's value
            return CheckResult(True, f"output is {_quote(wanted)}")
        if run.output is not None and not isinstance(wanted, str):
            got: Any = run.output
        else:
            got = _nfc(run.text.strip())
            wanted = _nfc(str(wanted).strip())
        if _json_equal(got, wanted):  # said, as `contains` says it: `equals()` names nothing
            return CheckResult(
                True, f"{'output' if run.output is not None else 'answer'} is {_quote(wanted)}"
            )
        return CheckResult(False, f"got {_quote(got)}, expected {_quote(wanted)}")


@dataclass(frozen=True, slots=True)
class _Matches:
    """The answer matches the regular expression `regex` somewhere (`re.search`),
    ignoring case unless `case_sensitive`."""

    regex: str
    case_sensitive: bool = False

    def __post_init__(self) -> None:
        try:
            re.compile(self.regex)
        except (re.error, TypeError) as exc:
            raise ConfigError(
                f"matches: {self.regex!r} is not a regular expression: {exc}"
            ) from None

    @property
    def name(self) -> str:
        return f"matches({self.regex!r})"

    def __call__(self, run: EvalRun) -> CheckResult:
        flags = 0 if self.case_sensitive else re.IGNORECASE
        found = re.search(self.regex, run.text, flags)
        if found is None:
            return CheckResult(False, f"no match for {self.regex!r} in {_quote(run.text)}")
        return CheckResult(True, f"matched {found.group(0)!r}")


def _subset(want: Any, got: Any, substring: bool) -> bool:
    if isinstance(want, Mapping):
        return isinstance(got, Mapping) and all(
            key in got and _subset(value, got[key], substring) for key, value in want.items()
        )
    if substring and isinstance(want, str):
        return want.lower() in str(got).lower()
    return _json_equal(want, got)


def _json_equal(a: Any, b: Any) -> bool:
    """Equal as JSON values: Python's `==`, except that a boolean equals only a boolean
    (`True == 1` in Python; `true` and `1` are different JSON values), also inside lists
    and objects. Numbers compare by value (`1` equals `1.0`)."""
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool) and a is b
    if isinstance(a, Mapping) and isinstance(b, Mapping):
        return a.keys() == b.keys() and all(_json_equal(a[k], b[k]) for k in a)
    if isinstance(a, list | tuple) and isinstance(b, list | tuple):
        return len(a) == len(b) and all(_json_equal(x, y) for x, y in zip(a, b, strict=True))
    return bool(a == b)


@dataclass(frozen=True, slots=True)
class _Made:
    """A tool call of the run: the call, the arguments its tool ran with (validation may
    have coerced "3" to 3; as sent when it did not run) and the sub-agent that made it
    ("" for the agent's own)."""

    call: ToolCall
    args: Any
    by: str


def _made(run: EvalRun, nested: bool) -> list[_Made]:
    """The run's tool calls, its own first, then (`nested`) its sub-agents' at any depth.
    A sub-run's call ids may repeat the parent's, so its results are matched within it."""
    ran: dict[tuple[tuple[str, ...], str], Any] = {
        ((), r.tool_call_id): r.executed_arguments
        for r in run.tool_results
        if r.executed_arguments is not None
    }
    made = [_Made(c, ran.get(((), c.id), c.arguments), "") for c in run.tool_calls]
    if nested:
        for path, message in run.sub_agent_messages:
            if isinstance(message, ToolResultMessage) and message.executed_arguments is not None:
                ran[(path, message.tool_call_id)] = message.executed_arguments
        made += [
            _Made(c, ran.get((path, c.id), c.arguments), path[-1] if path else "")
            for path, c in run.sub_agent_tool_calls
        ]
    return made


def _who(made: _Made) -> str:
    return f"{made.call.name}{_by(made)}"


def _by(made: _Made) -> str:
    """What names a sub-agent's call in a reason, `" (by helper)"`; empty for the agent's own."""
    return f" (by {made.by})" if made.by else ""


@dataclass(frozen=True, slots=True)
class _ToolCalled:
    """The model called tool `name` at least once (`times`: exactly that often) with
    arguments holding `args` (a subset: each key given, nested objects likewise). With
    `substring`, a text value matches when it appears in the call's value, ignoring case."""

    tool: str
    args: Mapping[str, Any] | None = None
    times: int | None = None
    substring: bool = False
    nested: bool = True

    def __post_init__(self) -> None:
        if not isinstance(self.tool, str) or not self.tool:
            raise ConfigError(f"tool_called needs a tool name, not {self.tool!r}")
        if self.args is not None and not isinstance(self.args, Mapping):
            raise ConfigError(f"tool_called: args must be an object, not {self.args!r}")

    @property
    def name(self) -> str:
        extra: dict[str, Any] = {"args": dict(self.args)} if self.args else {}
        if not self.nested:
            extra["nested"] = False
        return f"tool_called({describe_args([self.tool], extra)})"

    def __call__(self, run: EvalRun) -> CheckResult:
        made = _made(run, self.nested)
        named = [m for m in made if m.call.name == self.tool]
        hits = [m for m in named if _subset(self.args or {}, m.args, self.substring)]
        if self.times is not None and len(hits) != self.times:
            return CheckResult(False, f"{len(hits)} matching calls, expected {self.times}")
        if hits:
            return CheckResult(True, f"called {self.tool}({_args(hits[0].args)}){_by(hits[0])}")
        if named:
            seen = "; ".join(f"{_args(m.args)}{_by(m)}" for m in named)
            return CheckResult(False, f"{self.tool} called with other arguments: {seen}")
        called = ", ".join(_who(m) for m in made) or "no tool"
        return CheckResult(False, f"{self.tool} not called (called: {called})")


@dataclass(frozen=True, slots=True)
class _NoToolCalled:
    """The model called no tool at all; with `tool` (a name or a list), none of those."""

    tool: str | Sequence[str] | None = None
    nested: bool = True

    @property
    def name(self) -> str:
        extra = {} if self.nested else {"nested": False}
        return f"no_tool_called({describe_args([self.tool] if self.tool else [], extra)})"

    def __call__(self, run: EvalRun) -> CheckResult:
        names = None if self.tool is None else set(_texts(self.tool, "no_tool_called"))
        made = [_who(m) for m in _made(run, self.nested) if names is None or m.call.name in names]
        if made:
            return CheckResult(False, f"called {', '.join(made)}")
        return CheckResult(True)


def _check_count(n: object) -> None:
    """Raise `ConfigError` unless `n` is a whole number of 0 or more (a bound of a check)."""
    if not is_whole_number(n, 0):
        raise ConfigError(f"needs a whole number of 0 or more, not {n!r}")


@dataclass(frozen=True, slots=True)
class _MaxToolCalls:
    """The model made at most `n` tool calls."""

    n: int
    nested: bool = True

    def __post_init__(self) -> None:
        _check_count(self.n)

    @property
    def name(self) -> str:
        return f"max_tool_calls({self.n}{'' if self.nested else ', nested=False'})"

    def __call__(self, run: EvalRun) -> CheckResult:
        made = len(_made(run, self.nested))
        return CheckResult(made <= self.n, f"{made} tool calls (at most {self.n})")


def _is_schema(value: Any) -> bool:
    keys = {"type", "properties", "$schema", "items", "enum", "anyOf", "oneOf", "allOf"}
    return isinstance(value, Mapping) and bool(keys & set(value))


def check_output_is_value(value: Any) -> None:
    """Refuse a value `output_is` would read as a JSON Schema but that is not a valid one
    (`{type: nonsense}`), so that a dataset fails when it loads, not every run later with
    "the answer is not JSON".

    Args:
        value: The check's argument, or the case's `expected` it compares with.

    Raises:
        ConfigError: `value` looks like a schema and the meta-schema rejects it.
    """
    if _is_schema(value):
        from yiemagent.tools import check_schema

        check_schema(dict(value), what="the schema")


@dataclass(frozen=True, slots=True)
class _OutputIs:
    """The answer is a JSON value equal to `value`, or, when `value` is a JSON Schema (an
    object with `type`, `properties`, …), one that validates against it. The value is the
    run's validated output when it has one, else its answer text parsed as JSON. No
    `value`: the case's `expected`."""

    value: Any = None

    def __post_init__(self) -> None:
        check_output_is_value(self.value)

    def check_expected(self, expected: Any) -> None:
        """Refuse, when a dataset is made, no `value` in a case without `expected`, or
        with an `expected` that looks like a JSON Schema and is not one."""
        _given_or_expected(self.value, expected, "output_is")
        if self.value is None:
            try:
                check_output_is_value(expected)
            except ConfigError as exc:
                raise ConfigError(f"output_is: expected: {exc}") from None

    @property
    def name(self) -> str:
        shown = "schema" if _is_schema(self.value) else describe_args([self.value], {})
        return f"output_is({shown if self.value is not None else ''})"

    def __call__(self, run: EvalRun) -> CheckResult:
        from yiemagent.batch import check_output

        wanted = _expected(run, self.value, "output_is")
        if _is_schema(wanted):
            text = json.dumps(run.output) if run.output is not None else run.text
            try:
                check_output(text, dict(wanted))
            except ValueError as exc:
                return CheckResult(False, str(exc))
            return CheckResult(True)
        got = run.output
        if got is None:
            try:
                got = check_output(run.text, {})
            except ValueError as exc:
                return CheckResult(False, str(exc))
        if _json_equal(got, wanted):
            return CheckResult(True)
        return CheckResult(False, f"got {_quote(got)}, expected {_quote(wanted)}")


@dataclass(frozen=True, slots=True)
class _MaxTurns:
    """The run made at most `n` model calls."""

    n: int

    def __post_init__(self) -> None:
        _check_count(self.n)

    @property
    def name(self) -> str:
        return f"max_turns({self.n})"

    def __call__(self, run: EvalRun) -> CheckResult:
        return CheckResult(run.turns <= self.n, f"{run.turns} turns (at most {self.n})")


@dataclass(frozen=True, slots=True)
class _MaxCost:
    """The run cost at most `usd` US dollars (every model call, at the model's prices)."""

    usd: float

    def __post_init__(self) -> None:
        # nan would fail every run (no comparison with it is true) and inf pass every run:
        # neither is a limit, and a dataset holding one is refused before any run
        bad = isinstance(self.usd, bool) or not isinstance(self.usd, int | float)
        if bad or not math.isfinite(self.usd) or self.usd < 0:
            raise ConfigError(f"needs US dollars, a finite number 0 or more, not {self.usd!r}")

    @property
    def name(self) -> str:
        return f"max_cost({self.usd:g})"

    def __call__(self, run: EvalRun) -> CheckResult:
        return CheckResult(run.cost_usd <= self.usd, f"${run.cost_usd:.6f} (at most ${self.usd:g})")


def _args(arguments: Mapping[str, Any]) -> str:
    text = json.dumps(arguments, ensure_ascii=False, default=str)
    return text if len(text) <= 80 else text[:79] + "…"


def _quote(value: Any) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)
    text = " ".join(text.split())
    return repr(text if len(text) <= 120 else text[:119] + "…")


# ── the public checks: functions, as they read in code and in datasets ──────


def contains(
    text: str | Sequence[str] | None = None, *, any_of: bool = False, case_sensitive: bool = False
) -> _Contains:
    """The answer contains `text` (a list: every text; `any_of`: at least one), ignoring
    case unless `case_sensitive`. A text that is a number matches only a whole number ("36"
    is not in "360" nor in "-36"; "1048576" is in "1,048,576"). Both texts are compared
    in Unicode's composed form (NFC), so an "é" written as "e" and a combining accent
    matches one written as one character. No `text`: the case's `expected`.

    Raises:
        ConfigError: `text` is not a text or a list of texts.
    """
    return _Contains(text, any_of, case_sensitive)


def not_contains(text: str | Sequence[str], *, case_sensitive: bool = False) -> _NotContains:
    """The answer contains none of `text` (a text or a list); matching as in `contains`.

    Raises:
        ConfigError: `text` is not a text or a list of texts.
    """
    return _NotContains(text, case_sensitive)


def equals(value: Any = None) -> _Equals:
    """The answer equals `value`: the run's validated output when it has one and `value` is
    not a text, else the answer's text, white space around it removed, compared in
    Unicode's composed form (NFC) as `contains` compares. No `value`: the case's
    `expected`."""
    return _Equals(value)


def matches(regex: str, *, case_sensitive: bool = False) -> _Matches:
    """The answer matches the regular expression `regex` somewhere (`re.search`), ignoring
    case unless `case_sensitive`.

    Raises:
        ConfigError: `regex` does not compile.
    """
    return _Matches(regex, case_sensitive)


def tool_called(
    name: str,
    args: Mapping[str, Any] | None = None,
    *,
    times: int | None = None,
    substring: bool = False,
    nested: bool = True,
) -> _ToolCalled:
    """The model called tool `name` at least once (`times`: exactly that often) with
    arguments holding `args` (a subset: the keys given, nested objects likewise, other keys
    free). With `substring`, a text value matches when it appears in the call's value,
    ignoring case ("tokyo" matches "Tokyo, Japan"). A sub-agent's call (an agent called as
    a tool, at any depth) counts, unless `nested` is False.

    Raises:
        ConfigError: no tool name, or `args` that is not an object.
    """
    return _ToolCalled(name, args, times, substring, nested)


def no_tool_called(
    name: str | Sequence[str] | None = None, *, nested: bool = True
) -> _NoToolCalled:
    """The model called no tool; with `name` (a tool name or a list), none of those. A
    sub-agent's call counts, unless `nested` is False."""
    return _NoToolCalled(name, nested)


def max_tool_calls(n: int, *, nested: bool = True) -> _MaxToolCalls:
    """The model made at most `n` tool calls, its sub-agents' included unless `nested` is
    False."""
    return _MaxToolCalls(n, nested)


def output_is(value_or_schema: Any = None) -> _OutputIs:
    """The answer is a JSON value equal to `value_or_schema`, or, when that is a JSON Schema
    (an object with `type`, `properties`, `$schema`, …), one valid against it. The value read
    is the run's validated output when it has one, else its answer parsed as JSON (a ```json
    fence allowed). No argument: the case's `expected`.

    Raises:
        ConfigError: `value_or_schema` looks like a JSON Schema but is not a valid one.
    """
    return _OutputIs(value_or_schema)


def max_turns(n: int) -> _MaxTurns:
    """The run made at most `n` model calls."""
    return _MaxTurns(n)


def max_cost(usd: float) -> _MaxCost:
    """The run cost at most `usd` US dollars (every model call, at the model's prices).

    Raises:
        ConfigError: `usd` is not a finite number >= 0 (nan, inf, negative, not a number).
    """
    return _MaxCost(usd)
