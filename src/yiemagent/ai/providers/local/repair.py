"""Repairs of a call's values before the embedded model's reply emits it (DESIGN §11): what the
0.5B model writes in a form its tool does not take, put right from what
the user wrote. `repair_file_names` puts the file name the request gives for an invented
path; `percent_as_fraction` gives a percentage the user wrote as the fraction a number
parameter takes. (Leaving out optional values nothing backs is `grounding`'s
`drop_unbacked_options`: it is the guard's test applied to one value.)
"""

from __future__ import annotations

import re
from collections.abc import Collection
from typing import Any

from yiemagent.ai.providers.local.grounding import FILE_NAME, Grounding
from yiemagent.types.tools import AgentTool

__all__ = ["percent_as_fraction", "repair_file_names"]


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
    properties = tool.input_schema.get("properties")
    if not isinstance(properties, dict):
        return arguments
    fixed = arguments
    for name, value in arguments.items():
        param = properties.get(name)
        if (
            not isinstance(param, dict)
            or param.get("type") != "number"
            or isinstance(value, bool)
            or not isinstance(value, int | float)
            or not any(round(float(value), 6) == round(p, 6) for p in grounding.percents)
        ):
            continue
        description = str(param.get("description") or "").lower()
        if _SAYS_PERCENT.search(description) and not _SAYS_FRACTION.search(description):
            continue
        fixed = {**fixed, name: round(float(value) / 100, 10)}
    return fixed
