"""JSON as a model writes it: one reader for tool-call arguments and for a typed answer given
in text, so that the same text means the same value in both. The layers above import it by
path.

`read_model_json` reads strict JSON (no `NaN` or `Infinity`, nor a number too large for a
float, such as `1e400`: JSON has no infinity, and jiter and Python's `json` read it as one),
and, when the text is not, the slips that leave no doubt about the value meant: a stray `}`
or `]` after a complete value; a comma before a closing bracket; a line break or tab
written as is inside a string; a string's backslashes not escaped (a Windows path written
as is); a dict or list written as a Python literal (single quotes, `True`, `None`). Each
repair is tried for the error that names it, one per text. Prose around the value is not
read: which part of it is the value would be a guess. The parse is `jiter`'s (native code).
"""

from __future__ import annotations

import ast
import json
import math
import re
from typing import Any, NoReturn

import jiter

__all__ = [
    "error_offset",
    "infinite_number_at",
    "json_like",
    "loads_finite",
    "read_model_json",
    "read_python_literal",
    "read_strict_json",
    "refuse_huge_numbers",
]

_STRAY_CLOSERS = frozenset(b"}] \t\r\n")
_JSON_ESCAPES = frozenset('"\\/bfnrtu')
_FOUR_HEX = re.compile(r"[0-9a-fA-F]{4}")
_POSITION = re.compile(r"at line (\d+) column (\d+)$")
_NOTHING = object()
"""No value: the repair did not apply or did not give a value."""
_HUGE_NUMBER_HINT = re.compile(rb"[eE]\+?\d{3}|\d{309}")
"""What JSON text holding a number beyond a float's range (about 1.8e308) must hold: an
exponent of three digits or more, or 309 digits in a row; only such a text is scanned."""
_TOKEN = re.compile(rb'"(?:[^"\\]|\\.)*"?|-?\d+(?:\.\d*)?(?:[eE][+-]?\d*)?')
"""A string (its end may not have come yet) or a number of JSON text."""
_FRACTION_OR_EXPONENT = re.compile(rb"[.eE]")


def read_strict_json(data: bytes) -> Any:
    """The JSON value of `data`, read strictly by jiter (no `NaN`, `Infinity` or trailing
    text).

    Raises:
        ValueError: not JSON (jiter's message, naming line and column); a number too large
            for a float (`1e400`) gets the message `Infinity` gets there ("expected value at
            line L column C"), as jiter would read it as infinity, which JSON cannot hold
            and a strict API refuses when the value is sent on.
    """
    value = jiter.from_json(data, allow_inf_nan=False)
    refuse_huge_numbers(data)
    return value


def refuse_huge_numbers(data: bytes) -> None:
    """Refuse the JSON text `data` when it holds a number too large for a float, which
    jiter (and pydantic-core's `from_json`) read as infinity even with `allow_inf_nan=False`.

    Raises:
        ValueError: "expected value at line L column C", what jiter says of `Infinity`
            there (C counted in bytes).
    """
    at = infinite_number_at(data)
    if at is not None:
        line = data.count(b"\n", 0, at) + 1
        column = at - (data.rfind(b"\n", 0, at) + 1) + 1
        raise ValueError(f"expected value at line {line} column {column}")


def infinite_number_at(data: bytes) -> int | None:
    """The byte offset in the JSON text `data` (complete or cut off) of its first number
    that is too large for a float, None when there is none; numbers inside strings are
    text, not numbers."""
    if _HUGE_NUMBER_HINT.search(data) is None:
        return None
    for token in _TOKEN.finditer(data):
        number = token.group()
        if number.startswith(b'"') or not _FRACTION_OR_EXPONENT.search(number):
            continue  # a string; an integer, which jiter reads whole, however long
        try:
            if math.isinf(float(number)):
                return token.start()
        except ValueError:  # a number cut off at the end (`1e`)
            continue
    return None


def read_model_json(text: str) -> Any:
    """The JSON value `text` holds, strict or with one of the slips models make.

    Args:
        text: the whole text of the value, nothing around it.

    Returns:
        The value (objects as dicts, arrays as lists).

    Raises:
        ValueError: the text holds no value under any reading; the message is the strict
            reading's error ("expected value at line 1 column 1").
    """
    data = text.encode(errors="replace")  # a lone surrogate becomes "?"
    try:
        return read_strict_json(data)
    except ValueError as exc:
        error = str(exc)
    value = _repaired(text, data, error)
    if value is _NOTHING:
        try:
            value = read_python_literal(text)
        except ValueError:
            raise ValueError(error) from None
    return value


def read_python_literal(text: str) -> dict[str, Any] | list[Any]:
    """The dict or list `text` writes as a Python literal (`{'city': 'Oslo', 'metric': True,
    'unit': None}`: small models do). `ast.literal_eval` reads literals only: nothing in the
    text runs.

    Raises:
        ValueError: the text is no dict or list literal, or holds what JSON cannot (a tuple,
            a set, bytes, a key that is not a text, inf or nan): what is read is what JSON
            could have said.
    """
    stripped = text.strip()
    if stripped[:1] not in ("{", "["):
        raise ValueError("not a Python dict or list literal")
    try:
        value = ast.literal_eval(stripped)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        raise ValueError("not a Python literal") from None
    if not isinstance(value, dict | list) or not json_like(value):
        raise ValueError("a Python literal with values JSON cannot hold")
    return value


