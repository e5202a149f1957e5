"""Streaming tool-call arguments: parse the JSON received so far (DESIGN §7, seed 002 §3).

A provider streams a tool call's arguments as JSON text in fragments. After each fragment the
partial `AssistantMessage` must hold the arguments parsed so far as a dict, so that consumers
(UIs, the loop) can show them. `jiter`'s partial mode does the parsing in native code; an
incomplete trailing string is kept as far as it arrived.
"""

from __future__ import annotations

import re
from typing import Any

import jiter

__all__ = ["parse_partial_json"]


def parse_partial_json(text: str) -> dict[str, Any]:
    """Parse a possibly incomplete JSON object.

    Args:
        text: JSON text, complete or cut off anywhere (a prefix of a JSON object).

    Returns:
        The object parsed so far (incomplete strings kept as received, incomplete numbers and
        literals left out). `{}` for empty text, a non-object value, or text that is not JSON
        at all. Never raises.
    """
    if not text:
        return {}
    data = text.encode(errors="replace")  # a lone surrogate becomes "?"
    try:
        value = jiter.from_json(data, partial_mode="trailing-strings", allow_inf_nan=False)
    except ValueError as exc:
        # Garbage after a good start (`{"a": 1, oops`): keep what came before the bad token.
        end = _error_offset(data, str(exc))
        if end <= 0:
            return {}
        try:
            value = jiter.from_json(
                data[:end], partial_mode="trailing-strings", allow_inf_nan=False
            )
        except ValueError:
            return {}
    return value if isinstance(value, dict) else {}


_POSITION = re.compile(r"at line (\d+) column (\d+)$")


def _error_offset(data: bytes, error: str) -> int:
    """The byte offset of a jiter error ("... at line L column C", C counted in bytes)."""
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


def parse_json_object(text: str) -> dict[str, Any] | None:
    """Parse complete JSON text that must be an object; `None` when it is not (never raises).

    An object encoded twice (a JSON string holding the object's JSON text, as some models
    served over OpenAI-compatible APIs send their arguments) counts as the object.
    """
    if not text:
        return None
    try:
        value = jiter.from_json(text.encode(errors="replace"), allow_inf_nan=False)
        if isinstance(value, str) and value.lstrip().startswith("{"):
            value = jiter.from_json(value.encode(errors="replace"), allow_inf_nan=False)
    except ValueError:
        return None
    return value if isinstance(value, dict) else None
