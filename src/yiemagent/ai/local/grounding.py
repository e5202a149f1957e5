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
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from typing import Any

from yiemagent.ai.local.prompt import current_request, last_results
from yiemagent.types.messages import (
    AssistantMessage,
    ImageContent,
    Message,
    TextContent,
    ToolResultMessage,
    UserMessage,
)
from yiemagent.types.tools import AgentTool

__all__ = [
    "COMMON_WORDS",
    "FILE_NAME",
    "PREFIX",
    "SHORT_WORD",
    "STRING_NUMBERS",
    "ChainStep",
    "Grounding",
    "adds_to",
    "authored",
    "drop_unbacked_options",
    "invented_numbers",
    "mentions",
    "relevant",
    "repair_file_names",
    "ungrounded",
    "unknown_tool",
    "vocabulary",
    "words",
]

PREFIX = 5
"""Words of at least this many letters match on their first `PREFIX` (point/points,
detail/detailed)."""
SHORT_WORD = 3
"""Words this short are not checked (codes a model knows: NY, CA, USD)."""

_WORD = re.compile(r"[^\W_]+")
FILE_NAME = re.compile(
    r"(?<![\w./-])(?:[\w-]+/)*(?:[\w-]+(?:\.[\w-]+)*\.[A-Za-z][A-Za-z0-9]{1,7}|\.[A-Za-z][\w-]+)(?![\w/-])"
)
"""A file name or relative path: `name.ext`, `dir/name.ext`, `.gitignore`."""
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
    files: tuple[str, ...] = ()
    """The file names given ("pyproject.toml", "docs/README.md", ".gitignore"), as written,
    in order, each once."""

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
        files = tuple(dict.fromkeys(m.group(0) for m in FILE_NAME.finditer(text)))
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
            files,
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


def invented_numbers(text: str, grounding: Grounding) -> set[str]:
    """The numbers written in `text` that `grounding` does not back, when there are
    `STRING_NUMBERS` or more of them (else none)."""
    found = set(_IN_STRING.findall(_THOUSANDS.sub("", text)))
    unknown = {m for m in found if not grounding.knows_number(float(m))}
    return unknown if len(unknown) >= STRING_NUMBERS else set()


def authored(tool: AgentTool, parameter: str) -> bool:
    """Whether the tool's `parameter` holds content the model composes — its schema names a
    `contentMediaType` (JSON Schema 2020-12), e.g. code (`text/x-python`), a schema
    (`application/schema+json`), a text (`text/plain`) — rather than a value taken from the
    conversation. The guards do not check such a parameter (writeTool's code and schema are
    never in the request)."""
    properties = tool.input_schema.get("properties")
    param = properties.get(parameter) if isinstance(properties, dict) else None
    return isinstance(param, dict) and "contentMediaType" in param


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
        param = properties.get(name)
        enum = param.get("enum") if isinstance(param, dict) else None
        allowed = words(" ".join(map(str, enum))) if isinstance(enum, list) else set()
        for text in _strings(arguments[name]):
            missing |= {w for w in _lettered(text) - allowed if not grounding.knows_word(w)}
            missing |= invented_numbers(text, grounding)
        missing |= {
            format(n, "g") for n in _numbers(arguments[name]) if not grounding.knows_number(n)
        }
    return missing


def _unbacked(param: Any, value: Any, grounding: Grounding) -> set[str]:
    """The words with a letter (not in the parameter's enum, nor a `name(` function name)
    and the numbers in `value` that `grounding` does not back."""
    enum = param.get("enum") if isinstance(param, dict) else None
    allowed = words(" ".join(map(str, enum))) if isinstance(enum, list) else set()
    missing: set[str] = set()
    for text in _strings(value):
        missing |= {w for w in _lettered(text) - allowed if not grounding.knows_word(w)}
        missing |= invented_numbers(text, grounding)
    missing |= {format(n, "g") for n in _numbers(value) if not grounding.knows_number(n)}
    return missing


def drop_unbacked_options(
    tool: AgentTool, arguments: dict[str, Any], grounding: Grounding
) -> dict[str, Any]:
    """`arguments` without the OPTIONAL values that `grounding` does not back (R-11.2): an
    optional parameter whose value holds a word or number nothing backs (the `ungrounded`
    tests) is left out, so the tool's default applies; in a list of strings, such items are
    left out, and the parameter too when none is left. The 0.5B fills optional parameters
    with values of its own (`category: "Drama"` for "all movies starring Leonardo
    DiCaprio", `start_year: 1789` for Lincoln's presidency). Required values are the call's
    (`ungrounded`), `authored` parameters are the model's own; `arguments` itself comes back
    when nothing changes."""
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
            backed = [v for v in value if not _unbacked(param, v, grounding)]
            if len(backed) == len(value):
                continue
            kept = {k: v for k, v in kept.items() if k != name}
            if backed:
                kept[name] = backed
        elif _unbacked(param, value, grounding):
            kept = {k: v for k, v in kept.items() if k != name}
    return kept


