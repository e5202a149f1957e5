"""Content attributes of a span kept within a bound and valid (DESIGN §13).

A traced run's content attributes (`gen_ai.input.messages`, `gen_ai.tool.call.result`, …)
grow with the transcript: every chat span holds the whole conversation so far, and one
tool result can be 100,000 characters. Past the bound an exporter drops whole batches
(gRPC's default message limit is 4 MiB) and the SDK's own length limit
(`OTEL_ATTRIBUTE_VALUE_LENGTH_LIMIT`) cuts a JSON value mid-string. So each value is kept
at most `limit` characters long (Python characters, as the SDK counts them) and stays
what it was:

- a message list keeps its newest messages whole and leaves the older ones out (the span
  counts them); when the newest alone is too long, its longest texts are cut in their
  middle with a note saying how many characters were left out;
- any other JSON value has its longest strings cut the same way; when its shape alone
  (keys, numbers, many small items) is past the bound, it becomes a JSON string holding
  its cut text;
- a plain text is cut in its middle.

Under the bound a value is exactly what it would have been without one.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from yiemagent.types.text import cut_middle

__all__ = ["Bounded", "bounded_json", "bounded_messages", "bounded_text", "sdk_length_limit"]

LEFT_OUT = "characters (trace content bound)"
"""What the note in a cut text calls the characters it counts."""


@dataclass(frozen=True, slots=True)
class Bounded:
    """A content attribute's value within its bound."""

    value: str | None
    """The attribute's value (None: not even an empty value fits; leave it unset)."""
    elided_messages: int = 0
    """Older messages left out of a message list."""
    elided_chars: int = 0
    """Characters cut out of the texts kept (each cut says so in its text)."""

    @property
    def shortened(self) -> bool:
        """Whether anything was left out."""
        return bool(self.elided_messages or self.elided_chars)


def _json(value: object) -> str:
    return json.dumps(value, ensure_ascii=False, default=str)


def _largest(fits: Callable[[int], bool], low: int, high: int) -> int:
    """An n in [low, high) with `fits(n)`, given `fits(low)` and not `fits(high)`, by
    binary search: the largest when `fits` holds up to a point and not past it, and one
    that fits whatever `fits` does (an escape or a note's digits can bend it by a few)."""
    while high - low > 1:
        middle = (low + high) // 2
        if fits(middle):
            low = middle
        else:
            high = middle
    return low


def _cut(text: str, keep: int) -> tuple[str, int]:
    """`text` cut in its middle to `keep` characters and a note, with how many characters
    were left out; `text` whole (and 0) when the cut would not be shorter."""
    if len(text) <= keep:
        return text, 0
    cut = cut_middle(text, keep, left_out=LEFT_OUT)
    if len(cut) >= len(text):
        return text, 0
    return cut, len(text) - keep


def _capped(value: object, keep: int, counter: list[int]) -> object:
    """`value` with each of its strings (not its keys) cut to `keep` characters; adds the
    characters left out to `counter[0]`."""
    if isinstance(value, str):
        text, left_out = _cut(value, keep)
        counter[0] += left_out
        return text
    if isinstance(value, dict):
        return {key: _capped(item, keep, counter) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [_capped(item, keep, counter) for item in value]
    return value


def _longest_string(value: object) -> int:
    if isinstance(value, str):
        return len(value)
    if isinstance(value, dict):
        return max((_longest_string(item) for item in value.values()), default=0)
    if isinstance(value, (list, tuple)):
        return max((_longest_string(item) for item in value), default=0)
    return 0


def bounded_text(text: str, limit: int | None) -> Bounded:
    """`text` when it has at most `limit` characters (None: no bound); else cut in its
    middle with a note, `limit` characters in all (only its head when `limit` is too short
    for the note)."""
    if limit is None or len(text) <= limit:
        return Bounded(text)

    def fits(keep: int) -> bool:
        return len(_cut(text, keep)[0]) <= limit

    if not fits(0):
        return Bounded(text[:limit], elided_chars=len(text) - limit)
    keep = _largest(fits, 0, limit)
    cut, left_out = _cut(text, keep)
    return Bounded(cut, elided_chars=left_out)


def bounded_json(value: object, limit: int | None) -> Bounded:
    """`value` as JSON of at most `limit` characters (None: no bound), always valid JSON:
    whole when it fits; else with its longest strings cut (`_capped`); else, its shape
    alone being too long, a JSON string of its cut JSON text; else (a bound under 2) None.
    """
    whole = _json(value)
    if limit is None or len(whole) <= limit:
        return Bounded(whole)

    def capped(keep: int) -> tuple[str, int]:
        counter = [0]
        return _json(_capped(value, keep, counter)), counter[0]

    def fits(keep: int) -> bool:
        return len(capped(keep)[0]) <= limit

    longest = _longest_string(value)
    if longest and fits(0):
        text, left_out = capped(_largest(fits, 0, longest))
        return Bounded(text, elided_chars=left_out)

    def fits_as_text(keep: int) -> bool:
        return len(_json(_cut(whole, keep)[0])) <= limit

    if fits_as_text(0):
        text, left_out = _cut(whole, _largest(fits_as_text, 0, len(whole)))
        return Bounded(_json(text), elided_chars=left_out)
    if limit >= 2:
        return Bounded('""', elided_chars=len(whole))
    return Bounded(None, elided_chars=len(whole))


def bounded_messages(messages: Sequence[dict[str, Any]], limit: int | None) -> Bounded:
    """`messages` (the conventions' message shapes, oldest first) as a JSON list of at
    most `limit` characters (None: no bound): all of them when they fit; else the newest
    that fit whole, the older ones left out and counted; else the newest alone with its
    texts cut (`bounded_json`). Only the messages kept are serialized, so a span of a long
    run costs what it records, not the transcript."""
    if limit is None or not messages:
        return bounded_json(list(messages), limit)
    kept: list[str] = []
    size = 2  # the brackets; json.dumps puts ", " between items
    for message in reversed(messages):
        text = _json(message)
        grown = size + len(text) + (2 if kept else 0)
        if grown > limit:
            break
        kept.append(text)
        size = grown
    left_out = len(messages) - len(kept)
    if kept:
        return Bounded("[" + ", ".join(reversed(kept)) + "]", elided_messages=left_out)
    newest = bounded_json([messages[-1]], limit)
    return Bounded(newest.value, elided_messages=left_out - 1, elided_chars=newest.elided_chars)


def sdk_length_limit(tracer: object) -> int | None:
    """The longest attribute value the OpenTelemetry SDK keeps on `tracer`'s spans (it
    cuts longer ones mid-string): the SDK tracer's `SpanLimits` when it is one, else
    `OTEL_SPAN_ATTRIBUTE_VALUE_LENGTH_LIMIT`, else `OTEL_ATTRIBUTE_VALUE_LENGTH_LIMIT`, as
    the SDK reads them; None when neither is set (or set to "unset" or not a count)."""
    limits = getattr(tracer, "_span_limits", None)  # the SDK's Tracer; the API has none
    if limits is not None:
        length = getattr(limits, "max_span_attribute_length", None)
        return length if isinstance(length, int) else None
    for name in ("OTEL_SPAN_ATTRIBUTE_VALUE_LENGTH_LIMIT", "OTEL_ATTRIBUTE_VALUE_LENGTH_LIMIT"):
        given = os.environ.get(name, "").strip()
        if given:
            return int(given) if given.isdigit() else None
    return None
