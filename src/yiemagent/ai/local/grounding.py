"""The grounding guard of the embedded model (DESIGN §11, R-11.2): is a call backed by what
the model was given?

The 0.5B model calls an unrelated tool with made-up values (BFCL irrelevance:
`concert_availability(artist="The Beatles")` for a question naming no artist), invents paths
(`path/to/your/file.txt`) and copies example values into stray calls (`get_time("Tokyo")`
after reading that the city is Lisbon). The calls it gets right take their words and numbers
from the user's messages and the tool results. `ungrounded` lists what a call holds that
nothing backs; the provider drops such a call and generates the reply again without that tool.

Measured against BFCL's own ground-truth calls (docs/local-model.md): the guard flags 8 % of
correct simple_python calls and 7 % of multiple (exact word matching flagged 21 % and 20 %),
and catches 12 of 16 distinct irrelevance calls the model made.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from yiemagent.types.messages import (
    ImageContent,
    Message,
    TextContent,
    ToolResultMessage,
    UserMessage,
)
from yiemagent.types.tools import AgentTool

__all__ = ["PREFIX", "SHORT_WORD", "Grounding", "ungrounded", "words"]

PREFIX = 5
"""Words of at least this many letters match on their first `PREFIX` (point/points,
detail/detailed)."""
SHORT_WORD = 3
"""Words this short are not checked (codes a model knows: NY, CA, USD)."""

_WORD = re.compile(r"[^\W_]+")
_THOUSANDS = re.compile(r"(?<=\d),(?=\d{3})")
_NUMBER = re.compile(r"(-?\d+(?:\.\d+)?)\s*([a-z]+)?")
_CALLED = re.compile(r"([^\W_]+)\s*\(")
_SCALES = {"hundred": 1e2, "thousand": 1e3, "k": 1e3, "million": 1e6, "m": 1e6, "billion": 1e9}
_UNITS = (
    "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen "
    "fifteen sixteen seventeen eighteen nineteen twenty"
)
_TENS = "thirty forty fifty sixty seventy eighty ninety"
_NUMBER_WORDS = {
    **{w: float(i) for i, w in enumerate(_UNITS.split(" "))},
    **{w: 10.0 * i for i, w in enumerate(_TENS.split(" "), 3)},
    "hundred": 1e2,
    "thousand": 1e3,
    "million": 1e6,
    "billion": 1e9,
    "dozen": 12.0,
    "half": 0.5,
    "first": 1.0,
    "second": 2.0,
    "third": 3.0,
}


def words(text: str) -> set[str]:
    """The lower-cased letter/digit runs of `text` ("data/times.txt" → data, times, txt)."""
    return set(_WORD.findall(text.lower()))


@dataclass(slots=True, frozen=True)
class Grounding:
    """What the model was given: the words, word prefixes and numbers of the user messages
    and tool results (numbers also with their scale: "100 million" → 1e8; number words:
    "ten" → 10)."""

    words: frozenset[str]
    prefixes: frozenset[str]
    numbers: frozenset[float]

    @classmethod
    def of(cls, messages: Sequence[Message]) -> Grounding:
        """The grounding of every user message and tool result in `messages`."""
        texts = [
            _text(m.content) for m in messages if isinstance(m, UserMessage | ToolResultMessage)
        ]
        return cls.of_text("\n".join(texts))

    @classmethod
    def of_text(cls, text: str) -> Grounding:
        """The grounding of `text`."""
        text = _THOUSANDS.sub("", text.lower())
        found = words(text)
        numbers = {_NUMBER_WORDS[w] for w in found if w in _NUMBER_WORDS}
        for match in _NUMBER.finditer(text):
            value = float(match.group(1))
            numbers |= {value, abs(value)}
            scale = _SCALES.get(match.group(2) or "")
            if scale:
                numbers.add(value * scale)
        return cls(
            frozenset(found),
            frozenset(w[:PREFIX] for w in found if len(w) >= PREFIX),
            frozenset(numbers),
        )

    def knows_word(self, word: str) -> bool:
        """Whether `word` (lower case) is backed: given, sharing its first `PREFIX` letters
        with a given word, or at most `SHORT_WORD` letters long."""
        if len(word) <= SHORT_WORD or word in self.words:
            return True
        return len(word) >= PREFIX and word[:PREFIX] in self.prefixes

    def knows_number(self, value: float) -> bool:
        """Whether `value` is backed: 0 or 1, or a given number (to 2 decimals), also as a
        percentage of one (5 % ↔ 0.05) or without its sign."""
        if value in (0.0, 1.0):
            return True
        for candidate in (value, abs(value), value * 100, value / 100):
            if any(round(candidate, 2) == round(n, 2) for n in self.numbers):
                return True
        return False


def ungrounded(tool: AgentTool, arguments: dict[str, Any], grounding: Grounding) -> set[str]:
    """What `arguments` hold in the tool's REQUIRED parameters that `grounding` does not
    back: words with a letter (not in the parameter's enum, and not a name written as a
    function, `sqrt(`), and JSON numbers (digits inside strings are not checked: an
    expression may compute 0.15 from "15 %"). Empty: the call is grounded."""
    schema = tool.input_schema
    properties = schema.get("properties")
    properties = properties if isinstance(properties, dict) else {}
    required = schema.get("required")
    missing: set[str] = set()
    for name in required if isinstance(required, list) else ():
        if name not in arguments:
            continue
        param = properties.get(name)
        enum = param.get("enum") if isinstance(param, dict) else None
        allowed = words(" ".join(map(str, enum))) if isinstance(enum, list) else set()
        for text in _strings(arguments[name]):
            called = {m.lower() for m in _CALLED.findall(text)}
            missing |= {
                w
                for w in words(text) - allowed - called
                if any(c.isalpha() for c in w) and not grounding.knows_word(w)
            }
        missing |= {
            format(n, "g") for n in _numbers(arguments[name]) if not grounding.knows_number(n)
        }
    return missing


def _text(content: Sequence[TextContent | ImageContent]) -> str:
    return "\n".join(block.text for block in content if isinstance(block, TextContent))


def _strings(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for v in value.values() for s in _strings(v)]
    if isinstance(value, list):
        return [s for v in value for s in _strings(v)]
    return []


def _numbers(value: Any) -> list[float]:
    if isinstance(value, bool):
        return []
    if isinstance(value, int | float):
        return [float(value)]
    if isinstance(value, dict):
        return [n for v in value.values() for n in _numbers(v)]
    if isinstance(value, list):
        return [n for v in value for n in _numbers(v)]
    return []
