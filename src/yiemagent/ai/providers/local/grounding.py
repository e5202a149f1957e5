"""The grounding guard of the embedded model (DESIGN §11): is a call backed by what
the model was given?

A small model calls an unrelated tool with made-up values
(`find_concert(artist="Some Band")` for a question naming no artist), invents paths
(`path/to/your/file.txt`) and copies example values into stray calls (`get_time("Tokyo")`
after reading that the city is Lisbon). The calls it gets right take their words and numbers
from the user's messages and the tool results. `ungrounded` lists what a call holds that
nothing backs; the `grounded` rule drops such a call and the reply is generated again
without that tool. (Measured: docs/local-model.md.)
"""

from __future__ import annotations

import re
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from typing import Any

from yiemagent.types.messages import (
    Message,
    ToolResultMessage,
    UserMessage,
    text_of,
)
from yiemagent.types.tools import AgentTool

__all__ = [
    "FILE_NAME",
    "PREFIX",
    "SHORT_WORD",
    "STRING_NUMBERS",
    "THOUSANDS",
    "Grounding",
    "authored",
    "choice_words",
    "coordinated",
    "drop_unbacked_options",
    "invented_numbers",
    "item_choices",
    "lettered",
    "listed_choices",
    "reads_files",
    "takes_files",
    "unbacked_numbers",
    "ungrounded",
    "value_numbers",
    "value_strings",
    "words",
]

PREFIX = 5
"""Words of at least this many letters match on their first `PREFIX` (point/points,
detail/detailed)."""
SHORT_WORD = 3
"""Words this short are not checked (codes a model knows: NY, CA, USD)."""

_WORD = re.compile(r"[^\W_]+")
_WEB_SUFFIX = r"(?:com|org|net|edu|gov|io)(?![\w-])"
_HOST = r"(?:[\w-]+\.)+(?:com|org|net|edu|gov|io)(?![\w-]|\.[A-Za-z])"
FILE_NAME = re.compile(
    rf"(?<![\w./@-])(?!{_HOST})(?:[\w-]+/)*"
    rf"(?:[\w-]+(?:\.[\w-]+)*\.(?!{_WEB_SUFFIX})[A-Za-z][A-Za-z0-9]{{1,7}}|\.[A-Za-z][\w-]+)"
    r"(?![\w/-])"
)
"""A file name or relative path: `name.ext`, `dir/name.ext`, `.gitignore`, `www.txt`. Not
a web or mail address: `www.python.org`, `example.com` (a dotted name ending in a generic
web domain: .com, .org, .net, .edu, .gov, .io), `bob@example.com`, nor a part of
`https://…`. Such
an address is no file to read (the 0.5B called `get_time {"place": "www.python.org"}`,
which passed as a given file name)."""
THOUSANDS = re.compile(r"(?<=\d),(?=\d{3})")
"""A thousands separator between digits (12,000)."""
_NUMBER = re.compile(r"(-?\d+(?:\.\d+)?)\s*([a-z]+)?")
_PERCENT = re.compile(r"(-?\d+(?:\.\d+)?)\s*(?:%|per ?cent\b)")
_ACRONYM = re.compile(r"(?<![^\W\d_])[A-Z]{2,3}(?![^\W\d_])")
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
    files: tuple[str, ...] = ()
    """The file names given ("pyproject.toml", "docs/README.md", ".gitignore"), as written,
    in order, each once."""
    percents: frozenset[float] = frozenset()
    """The numbers written as percentages ("5%", "2.5 percent" → 5.0, 2.5)."""
    text: str = ""
    """The text itself, lower case, without thousands separators (what `coordinated`
    reads)."""
    acronyms: frozenset[str] = frozenset()
    """The words of two or three letters written in capitals ("GDP", "BMI"), lower case:
    an abbreviation can name a tool (`choice.mentions`) where a short word in lower case
    ("get", "add") names none."""

    @classmethod
    def of(cls, messages: Sequence[Message]) -> Grounding:
        """The grounding of every user message and tool result in `messages`."""
        texts = [
            text_of(m.content) for m in messages if isinstance(m, UserMessage | ToolResultMessage)
        ]
        return cls.of_text("\n".join(texts))

    @classmethod
    def of_text(cls, text: str) -> Grounding:
        """The grounding of `text`."""
        files = tuple(dict.fromkeys(m.group(0) for m in FILE_NAME.finditer(text)))
        acronyms = frozenset(m.group(0).lower() for m in _ACRONYM.finditer(text))
        text = THOUSANDS.sub("", text.lower())
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
            files,
            frozenset(float(m.group(1)) for m in _PERCENT.finditer(text)),
            text,
            acronyms,
        )

    def has_word(self, word: str) -> bool:
        """Whether `word` (lower case) is given, also as its plural or singular in -s
        (toll/tolls), or shares its first `PREFIX` letters with a given word."""
        return (
            word in self.words
            or (len(word) >= PREFIX and word[:PREFIX] in self.prefixes)
            or f"{word}s" in self.words
            or (word.endswith("s") and word[:-1] in self.words)
        )

    def has_number(self, value: float) -> bool:
        """Whether `value` is a given number (to 2 decimals)."""
        return any(round(value, 2) == round(n, 2) for n in self.numbers)

    def knows_word(self, word: str) -> bool:
        """Whether `word` (lower case) is backed: `has_word`, or at most `SHORT_WORD` letters
        long."""
        return len(word) <= SHORT_WORD or self.has_word(word)

    def knows_number(self, value: float) -> bool:
        """Whether `value` is backed: 0 or 1, or a given number (to 2 decimals), also as a
        percentage of one (5 % ↔ 0.05) or without its sign."""
        if value in (0.0, 1.0):
            return True
        return any(self.has_number(c) for c in (value, abs(value), value * 100, value / 100))


