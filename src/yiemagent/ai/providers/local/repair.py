"""Repairs of a call's values before the embedded model's reply emits it (DESIGN §11): what the
0.5B model writes in a form its tool does not take, put right from what
the user wrote. `repair_file_names` puts the file name the request gives for an invented
path; `percent_as_fraction` gives a percentage the user wrote as the fraction a number
parameter takes; `runaway_choices` keeps each choice of a list that ran to its bound
once; `date_as_described` writes a date in the layout its parameter's
description gives. (Leaving out optional values nothing backs is `grounding`'s
`drop_unbacked_options`: it is the guard's test applied to one value.)
"""

from __future__ import annotations

import datetime
import re
from collections.abc import Callable, Collection
from typing import Any

from yiemagent.ai.providers.local.grounding import FILE_NAME, Grounding, item_choices
from yiemagent.types.tools import AgentTool

__all__ = [
    "date_as_described",
    "percent_as_fraction",
    "repair_file_names",
    "runaway_choices",
]


def repair_file_names(
    tool: AgentTool, arguments: dict[str, Any], grounding: Grounding, used: Collection[str]
) -> dict[str, Any]:
    """`arguments` with each required string that is a file name nothing gives replaced by
    the one file name that is given and not yet `used` (the 0.5B writes
    `read_file("path/to/your/file.txt")` for "What version is in pyproject.toml?", or
    `"read_order.txt"` for "Read order.txt"). Without exactly one such name, the value is
    left as it is (the word check then decides). File names are compared ignoring case;
    `arguments` itself comes back when nothing changes."""
    required = tool.input_schema.get("required")
    given = {name.lower() for name in grounding.files}
    taken = {name.lower() for name in used}
    free = [name for name in grounding.files if name.lower() not in taken]
    repaired = arguments
    for key in required if isinstance(required, list) else ():
        value = arguments.get(key)
        if not isinstance(value, str) or not FILE_NAME.fullmatch(value.strip()):
            continue
        if value.strip().lower() in given:
            continue
        if len(free) == 1:
            repaired = {**repaired, key: free[0]}
    return repaired


def _rewrite_values(
    tool: AgentTool, arguments: dict[str, Any], rewrite: Callable[[dict[str, Any], Any], Any]
) -> dict[str, Any]:
    """`arguments` with each value whose parameter has a schema (a dict) replaced by what
    `rewrite(schema, value)` gives, unless that is None (the value stays); `arguments`
    itself comes back when nothing changes."""
    properties = tool.input_schema.get("properties")
    if not isinstance(properties, dict):
        return arguments
    fixed = arguments
    for name, value in arguments.items():
        param = properties.get(name)
        if isinstance(param, dict) and (new := rewrite(param, value)) is not None:
            fixed = {**fixed, name: new}
    return fixed


_SAYS_PERCENT = re.compile(r"\bper ?cent(?:age)?s?\b")
_SAYS_FRACTION = re.compile(r"\b(?:decimals?|fractions?|ratio)\b")


def percent_as_fraction(
    tool: AgentTool, arguments: dict[str, Any], grounding: Grounding
) -> dict[str, Any]:
    """`arguments` with each number-typed (not integer) value that the user wrote as a
    percentage ("an interest rate of 5%": 5) given as the fraction it stands for (0.05),
    unless the parameter's description asks for a percentage ("as a percentage", without
    "decimal" or "fraction"). The 0.5B copies "5%" as 5; code that takes a rate as a float
    expects 0.05 (measured: docs/local-model.md). Integer parameters always want the
    percentage and are left alone. `arguments` itself comes back when nothing changes.
    """
    if not grounding.percents:
        return arguments

    def as_fraction(param: dict[str, Any], value: Any) -> float | None:
        if (
            param.get("type") != "number"
            or isinstance(value, bool)
            or not isinstance(value, int | float)
            or not any(round(float(value), 6) == round(p, 6) for p in grounding.percents)
        ):
            return None
        description = str(param.get("description") or "").lower()
        if _SAYS_PERCENT.search(description) and not _SAYS_FRACTION.search(description):
            return None
        return round(float(value) / 100, 10)

    return _rewrite_values(tool, arguments, as_fraction)


