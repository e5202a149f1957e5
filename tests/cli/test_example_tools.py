"""The example tools shipped with the CLI (`yiemagent/cli/default_tools`, linked from
`examples/tools`): calculator (ast, never eval), get_time (zoneinfo), read_file (confined to
its root, symlinks included). They load as tool files (DESIGN R-4.13)."""

from __future__ import annotations

import importlib.util
import math
import os
from datetime import UTC, datetime
from pathlib import Path
from types import ModuleType

import pytest
from hypothesis import given, settings, strategies as st

from yiemagent import AbortSignal, ToolStore
from yiemagent.cli.options import DEFAULT_TOOLS_DIR, example_tools


def _module(name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(
        f"example_{name}", DEFAULT_TOOLS_DIR / f"{name}.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


calc = _module("calculator")
clock = _module("get_time")
reader = _module("read_file")


def test_the_folder_loads_as_tool_files_and_examples_links_to_it() -> None:
    store = ToolStore("t")
    assert list(store.load_dir(DEFAULT_TOOLS_DIR)) == [
        "calculator",
        "get_time",
        "read_file",
        "listTools",
    ]
    repo_examples = Path(__file__).resolve().parents[2] / "examples" / "tools"
    if repo_examples.exists():
        assert repo_examples.resolve() == DEFAULT_TOOLS_DIR


def test_example_tools_gives_the_named_ones_in_order_and_names_a_missing_one() -> None:
    tools = example_tools("read_file", "calculator")
    assert [t.name for t in tools] == ["read_file", "calculator"]
    assert tools[1].execute is not example_tools("calculator")[0].execute  # a fresh load
    with pytest.raises(KeyError, match=r"no example tool \['nope'\]; there are \[.*'get_time'"):
        example_tools("calculator", "nope")


# ── calculator ───────────────────────────────────────────────────────────────


@pytest.mark.parametrize(
    ("expression", "expected"),
    [
        ("17 * 23", "391"),
        ("(2 + 3) ** 2 / 4", "6.25"),
        ("-7 // 2", "-4"),
        ("10 % 4 + -(-1)", "3"),
        ("2^10", "1024"),
        ("sqrt(16) + abs(-2)", "6"),
        ("max(1, 2, 3) * pi", format(3 * math.pi, ".12g")),
        ("1/3", "0.333333333333"),
        ("2 ** 100", str(2**100)),
        # A number and `%` with no operand after it is a percentage; `a % b` the remainder.
        ("12% * 50", "6"),
        ("12 % of 50", "6"),
        ("50 * 12%", "6"),
        ("50%", "0.5"),
        ("(12.5%) * 8", "1"),
        ("7 % 3", "1"),
        ("7 %3", "1"),
        ("7%(3)", "1"),
        # Added or taken away, a percentage is one of the value before it.
        ("150 + 10%", "165"),
        ("80 - 25%", "60"),
        ("150 + 10% of 200", "170"),
        ("(2 + 3) * 2 + 10%", "11"),
        ("150 + 0.1", "150.1"),
        ("150 + 10 % 4", "152"),
    ],
)
def test_calculator_evaluates_arithmetic(expression: str, expected: str) -> None:
    assert calc.format_number(calc.evaluate(expression)) == expected


@pytest.mark.parametrize(
    ("expression", "problem"),
    [
        ("__import__('os').system('true')", "not allowed"),
        ("open('x')", "unknown function"),
        ("(1).__class__", "not allowed"),
        ("1 / 0", "division by zero"),
        ("9 ** 9 ** 9", "too large"),
        ("2 ** 100000", "too large"),
        ("10.0 ** 400", "cannot evaluate"),
        ("sqrt(-1)", "cannot evaluate"),
        ("x + 1", "not allowed"),
        ("True + 1", "not a number"),
        ("'a' * 3", "not a number"),
        ("", "empty"),
        ("1 +", "cannot evaluate"),
        ("1" * 600, "longer than"),
    ],
)
def test_calculator_refuses_with_a_clean_error(expression: str, problem: str) -> None:
    with pytest.raises(calc.CalculatorError, match=problem):
        calc.evaluate(expression)


@pytest.mark.parametrize(
    ("expression", "expected"),
    [
        ("2026-12-25 - 2026-03-01", "299"),
        ("2026-03-01 - 2026-12-25", "-299"),
        ("2024-03-01 - 2024-02-01", "29"),  # a leap year
        ("(2027-01-01 - 2026-01-01) / 7", "52.1428571429"),
        ("2026-12-25 - 2026-03-01 + 1", "300"),
        ("2026-3-1", "2022"),  # not a date as written: plain subtraction
    ],
)
def test_calculator_subtracts_dates_in_days(expression: str, expected: str) -> None:
    """The days between two dates, the everyday question a model hands the calculator as
    one date minus the other."""
    assert calc.format_number(calc.evaluate(expression)) == expected


@pytest.mark.parametrize(
    ("expression", "problem"),
    [
        ("2026-02-30 - 2026-01-01", "2026-02-30 is not a date"),
        ("2026-03-01 + 5", "2026-03-01 is a date; dates can only be subtracted"),
        ("2026-03-01", "2026-03-01 is a date"),
        ("2026-12-25 + 2026-03-01", "dates can only be subtracted from each other"),
        ("1 +", r"cannot evaluate '1 \+': invalid syntax$"),
    ],
)
def test_calculator_says_what_is_wrong_with_a_date_in_its_own_words(
    expression: str, problem: str
) -> None:
    """A date used otherwise is refused in words about dates, not Python's complaint about
    leading zeros in integer literals, and no error ends with Python's "(<unknown>, line 1)"."""
    with pytest.raises(calc.CalculatorError, match=problem) as caught:
        calc.evaluate(expression)
    assert "octal" not in str(caught.value) and "<unknown>" not in str(caught.value)


_atoms = st.one_of(
    st.integers(-(10**6), 10**6).map(str),
    st.floats(allow_nan=False, allow_infinity=False, width=32).map(repr),
    st.sampled_from(["pi", "e", "x", "()", "'s'", "[1]", "None", "1e999", "0", "2026-02-29"]),
    st.dates().map(lambda d: f"{d:%Y-%m-%d}"),
)
_expressions = st.recursive(
    _atoms,
    lambda inner: st.one_of(
        st.tuples(inner, st.sampled_from([*list("+-*/%^"), "//", "**", " ", ","]), inner).map(
            "".join
        ),
        inner.map(lambda s: f"({s})"),
        inner.map(lambda s: f"-{s}"),
        st.tuples(st.sampled_from(["sqrt", "log", "max", "exp", "eval", "round"]), inner).map(
            lambda p: f"{p[0]}({p[1]})"
        ),
    ),
    max_leaves=12,
)


@settings(max_examples=300, deadline=None)
@given(st.one_of(_expressions, st.text(max_size=40)))
def test_calculator_never_raises_anything_but_a_clean_error(expression: str) -> None:
    """Property: any text gives a finite number or a `CalculatorError` (a ValueError)."""
    try:
        value = calc.evaluate(expression)
    except calc.CalculatorError as exc:
        assert str(exc)
    else:
        assert isinstance(value, int | float) and not isinstance(value, bool)
        assert isinstance(value, int) or math.isfinite(value)
        assert calc.format_number(value)


@pytest.mark.parametrize(
    ("expression", "expected"),
    [
        ("mean(4, 8, 15)", "9"),
        ("average(80, 90, 70)", "80"),
        ("sum(1, 2, 3) / 2", "3"),
        ("hypot(6, 8)", "10"),
        ("$45 * 20%", "9"),
        ("€ 12.50 * 4", "50"),
    ],
)
def test_calculator_has_everyday_functions_and_drops_currency_signs(
    expression: str, expected: str
) -> None:
    assert calc.format_number(calc.evaluate(expression)) == expected


async def test_the_calculator_tool_runs_through_its_execute() -> None:
    tool = calc.get_tool()
    assert await _run_tool(tool, {"expression": "mean(4, 8, 15)"}) == "mean(4, 8, 15) = 9"


@pytest.mark.parametrize(
    ("expression", "result"),
    [
        (
            "2026-03-01 - 2026-12-25",
            "2026-03-01 - 2026-12-25 = -299 days: 2026-03-01 is 299 days before 2026-12-25",
        ),
        (
            " 2026-12-25-2026-12-24 ",
            "2026-12-25-2026-12-24 = 1 day: 2026-12-25 is 1 day after 2026-12-24",
        ),
        ("2026-12-25 - 2026-12-25", "2026-12-25 - 2026-12-25 = 0 days: the same day"),
        ("(2026-12-25 - 2026-03-01) / 7", "(2026-12-25 - 2026-03-01) / 7 = 42.7142857143"),
    ],
)
async def test_the_calculator_says_a_date_difference_in_words(expression: str, result: str) -> None:
    """The 0.5B model, asked "How many days are there between 2026-03-01 and 2026-12-25?",
    writes the dates in the question's order and repeats the tool's result: "= -299" alone
    answered with a negative count of days."""
    assert await _run_tool(calc.get_tool(), {"expression": expression}) == result


# ── get_time ─────────────────────────────────────────────────────────────────

NOON_UTC = datetime(2026, 1, 15, 12, 0, tzinfo=UTC)


@pytest.mark.parametrize(
    ("place", "expected"),
    [
        ("Tokyo", "21:00 on Thursday 2026-01-15 in Tokyo (Asia/Tokyo, UTC+09:00)"),
        ("europe/paris", "13:00 on Thursday 2026-01-15 in europe/paris (Europe/Paris, UTC+01:00)"),
        ("New York", "07:00 on Thursday 2026-01-15 in New York (America/New_York, UTC-05:00)"),
        ("kolkata", "17:30 on Thursday 2026-01-15 in kolkata (Asia/Kolkata, UTC+05:30)"),
        ("UTC", "12:00 on Thursday 2026-01-15 in UTC (UTC, UTC+00:00)"),
    ],
)
def test_get_time_gives_the_local_time_of_a_city_or_zone(place: str, expected: str) -> None:
    assert clock.local_time(place, NOON_UTC) == expected


@pytest.mark.parametrize(
    ("place", "zone"),
    [
        ("Bogotá", "America/Bogota"),  # a zone's city, with its accent
        ("Montréal", "America/Toronto"),
        ("Wien", "Europe/Vienna"),  # as German writes it
        ("Lisboa", "Europe/Lisbon"),
        ("München", "Europe/Berlin"),
        ("Nueva York", "America/New_York"),
        ("¿Tokio?", "Asia/Tokyo"),
    ],
)
def test_get_time_takes_a_city_as_other_languages_write_it(place: str, zone: str) -> None:
    assert clock.resolve_zone(place) == zone


@pytest.mark.parametrize(
    ("place", "expected"),
    [
        ("GMT-5", "07:00 on Thursday 2026-01-15 in GMT-5 (UTC-05:00)"),
        ("UTC+2", "14:00 on Thursday 2026-01-15 in UTC+2 (UTC+02:00)"),
        ("utc +05:30", "17:30 on Thursday 2026-01-15 in utc +05:30 (UTC+05:30)"),
        ("UTC\u22123", "09:00 on Thursday 2026-01-15 in UTC\u22123 (UTC-03:00)"),
        ("Etc/GMT-5", "17:00 on Thursday 2026-01-15 in Etc/GMT-5 (Etc/GMT-5, UTC+05:00)"),
    ],
)
def test_get_time_takes_an_offset_as_people_write_it(place: str, expected: str) -> None:
    # "GMT-5" is five hours behind: IANA's Etc/GMT-5, whose city part it is, is five hours
    # ahead (POSIX signs), and was the answer, ten hours off. Etc/GMT-5 named whole stays
    # the IANA zone.
    assert clock.local_time(place, NOON_UTC) == expected


@pytest.mark.parametrize("place", ["UTC+15", "GMT-13", "UTC+5:75"])
def test_get_time_refuses_an_offset_no_clock_shows(place: str) -> None:
    with pytest.raises(ValueError, match="Unknown place"):
        clock.local_time(place, NOON_UTC)


def test_get_time_unknown_place_says_what_is_accepted() -> None:
    with pytest.raises(ValueError, match=r"Unknown place 'Atlantis'.*IANA"):
        clock.local_time("Atlantis")


async def test_get_time_tool_runs_through_its_execute() -> None:
    result = await _run_tool(clock.get_tool(), {"place": "Tokyo"})
    assert "(Asia/Tokyo, UTC+09:00)" in result


# ── read_file ────────────────────────────────────────────────────────────────


@pytest.fixture
def root(tmp_path: Path) -> Path:
    base = tmp_path / "root"
    (base / "sub").mkdir(parents=True)
    (base / "sub" / "note.txt").write_text("hello from inside", encoding="utf-8")
    (tmp_path / "secret.txt").write_text("outside", encoding="utf-8")
    return base


def test_read_file_reads_inside_the_root(root: Path) -> None:
    assert reader.read_text(root, "sub/note.txt") == "hello from inside"
    assert reader.read_text(root, str(root / "sub" / "note.txt")) == "hello from inside"


@pytest.mark.parametrize("path", ["../secret.txt", "sub/../../secret.txt", "/etc/passwd", ""])
def test_read_file_refuses_paths_outside_the_root(root: Path, path: str) -> None:
    with pytest.raises(ValueError, match=r"outside the allowed folder|give a file path"):
        reader.read_text(root, path)


def test_read_file_refuses_a_symlink_that_leaves_the_root(root: Path) -> None:
    os.symlink(root.parent / "secret.txt", root / "link.txt")
    os.symlink(root.parent, root / "up")
    for path in ("link.txt", "up/secret.txt"):
        with pytest.raises(ValueError, match="outside the allowed folder"):
            reader.read_text(root, path)


def test_read_file_reports_missing_folders_binary_and_truncates(root: Path) -> None:
    with pytest.raises(ValueError, match="does not exist"):
        reader.read_text(root, "nope.txt")
    with pytest.raises(ValueError, match=r"is a folder; it holds: note.txt"):
        reader.read_text(root, "sub")
    (root / "blob.bin").write_bytes(b"\xff\xfe\x00\x01")
    with pytest.raises(ValueError, match="not a UTF-8 text file"):
        reader.read_text(root, "blob.bin")
    (root / "big.txt").write_text("é" * (reader.MAX_CHARS + 10), encoding="utf-8")
    text = reader.read_text(root, "big.txt")
    assert text.startswith("é" * reader.MAX_CHARS)
    assert text.endswith(f"[truncated after {reader.MAX_CHARS} characters]")


def test_read_file_finds_a_name_spelled_in_another_unicode_form(root: Path) -> None:
    # macOS names files in NFD ("é" as e + U+0301) and its screenshots with a typographic
    # apostrophe and a narrow no-break space; a model writes NFC, ' and a space. Such a
    # name still finds its file (also in a folder so named), but only when one matches.
    shot = "Capture d\u2019e\u0301cran 10.54.01\u202fPM.txt"
    (root / "sub" / shot).write_text("the screen", encoding="utf-8")
    (root / "Re\u0301sume\u0301s").mkdir()
    (root / "Re\u0301sume\u0301s" / "cv.txt").write_text("my cv", encoding="utf-8")
    assert reader.read_text(root, "sub/Capture d'écran 10.54.01 PM.txt") == "the screen"
    assert reader.read_text(root, "Résumés/cv.txt") == "my cv"
    (root / "sub" / "Capture d'e\u0301cran 10.54.01 PM.txt").write_text("another")
    with pytest.raises(ValueError, match="is ambiguous: 2 entries") as caught:
        reader.read_text(root, "sub/Capture d'écran 10.54.01 PM.txt")
    # each as JSON, whose escapes show the difference and can be sent back as written
    listed = str(caught.value)
    assert '"Capture d\\u2019e\\u0301cran 10.54.01\\u202fPM.txt"' in listed
    assert '"Capture d\'e\\u0301cran 10.54.01 PM.txt"' in listed
    assert reader.read_text(root, "sub/Capture d'e\u0301cran 10.54.01 PM.txt") == "another"
    os.symlink(root.parent / "secret.txt", root / "se\u0301cret.txt")
    with pytest.raises(ValueError, match="outside the allowed folder"):
        reader.read_text(root, "sécret.txt")


def test_read_file_names_at_most_ten_of_many_matching_entries(root: Path) -> None:
    spaces = (" ", "\u00a0", "\u202f")
    spellings = [e + a + b + ".txt" for e in ("é", "e\u0301") for a in spaces for b in spaces]
    for name in spellings[1:13]:  # twelve other spellings of "é  .txt", not it
        (root / name).write_text(name, encoding="utf-8")
    with pytest.raises(ValueError, match=r"ambiguous: 12 entries .* and 2 more\)") as caught:
        reader.read_text(root, "é" + " " * 2 + ".txt")
    assert str(caught.value).count('.txt"') == 10


async def test_read_file_tool_uses_the_root_from_the_environment(
    root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(reader.ROOT_ENV, str(root))
    assert await _run_tool(reader.get_tool(), {"path": "sub/note.txt"}) == "hello from inside"


async def _run_tool(tool: object, args: dict[str, str]) -> str:
    from yiemagent.types import AgentTool

    assert isinstance(tool, AgentTool)
    result = tool.execute("call_1", args, AbortSignal(), lambda partial: None)
    if hasattr(result, "__await__"):
        result = await result  # type: ignore[misc]
    return result if isinstance(result, str) else "".join(c.text for c in result.content)