STRING_NUMBERS = 3
"""A string holding this many distinct numbers that nothing backs is not grounded."""
_IN_STRING = re.compile(r"\d+(?:\.\d+)?")
_ONE_NUMBER = re.compile(r"-?\d+(?:\.\d+)?")


def _string_numbers(text: str) -> set[str]:
    """The numbers written in `text` ("14", "2.5"; thousands separators read)."""
    return set(_IN_STRING.findall(THOUSANDS.sub("", text)))


def unbacked_numbers(text: str, grounding: Grounding) -> set[str]:
    """The numbers written in `text` ("14", "2.5"; thousands separators read) that
    `grounding` does not back (`Grounding.knows_number`)."""
    return {m for m in _string_numbers(text) if not grounding.knows_number(float(m))}


RUNAWAY_DIGITS = 30
"""A number written with more digits than this that nothing backs is invented outright: the
0.5B can run a factor on to hundreds of zeros (`50 * 1000…0` for a rate it does not know)."""


def invented_numbers(text: str, grounding: Grounding) -> set[str]:
    """`unbacked_numbers` of `text`, when one has more than `RUNAWAY_DIGITS` digits, or
    there are `STRING_NUMBERS` or more of them and `text` takes no number from what was
    given (else none).

    A string that works on a given number brings the constants its computation needs:
    `(100 - 32) * 5 / 9` for "Convert 100 Fahrenheit to Celsius." holds 32, 5 and 9, which
    nobody wrote, and is grounded by its 100; `3 + 4 * 5 / 2 - 3` for a question about a
    README takes nothing given and is invented."""
    unknown = unbacked_numbers(text, grounding)
    if any(sum(c.isdigit() for c in m) > RUNAWAY_DIGITS for m in unknown):
        return unknown
    if len(unknown) < STRING_NUMBERS:
        return set()
    if any(grounding.has_number(float(m)) for m in _string_numbers(text)):
        return set()
    return unknown


def authored(tool: AgentTool, parameter: str) -> bool:
    """Whether the tool's `parameter` holds content the model composes — its schema names a
    `contentMediaType` (JSON Schema 2020-12), e.g. code (`text/x-python`), a schema
    (`application/schema+json`), a text (`text/plain`) — rather than a value taken from the
    conversation. The guards do not check such a parameter (writeTool's code and schema are
    never in the request)."""
    properties = tool.input_schema.get("properties")
    param = properties.get(parameter) if isinstance(properties, dict) else None
    return isinstance(param, dict) and "contentMediaType" in param