_LAYOUT = re.compile(
    r"(?<![a-z])(yyyy|mm|dd)([-/. ]?)(yyyy|mm|dd)\2(yyyy|mm|dd)(?![a-z])", re.IGNORECASE
)
"""A date layout a description gives: "in the format MM-DD-YYYY", "(yyyy/mm/dd)", "YYYYMMDD"."""
_YEAR_FIRST = re.compile(r"(\d{4})([-/.])(\d{1,2})\2(\d{1,2})")
_MONTH_NAMES = "jan feb mar apr may jun jul aug sep oct nov dec"
_MONTHS = {name: number for number, name in enumerate(_MONTH_NAMES.split(), start=1)}
_ORDINAL = r"(\d{1,2})(?:st|nd|rd|th)?"
_MONTH = r"([a-z]{3,9})\.?"
_MONTH_FIRST = re.compile(rf"{_MONTH}\s*{_ORDINAL},?\s+(\d{{4}})", re.IGNORECASE)
_DAY_FIRST = re.compile(rf"{_ORDINAL}\s+(?:of\s+)?{_MONTH},?\s+(\d{{4}})", re.IGNORECASE)
_NUMBERS = re.compile(r"(\d{1,2})([-/.])(\d{1,2})\2(\d{4})")


def _layout(description: str) -> tuple[str, str, str, str] | None:
    """The date layout `description` gives, as its three parts (`yyyy`, `mm`, `dd` in their
    order) and separator; None unless it gives exactly one, with each part once."""
    found = {
        (m.group(1).lower(), m.group(3).lower(), m.group(4).lower(), m.group(2))
        for m in _LAYOUT.finditer(description)
    }
    if len(found) != 1:
        return None
    layout = found.pop()
    return layout if sorted(layout[:3]) == ["dd", "mm", "yyyy"] else None


def _date(text: str, layout: tuple[str, str, str, str]) -> datetime.date | None:
    """The calendar date `text` writes, when it can be read one way only: year first
    (`2025-06-05`), a month's name (`June 5th, 2025`, `5 June 2025`, `June05 2025`), or
    numbers with the year last whose order is the layout's or shown by a day past 12."""
    text = text.strip()
    try:
        if m := _YEAR_FIRST.fullmatch(text):
            return datetime.date(int(m.group(1)), int(m.group(3)), int(m.group(4)))
        if m := _MONTH_FIRST.fullmatch(text):
            month = _MONTHS.get(m.group(1)[:3].lower())
            return datetime.date(int(m.group(3)), month, int(m.group(2))) if month else None
        if m := _DAY_FIRST.fullmatch(text):
            month = _MONTHS.get(m.group(2)[:3].lower())
            return datetime.date(int(m.group(3)), month, int(m.group(1))) if month else None
        if m := _NUMBERS.fullmatch(text):
            first, second, year = int(m.group(1)), int(m.group(3)), int(m.group(4))
            day_first = layout[:3] == ("dd", "mm", "yyyy")
            if first > 12 >= second:
                day_first = True
            elif second > 12 >= first:
                day_first = False
            elif layout[2] != "yyyy":  # the layout's order says nothing of this one
                return None
            return (
                datetime.date(year, second, first)
                if day_first
                else (datetime.date(year, first, second))
            )
    except ValueError:  # no such day
        return None
    return None


def date_as_described(tool: AgentTool, arguments: dict[str, Any]) -> dict[str, Any]:
    """`arguments` with each string value that is a date written in another layout than
    the one its parameter's description gives ("The date, in the format MM-DD-YYYY")
    rewritten in that layout: `2025-06-05` → `06-05-2025`. The 0.5B writes dates its own
    way (ISO, or as the request words them) whatever the description asks. A value that
    cannot be read as one date (`05/06/2025` for a year-first layout: which is the
    month?), or holds more than a date, is left as it is; `arguments` itself comes back
    when nothing changes."""

    def in_layout(param: dict[str, Any], value: Any) -> str | None:
        layout = _layout(str(param.get("description") or "")) if isinstance(value, str) else None
        date = _date(value, layout) if layout else None
        if layout is None or date is None:
            return None
        parts = {"yyyy": f"{date.year:04d}", "mm": f"{date.month:02d}", "dd": f"{date.day:02d}"}
        written = layout[3].join(parts[part] for part in layout[:3])
        return written if written != value else None

    return _rewrite_values(tool, arguments, in_layout)


def runaway_choices(tool: AgentTool, arguments: dict[str, Any]) -> dict[str, Any]:
    """`arguments` with each list of choices (an array whose `items` have an `enum`) that
    holds as many items as there are choices, one of them more than once, cut to its
    distinct items in order. The grammar bounds such a list at the number of choices; the
    0.5B runs to that bound repeating one ("Sauna", "Sauna", …), and what it meant is the
    distinct items. A list below the bound keeps its repeats (they may be meant: two of
    one kind); `arguments` itself comes back when nothing changes."""

    def distinct(param: dict[str, Any], value: Any) -> list[Any] | None:
        choices = item_choices(param)
        if not isinstance(value, list) or choices is None or len(value) < len(choices):
            return None
        kept = [v for i, v in enumerate(value) if v not in value[:i]]
        return kept if len(kept) < len(value) else None

    return _rewrite_values(tool, arguments, distinct)