def adds_to(
    tool: AgentTool,
    arguments: dict[str, Any],
    earlier: Sequence[tuple[AgentTool, dict[str, Any]]],
    request: Grounding,
    tool_words: Collection[str] = (),
) -> bool:
    """Whether a call written after `earlier` calls of the same reply brings a part of the
    request they leave out (R-11.1): a word or number of `request` (the current user
    message) in its required values that no earlier call holds and that is not one of the
    tools' own words (`tool_words`, from `vocabulary`: "time" in "What time is it in Tokyo?"
    names no part). A repeat, a reshuffle of the same values, or a call built from values
    the request does not give adds nothing.
    """
    held = set(tool_words)
    for earlier_tool, earlier_arguments in earlier:
        held |= _tokens(earlier_tool, earlier_arguments)
    return any(_in_request(token, request) for token in _tokens(tool, arguments) - held)


_COMMON = (
    "about also another given have into like more only other return returns some tell "
    "than that their them then there these they this what when where which will with "
    "would your used uses using value values"
)
COMMON_WORDS = frozenset(_COMMON.split())
"""Words of four or more letters that name no tool ("Tell me what…"): `mentions` skips them."""


def mentions(tool: AgentTool, request: Grounding) -> bool:
    """Whether `request` names `tool`: a word of four or more letters of its name or
    description (not one of `COMMON_WORDS`) is in the request, or shares its first `PREFIX`
    letters with a request word ("compute it with the calculator", "what time is it")."""
    own = words(f"{tool.name} {tool.description}".replace("_", " ")) - COMMON_WORDS
    return any(request.has_word(word) for word in own if len(word) >= 4)


_CAMEL = re.compile(r"(?<=[a-z])(?=[A-Z])")


def unknown_tool(
    name: str, tools: Sequence[AgentTool], answer: str, request: Grounding | None = None
) -> bool:
    """Whether `name`, the tool name the model writes when no grammar holds it to the list
    (R-11.2), is a function name of two or more words (`order_pizza`, `bitcoinPrice`) that
    is neither the answer's nor a tool's, and names none (`mentions`, with the name's words
    as the request: `calculate_area` names `calculator`) or whose first word, its action,
    is a word of the `request` that no tool's name or description has (`delete_file`
    beside `read_file` for "Delete the file notes.txt."). Then the model judged that the
    request needs a tool that is not there. A one-word name is not taken as such: the
    model also writes the request's subject there (`opposite`, `pyproject.toml`,
    `yiemagent`).

    Measured (docs/local-model.md): such a name came for 6 of 30 BFCL irrelevance
    questions, none of 60 simple_python and multiple ones, and none of the project's tasks
    a tool serves."""
    if name == answer or not name.isidentifier() or any(tool.name == name for tool in tools):
        return False
    spelled = _CAMEL.sub(" ", name).replace("_", " ")
    if len(spelled.split()) < 2:
        return False
    if not any(mentions(tool, Grounding.of_text(spelled)) for tool in tools):
        return True
    # Its first word is its action: `delete_file` names `read_file` by "file", but the
    # request asks to delete and no tool deletes. (Only a word of the request: the model
    # also garbles a tool's name, `suits_search` for `lawsuits_search`; a word of three
    # letters or fewer, `get`/`set`, says too little.)
    verb = spelled.split()[0].lower()
    if request is None or len(verb) <= SHORT_WORD or not request.has_word(verb):
        return False
    return not any(
        Grounding.of_text(f"{tool.name} {tool.description}".replace("_", " ")).has_word(verb)
        for tool in tools
    )


def relevant(tool: AgentTool, arguments: dict[str, Any], request: Grounding) -> bool:
    """Whether a call before any result may serve `request` (R-11.2): the request names the
    tool (`mentions`), or the call's required values (all, when none is required) hold no
    word: only numbers, expressions (`17 * 23`, `sqrt(2) * 10`) and file names the request
    gives.

    The 0.5B model calls an unrelated tool with words of the question (BFCL irrelevance:
    `get_stock_data("Lakers")` for who won a game, `get_time("Berlin")` for the weather).
    On BFCL's own correct answers the request names the tool in 98 % of simple_python and
    multiple cases, 99-100 % of the parallel ones; of the irrelevance questions, 41 % name
    any tool offered (docs/local-model.md)."""
    if mentions(tool, request):
        return True
    files = {name.lower() for name in request.files}
    for value in _required_values(tool, arguments):
        for text in _strings(value):
            if text.strip().lower() not in files and _lettered(text):
                return False
    return True