_FILE_WORDS = ("file", "path", "folder", "directory")
_CAMEL_SPLIT = re.compile(r"(?<=[a-z])(?=[A-Z])")


def takes_files(tool: AgentTool, parameter: str) -> bool:
    """Whether the tool's `parameter` takes a file name: its name or its description has a
    word beginning with "file", "path", "folder" or "directory" (`path`, `filename`, "The
    file to read"), or it is the tool's one required parameter, a string, and the tool's
    own description has such a word (an MCP server's `read_note(name)`, "Read one note
    file by its name"). A file name in any other parameter (a city, an expression) stands
    for the file's content, which only a call that reads the file can give."""
    properties = tool.input_schema.get("properties")
    param = properties.get(parameter) if isinstance(properties, dict) else None
    description = param.get("description", "") if isinstance(param, dict) else ""
    text = f"{parameter.replace('_', ' ')} {description if isinstance(description, str) else ''}"
    if _has_file_word(text):
        return True
    required = tool.input_schema.get("required")
    kind = param.get("type", "string") if isinstance(param, dict) else "string"
    return required == [parameter] and kind == "string" and _has_file_word(tool.description)


def _has_file_word(text: str) -> bool:
    return any(word.startswith(_FILE_WORDS) for word in words(_CAMEL_SPLIT.sub(" ", text)))


def reads_files(tool: AgentTool) -> bool:
    """Whether a REQUIRED parameter of the tool `takes_files` (`read_file`'s `path`)."""
    required = tool.input_schema.get("required")
    names = required if isinstance(required, list) else []
    return any(isinstance(name, str) and takes_files(tool, name) for name in names)


_QUOTED = re.compile(r"""(?<![\w'"])(['"`])([^'"`\n]{1,40})\1(?![\w'"])""")
_CHOICE_GAP = re.compile(r"\s*(?:,|,?\s*or|\||/)\s*")
_EXAMPLES = re.compile(
    r"(?:e\.\s?g\.?|for example|for instance|such as|like)[\s:,]*$", re.IGNORECASE
)
_SLASHED = re.compile(r"[^\W_]+(?:\s*[/|]\s*[^\W_]+)+")


def listed_choices(description: str) -> set[str]:
    """The words of the values a parameter's description lists as its choices, when its
    schema has no enum: quoted alternatives (`'metric' or 'imperial'`, `"asc" | "desc"`,
    `'a', 'b' or 'c'`) or slashed words (`city/state/country`). Such a value is the
    tool's own word, not one the model invented (`type: "country"` for "the population …
    of the USA"). A lone quoted value, quoted values in a comma list or in code, and
    values after "such as", "e.g.", "for example" or "like" are examples, not choices: the
    0.5B copies examples into stray calls (and kept `category: "Physics"` for "Einstein's
    contribution to science" from "such as 'Physics' or 'Chemistry'")."""
    found: set[str] = set()
    quoted = list(_QUOTED.finditer(description))
    run: list[str] = []
    alternative = False
    examples = False
    for i, match in enumerate(quoted):
        if not run:
            examples = _EXAMPLES.search(description[: match.start()]) is not None
        run.append(match.group(2))
        gap = description[match.end() : quoted[i + 1].start()] if i + 1 < len(quoted) else ""
        joined = i + 1 < len(quoted) and _CHOICE_GAP.fullmatch(gap) is not None
        alternative = alternative or (joined and gap.strip() != ",")
        if not joined:
            if len(run) >= 2 and alternative and not examples:
                found |= words(" ".join(run))
            run, alternative = [], False
    for match in _SLASHED.finditer(description):
        found |= words(match.group(0))
    return found


def choice_words(param: Any) -> set[str]:
    """The words of the values a parameter schema offers as its choices: its `enum`, and the
    values its description lists (`listed_choices`). Empty for anything but a dict."""
    if not isinstance(param, dict):
        return set()
    enum = param.get("enum")
    found = words(" ".join(map(str, enum))) if isinstance(enum, list) else set()
    if isinstance(param.get("description"), str):
        found |= listed_choices(param["description"])
    return found


