"""DESIGN R-4.3: a Google `Args:` entry's type in parentheses may hold parentheses of its
own (`x (list(int)): ...`); each parameter still gets its own description, and none runs
into the parameter above it."""

from __future__ import annotations

import keyword
from typing import Any

import pytest
from hypothesis import given, strategies as st

from yiemagent.tools import tool


def _pair(count: int, pairs: list[tuple[int, int]]) -> str:
    """Count the pairs.

    Args:
        count (int): How many to count.
        pairs (list(tuple(int, int)), optional): The pairs,
            each two numbers.
    """
    return str(count)


def test_a_type_with_parentheses_keeps_each_description_its_own() -> None:
    # The entry with `list(tuple(int, int))` was read as more text of `count`: the model
    # read "How many to count. pairs (list(tuple(int, int)), optional): The pairs, ..." as
    # what `count` means, and `pairs` had no description.
    props = tool(_pair).input_schema["properties"]
    assert props["count"]["description"] == "How many to count."
    assert props["pairs"]["description"] == "The pairs, each two numbers."


_WORD = st.from_regex(r"[a-z][a-z0-9_]{0,8}", fullmatch=True).filter(
    lambda w: not keyword.iskeyword(w) and w not in {"self", "signal", "on_update", "tool_call_id"}
)
_TYPES = st.recursive(
    st.sampled_from(["int", "str", "float", "bool", "None"]),
    lambda inner: st.one_of(
        st.builds(lambda o, a: f"{o}({a})", st.sampled_from(["list", "tuple", "dict"]), inner),
        st.builds(lambda o, a: f"{o}[{a}]", st.sampled_from(["list", "Optional"]), inner),
        st.builds(lambda a, b: f"{a}, {b}", inner, inner),
        st.builds(lambda a, b: f"{a} | {b}", inner, inner),
    ),
    max_leaves=6,
)
_DESCRIPTION = st.from_regex(r"[A-Z][a-z ]{0,20}\.", fullmatch=True)


def _depth(text: str) -> int:
    deepest = level = 0
    for char in text:
        level += {"(": 1, ")": -1}.get(char, 0)
        deepest = max(deepest, level)
    return deepest


@given(
    st.lists(
        st.tuples(_WORD, st.none() | _TYPES.filter(lambda t: _depth(t) <= 2), _DESCRIPTION),
        min_size=1,
        max_size=5,
        unique_by=lambda entry: entry[0],
    )
)
def test_each_google_parameter_gets_its_own_description(
    entries: list[tuple[str, str | None, str]],
) -> None:
    lines = ["Summary.", "", "Args:"]
    for name, type_, text in entries:
        shown = f" ({type_})" if type_ is not None else ""
        lines.append(f"    {name}{shown}: {text}")
    names = ", ".join(f"{name}: str" for name, _, _ in entries)
    made: dict[str, Any] = {}
    exec(f"def summarise({names}) -> str:\n    return ''", made)
    function = made["summarise"]
    function.__doc__ = "\n".join(lines)
    built = tool(function)
    assert built.description == "Summary."
    described = {k: v.get("description") for k, v in built.input_schema["properties"].items()}
    assert described == {name: text for name, _, text in entries}


def _weather(city: str, units: str) -> str:
    return city + units


@pytest.mark.parametrize(
    ("doc", "description"),
    [
        (
            """
            Args:
                city: The city to get weather for.
                units: Temperature units to use.
            """,
            "Weather",
        ),
        (
            """Get the weather for a city.
            Args:
                city: The city to get weather for.
                units: Temperature units to use.
            """,
            "Get the weather for a city.",
        ),
        (
            """Get the weather for a city.

            Args:

                city: The city to get weather for.
                units: Temperature units to use.
            """,
            "Get the weather for a city.",
        ),
        (
            """Get the weather for a city.

            Note:
                Results are cached.
            Args:
                city: The city to get weather for.
                units: Temperature units to use.
            """,
            "Get the weather for a city.",
        ),
    ],
    ids=["no_summary", "no_blank_line_above_args", "blank_line_below_args", "args_after_note"],
)
def test_loosely_laid_out_google_docstrings_keep_their_parameters(
    doc: str, description: str
) -> None:
    # Parsers that need PEP 257's exact layout dropped every parameter description of
    # these (and sent the raw `Args:` block as the tool's description).
    _weather.__doc__ = doc
    built = tool(_weather)
    props = built.input_schema["properties"]
    assert props["city"]["description"] == "The city to get weather for."
    assert props["units"]["description"] == "Temperature units to use."
    assert built.description == description