def _lettered(text: str) -> set[str]:
    # The words of `text` with a letter, bar names written as a function (`sqrt(`).
    called = {m.lower() for m in _CALLED.findall(text)}
    return {w for w in words(text) - called if any(c.isalpha() for c in w)}


@dataclass(slots=True, frozen=True)
class ChainStep:
    """What a call after tool results must bring (R-11.2): the 0.5B model, given results,
    often calls again with a result copied into an unrelated tool (`calculator("11:31 on
    Tuesday…")`, `get_time("secret.txt")`). A call of a tool not yet used is offered only when
    the request names that tool (`mentions`; the provider drops the others' branches); a
    further call of a tool already used must carry a value of the results that neither the
    request nor an earlier call holds (a chain's next step: `read_file("secret.txt")` after
    reading that the word is in secret.txt, `391 + 9` after 17 * 23 = 391)."""

    called: tuple[tuple[AgentTool, dict[str, Any]], ...]
    """The calls made since the request."""
    results: Grounding
    """The grounding of the results since the request."""
    known: frozenset[str]
    """The words of the request and of the tools."""

    request: Grounding
    """The grounding of the request (the last user message)."""
    failed: frozenset[str] = frozenset()
    """Tools whose last result was an error: a retry of them is free."""

    @classmethod
    def after(cls, messages: Sequence[Message], tools: Sequence[AgentTool]) -> ChainStep | None:
        """The rule for the next reply to `messages`; None before any result since the last
        user message."""
        since = current_request(messages)
        if not since or not isinstance(since[-1], ToolResultMessage):
            return None
        by_name = {tool.name: tool for tool in tools}
        called = tuple(
            (by_name[call.name], call.arguments)
            for m in since
            if isinstance(m, AssistantMessage)
            for call in m.tool_calls
            if call.name in by_name
        )
        results = [m for m in since if isinstance(m, ToolResultMessage)]
        request = Grounding.of(since[:1] if isinstance(since[0], UserMessage) else [])
        last_round = results[len(results) - last_results(since) :]
        failed = {m.tool_name for m in last_round if m.is_error}
        return cls(
            called,
            Grounding.of(results),
            request.words | vocabulary(tools),
            request,
            frozenset(failed),
        )

    def unnamed(self, tools: Sequence[AgentTool]) -> set[str]:
        """The tools not used yet that the request does not name: not offered now."""
        used = {tool.name for tool, _ in self.called}
        return {t.name for t in tools if t.name not in used and not mentions(t, self.request)}

    def allows(self, tool: AgentTool, arguments: dict[str, Any]) -> bool:
        """Whether a call of `tool` with `arguments` may run now."""
        if tool.name in self.failed or all(earlier.name != tool.name for earlier, _ in self.called):
            return True
        return adds_to(tool, arguments, self.called, self.results, self.known)


def vocabulary(tools: Sequence[AgentTool]) -> frozenset[str]:
    """The words of the tools' names, descriptions and parameter names (`adds_to`)."""
    found: set[str] = set()
    for tool in tools:
        properties = tool.input_schema.get("properties")
        names = " ".join(properties) if isinstance(properties, dict) else ""
        found |= words(f"{tool.name} {tool.description} {names}".replace("_", " "))
    return frozenset(found)


def _required_values(tool: AgentTool, arguments: dict[str, Any]) -> list[Any]:
    # The values of the required parameters (all values when none is required).
    required = tool.input_schema.get("required")
    names = [n for n in required if n in arguments] if isinstance(required, list) else []
    return [arguments[n] for n in names] if names else list(arguments.values())


def _tokens(tool: AgentTool, arguments: dict[str, Any]) -> set[str]:
    # The words and numbers of the required values, numbers as `format(n, "g")`.
    found: set[str] = set()
    for value in _required_values(tool, arguments):
        for text in _strings(value):
            found |= {
                format(float(w), "g") if w.isdigit() else w for w in words(_THOUSANDS.sub("", text))
            }
        found |= {format(n, "g") for n in _numbers(value)}
    return found


def _in_request(token: str, request: Grounding) -> bool:
    try:
        value = float(token)
    except ValueError:
        return request.has_word(token)
    return request.has_number(value)


def repair_file_names(
    tool: AgentTool, arguments: dict[str, Any], grounding: Grounding, used: Collection[str]
) -> dict[str, Any]:
    """`arguments` with each required string that is a file name nothing gives replaced by
    the one file name that is given and not yet `used` (R-11.2: the 0.5B writes
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