def item_choices(param: Any) -> list[Any] | None:
    """The choices of a list parameter: the `enum` of its `items`, when it has one that
    is not empty; else None."""
    items = param.get("items") if isinstance(param, dict) else None
    enum = items.get("enum") if isinstance(items, dict) else None
    return enum if isinstance(enum, list) and enum else None


def ungrounded(tool: AgentTool, arguments: dict[str, Any], grounding: Grounding) -> set[str]:
    """What `arguments` hold in the tool's REQUIRED parameters that `grounding` does not
    back: words with a letter (not in the parameter's enum, and not a name written as a
    function, `sqrt(`), JSON numbers, and the numbers written in a string once it holds
    `STRING_NUMBERS` or more that nothing backs (one or two may be derived: an expression
    may compute 0.15 from "15 %"; the 0.5B model invents whole expressions,
    `3 + 4 * 5 / 2 - 3` for a question about a README). `authored` parameters are not
    checked. Empty: the call is grounded."""
    schema = tool.input_schema
    properties = schema.get("properties")
    properties = properties if isinstance(properties, dict) else {}
    required = schema.get("required")
    missing: set[str] = set()
    for name in required if isinstance(required, list) else ():
        if name not in arguments or authored(tool, name):
            continue
        missing |= _unbacked(properties.get(name), arguments[name], grounding)
    return missing


def _unbacked(param: Any, value: Any, grounding: Grounding, *, choices: bool = True) -> set[str]:
    """The words with a letter (not a `name(` function name, and with `choices` not in the
    parameter's enum or the choices its description lists) and the numbers in `value` that
    `grounding` does not back. A string that is one number is judged as that number
    (`"2021"` as 2021): there is nothing in it to compute the number from."""
    allowed = choice_words(param) if choices else set()
    missing: set[str] = set()
    for text in value_strings(value):
        if _ONE_NUMBER.fullmatch(text.strip()):  # a number written as a string is a number
            if not grounding.knows_number(float(text)):
                missing.add(text.strip())
            continue
        missing |= {w for w in lettered(text) - allowed if not grounding.knows_word(w)}
        missing |= invented_numbers(text, grounding)
    missing |= {format(n, "g") for n in value_numbers(value) if not grounding.knows_number(n)}
    return missing


def drop_unbacked_options(
    tool: AgentTool, arguments: dict[str, Any], grounding: Grounding
) -> dict[str, Any]:
    """`arguments` without the OPTIONAL values that `grounding` does not back: an
    optional parameter whose value holds a word or number nothing backs (the `ungrounded`
    tests) is left out, so the tool's default applies; in a list of strings, such items are
    left out, and the parameter too when none is left. The 0.5B fills optional parameters
    with values of its own (`category: "Drama"` for "all movies starring Leonardo
    DiCaprio", `start_year: 1789` for Lincoln's presidency), the parameter's own choices
    too (`units: "metric"` for "What is the weather in Oslo?"): where a required value must
    be one of the choices, an optional one the request does not write is the model's pick,
    and the tool's default is its author's. Required values are the call's (`ungrounded`),
    `authored` parameters are the model's own; `arguments` itself comes back when nothing
    changes."""
    schema = tool.input_schema
    properties = schema.get("properties")
    properties = properties if isinstance(properties, dict) else {}
    required = schema.get("required")
    required = set(required) if isinstance(required, list) else set()
    kept = arguments
    for name, value in arguments.items():
        if name in required or authored(tool, name) or isinstance(value, bool):
            continue
        param = properties.get(name)
        if isinstance(value, list) and value and all(isinstance(v, str) for v in value):
            backed = [v for v in value if not _unbacked(param, v, grounding, choices=False)]
            if len(backed) == len(value):
                continue
            kept = {k: v for k, v in kept.items() if k != name}
            if backed:
                kept[name] = backed
        elif _unbacked(param, value, grounding, choices=False):
            kept = {k: v for k, v in kept.items() if k != name}
    return kept