def _repaired(text: str, data: bytes, error: str) -> Any:
    """The value `text` holds once the slip its strict reading's `error` names is undone;
    `_NOTHING` when the error names none of them, or the repair reads no value either."""
    end = error_offset(data, error)
    if error.startswith("trailing characters") and end > 0 and set(data[end:]) <= _STRAY_CLOSERS:
        return _strict(data[:end])
    if error.startswith("invalid escape"):
        return _strict(_backslashes_as_written(text).encode(errors="replace"))
    if error.startswith("trailing comma"):
        return _without_trailing_commas(data)
    if error.startswith("control character"):
        return _with_raw_line_breaks(text)
    return _NOTHING


def _strict(data: bytes) -> Any:
    try:
        return read_strict_json(data)
    except ValueError:
        return _NOTHING


def _with_raw_line_breaks(text: str) -> Any:
    """The value `text` holds when its strings may hold control characters as written (a
    line break, a tab): a model writing code or a letter into a string breaks its lines
    there instead of writing `\\n`, and JSON forbids that. `NaN` and `Infinity` stay
    refused, and so does a number too large for a float."""
    try:
        return loads_finite(text, strict=False)
    except (ValueError, RecursionError):
        return _NOTHING


def loads_finite(text: str, *, strict: bool = True) -> Any:
    """`json.loads(text, strict=strict)` without what JSON has no number for, which Python's
    `json` reads: `NaN`, `Infinity` and a number too large for a float (`1e400`).

    Raises:
        ValueError: not JSON (`json`'s message), or one of those ("Infinity is no JSON
            number", "1e400 is no JSON number").
        RecursionError: nested deeper than Python's recursion limit.
    """
    return json.loads(text, strict=strict, parse_constant=_no_number, parse_float=_finite)


def _no_number(name: str) -> NoReturn:
    raise ValueError(f"{name} is no JSON number")


def _finite(text: str) -> float:
    value = float(text)
    if math.isinf(value):
        _no_number(text)
    return value


def _without_trailing_commas(data: bytes) -> Any:
    """The value `data` holds once each comma right before a closing `}` or `]` is dropped
    (`{"utc": true,}`: models write them, and Python literals may have them, so a value
    written with JSON's `true` must not fare worse than one with Python's `True`). jiter
    names each such comma's closer, so a comma inside a string is never touched."""
    for _ in range(data.count(b",") + 1):
        try:
            return read_strict_json(data)
        except ValueError as exc:
            comma = data.rfind(b",", 0, error_offset(data, str(exc)))
            if not str(exc).startswith("trailing comma") or comma < 0:
                return _NOTHING
            data = data[:comma] + data[comma + 1 :]
    return _NOTHING


def _backslashes_as_written(text: str) -> str:
    """`text` with every backslash of a string that holds an escape JSON does not know
    doubled, but one before a quote: a model that writes a Windows path as is
    (`"C:\\Users\\notes"`) does not escape its backslashes, so in that string each is the
    path's own (`\\n` of `\\notes` too). Strings whose escapes are all JSON's are kept."""
    out: list[str] = []
    at, size = 0, len(text)
    while at < size:
        if text[at] != '"':
            out.append(text[at])
            at += 1
            continue
        end, unknown = at + 1, False
        while end < size and text[end] != '"':
            if text[end] == "\\" and end + 1 < size:
                follower = text[end + 1]
                unknown = unknown or follower not in _JSON_ESCAPES
                unknown = unknown or (follower == "u" and not _FOUR_HEX.match(text, end + 2))
                end += 2
            else:
                end += 1
        body = text[at + 1 : end]
        if unknown:
            body = re.sub(r'\\(?!")', r"\\\\", body)
        out.append(f'"{body}' + ('"' if end < size else ""))
        at = end + 1
    return "".join(out)


def json_like(value: object) -> bool:
    """Whether `value` is made only of what JSON holds (finite numbers, text keys)."""
    if value is None or isinstance(value, str | bool | int):
        return True
    if isinstance(value, float):
        return math.isfinite(value)
    if isinstance(value, list):
        return all(json_like(item) for item in value)
    if isinstance(value, dict):
        return all(isinstance(k, str) and json_like(v) for k, v in value.items())
    return False


def error_offset(data: bytes, error: str) -> int:
    """The byte offset of a jiter error in `data` ("... at line L column C", C counted in
    bytes); 0 when the error names no position."""
    match = _POSITION.search(error)
    if match is None:
        return 0
    line, column = int(match[1]), int(match[2])
    start = 0
    for _ in range(line - 1):
        start = data.find(b"\n", start) + 1
        if start == 0:
            return 0
    return min(len(data), start + column - 1)