_SEPARATOR = r"\s*(?:,|;|&|/|\band\b|\bor\b|\bas well as\b)(?:\s*(?:,|\band\b|\bor\b))*\s*"
_ITEM = r"['\"]?[\w.+-]+(?: [\w.+-]+){0,2}['\"]?"
_LIST_BETWEEN = re.compile(rf"['\"]?{_SEPARATOR}(?:{_ITEM}{_SEPARATOR})*['\"]?")
"""What may stand between two items of one list: separators (a comma, "and", "or", "&",
"/"), and other items of one to three words between separators."""


def coordinated(
    first: Any,
    second: Any,
    siblings: Collection[Any],
    grounding: Grounding,
    apart: Collection[Any] = (),
) -> bool:
    """Whether the text of `grounding` writes the values `first` and `second` in one list
    ("tea and coffee", "10, 20 and 30 years", "'red' and 'blue'"): between them only
    separators (commas, "and", "or", "&", "/"), quotes, `siblings` (values of the same
    parameter the reply uses, "San Francisco, California") and other items of one to three
    words between separators ("1990, 1991 or 1992"). "Taylor Swift for 20 minutes and
    Maroon 5 for 15 minutes" does not write 20 and 15 in one list, nor does "3 and 4, 5
    and 12" write 3 and 5 in one when 4 is in `apart` (values of another parameter: the
    list is of pairs). Strings and numbers only, matched as whole words, ignoring case."""
    forms = [_written(v) for v in (first, second)]
    if not grounding.text or None in forms or forms[0] == forms[1]:
        return False
    others = sorted(
        {f for f in (_written(v) for v in siblings) if f and f not in forms}, key=len, reverse=True
    )
    places = [[m.span() for m in _whole(f).finditer(grounding.text)] for f in forms if f]
    foreign = [_whole(f) for f in (_written(v) for v in apart) if f and f not in forms]
    for a_start, a_end in places[0]:
        for b_start, b_end in places[1]:
            between = grounding.text[min(a_end, b_end) : max(a_start, b_start)]
            if a_start < b_end and b_start < a_end:
                continue  # overlapping: one holds the other
            if any(pattern.search(between) for pattern in foreign):
                continue
            for other in others:
                between = _whole(other).sub(" ", between)
            between = _EMPTY_QUOTES.sub(" ", between)  # 'a', 'b' and 'c' without 'b'
            if between.strip() and _LIST_BETWEEN.fullmatch(between.strip(" ")):
                return True
    return False


_EMPTY_QUOTES = re.compile(r"""(['"`])\s*\1""")


def _written(value: Any) -> str | None:
    # A string or number as the text would write it (lower case; 5.0 → "5"), else None.
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        return format(float(value), "g") if abs(value) < 1e15 else None
    if isinstance(value, str) and value.strip():
        return THOUSANDS.sub("", value.strip().lower())
    return None


def _whole(form: str) -> re.Pattern[str]:
    return re.compile(rf"(?<![\w.]){re.escape(form)}(?![\w]|\.\d)")


def lettered(text: str) -> set[str]:
    """The words of `text` (lower case) that hold a letter, bar names written as a
    function (`sqrt(` in `sqrt(2) * 10`): the words the grounding guard checks."""
    called = {m.lower() for m in _CALLED.findall(text)}
    return {w for w in words(text) - called if any(c.isalpha() for c in w)}


def value_strings(value: Any) -> list[str]:
    """Every string in a JSON argument value, nested lists and objects included (object
    values, not keys), in order."""
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for v in value.values() for s in value_strings(v)]
    if isinstance(value, list):
        return [s for v in value for s in value_strings(v)]
    return []


def value_numbers(value: Any) -> list[float]:
    """Every JSON number in an argument value as a float, nested lists and objects included;
    booleans are not numbers."""
    if isinstance(value, bool):
        return []
    if isinstance(value, int | float):
        return [float(value)]
    if isinstance(value, dict):
        return [n for v in value.values() for n in value_numbers(v)]
    if isinstance(value, list):
        return [n for v in value for n in value_numbers(v)]
    return []
