"""Which tool and which part of a request a call of the embedded model serves (DESIGN §11): whether
the request names a tool (`mentions`, `relevant`), whether a name
the model writes free is a tool that is not there (`unknown_tool`), whether an extra call of
a reply brings a part the earlier calls leave out (`adds_to`), and what a call after tool
results must bring (`ChainStep`). What the model was given, and whether a value is backed
by it, is `grounding`'s."""

from __future__ import annotations

import ast
import re
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from typing import Any

from yiemagent.ai.providers.local.grounding import (
    SHORT_WORD,
    THOUSANDS,
    Grounding,
    choice_words,
    coordinated,
    lettered,
    reads_files,
    takes_files,
    value_numbers,
    value_strings,
    words,
)
from yiemagent.ai.providers.local.prompt import coined, current_request, last_results
from yiemagent.types.messages import AssistantMessage, Message, ToolResultMessage, UserMessage
from yiemagent.types.tools import AgentTool

__all__ = [
    "COMMON_WORDS",
    "ChainStep",
    "adds_to",
    "distinct_words",
    "mentions",
    "other_words",
    "prose",
    "recombines",
    "relevant",
    "spells",
    "unknown_tool",
    "vocabulary",
]


def adds_to(
    tool: AgentTool,
    arguments: dict[str, Any],
    earlier: Sequence[tuple[AgentTool, dict[str, Any]]],
    request: Grounding,
    tool_words: Collection[str] = (),
) -> bool:
    """Whether a call written after `earlier` calls of the same reply brings a part of the
    request they leave out: a word or number of `request` (the current user
    message) that no earlier call holds in any of its values and that is not one of the
    tools' own words
    (`tool_words`, from `vocabulary`: "time" in "What time is it in Tokyo?" names no part),
    in its required values or in an optional value that changes an earlier call's value of
    that parameter ("resistivity of copper and aluminum": `resistivity: "aluminum"` after
    `"copper"`). A call of a tool no earlier call used also adds one when a word of its
    name that the earlier tools' names, descriptions and parameter names lack (`vocabulary`:
    "speed" names no new part beside a tool taking `initial_speed`) is a word of the
    request ("final velocity …
    Also, compute the total distance": `distance_traveled` after `final_velocity`, with
    the same values), if its required values hold a word or number of the request that is
    not a tool's own word (`get_time(place="city")` beside `read_file("city.txt")` for
    "city.txt names a city. What time is it there?" is a chain's next step written with a
    placeholder). A new combination of the values earlier calls of the tool used adds a
    part when the request lists the values it swaps (`recombines`: "the price of tea and
    coffee in 2019 and 2021" asks for four calls). A repeat, a
    reshuffle of the same values, an optional value an earlier call left out (a refinement
    of that call, not a new part), or a call built from values the request does not give
    adds nothing.
    """
    if recombines(tool, arguments, earlier, request):
        return True
    new = _tokens(tool, arguments)
    if any(_in_request(token, request) for token in new - set(tool_words)) and all(
        earlier_tool.name != tool.name for earlier_tool, _ in earlier
    ):
        named = _name_words(tool.name, request) - vocabulary(
            [earlier_tool for earlier_tool, _ in earlier]
        )
        if any(request.has_word(word) for word in named):
            return True
    held = set(tool_words) - _chosen(tool, arguments)
    for earlier_tool, earlier_arguments in earlier:
        held |= _tokens(earlier_tool, earlier_arguments, every=True)
    for name in _changed_options(tool, arguments, earlier):
        new |= _tokens(tool, {name: arguments[name]}, every=True)
    return any(_in_request(token, request) for token in new - held)


def recombines(
    tool: AgentTool,
    arguments: dict[str, Any],
    earlier: Sequence[tuple[AgentTool, dict[str, Any]]],
    request: Grounding,
) -> bool:
    """Whether a call is a new combination of values that earlier calls of the reply used
    (two or more earlier calls; each value one an earlier call gave the same parameter),
    where the request writes each value it swaps with an earlier call of the same tool
    in one list (`grounding.coordinated`). "The price of tea and coffee in 2019 and 2021"
    after (tea, 2019) and (coffee, 2021) asks for (tea, 2021) and (coffee, 2019) too.
    "Song A for 20 minutes and song B for 15 minutes" pairs its values: (A, 15)
    swaps 20 for 15, which the request does not list together, so it is no part; nor do
    lists the request pairs "respectively". The same keys as each earlier call of the
    tool, no repeat. (Measured: docs/local-model.md.)"""
    same = [values for other, values in earlier if other.name == tool.name]
    if len(earlier) < 2 or not same or any(values == arguments for values in same):
        return False
    if request.has_word("respectively") or any(set(values) != set(arguments) for values in same):
        return False  # lists paired item by item; a call with other keys
    used: dict[str, list[Any]] = {}
    for _, values in earlier:
        for name, value in values.items():
            used.setdefault(name, []).append(value)
    if any(value not in used.get(name, ()) for name, value in arguments.items()):
        return False  # a new value: not a recombination (the other rules judge it)
    for values in same:
        for name, value in arguments.items():
            apart = [v for key, vs in used.items() if key != name for v in vs]
            if values[name] != value and not coordinated(
                value, values[name], used[name], request, apart
            ):
                return False
    return True


def _chosen(tool: AgentTool, arguments: dict[str, Any]) -> set[str]:
    # The words of `arguments` that are choices their parameter offers (`choice_words` of
    # it, or of its items): "length" for `property` of a tool that gets a rectangle's
    # 'length' or 'width' is the tool's own word, and still a part the request asks for
    # ("the length and the width").
    properties = tool.input_schema.get("properties")
    if not isinstance(properties, dict):
        return set()
    found: set[str] = set()
    for name, value in arguments.items():
        param = properties.get(name)
        if not isinstance(param, dict):
            continue
        offered = choice_words(param) | choice_words(param.get("items"))
        found |= offered & {w for text in value_strings(value) for w in words(text)}
    return found


def _changed_options(
    tool: AgentTool, arguments: dict[str, Any], earlier: Sequence[tuple[AgentTool, dict[str, Any]]]
) -> list[str]:
    # The optional parameters of `arguments` whose value differs from an earlier call's
    # value of the same parameter (the same tool).
    required = tool.input_schema.get("required")
    needed = set(required) if isinstance(required, list) else set()
    return [
        name
        for name, value in arguments.items()
        if name not in needed
        and any(
            other.name == tool.name and name in values and values[name] != value
            for other, values in earlier
        )
    ]


_COMMON = (
    "about also another given have into like more only other return returns some tell "
    "than that their them then there these they this what when where which will with "
    "would your used uses using value values"
)
COMMON_WORDS = frozenset(_COMMON.split())
"""Words of four or more letters that name no tool ("Tell me what…"): `mentions` skips them."""


def mentions(
    tool: AgentTool,
    request: Grounding,
    beside: Sequence[AgentTool] = (),
    claimed: Sequence[AgentTool] = (),
) -> bool:
    """Whether `request` names `tool`: a word of four or more letters of its name or
    description (not one of `COMMON_WORDS`) is in the request, or shares its first `PREFIX`
    letters with a request word ("compute it with the calculator", "what time is it"), or
    a word of its name is an abbreviation the request writes in capitals ("my BMI" names
    `calculate_bmi`; not a description's: "NBA" in one names no tool in particular), or
    the tool's whole name is one short word the request writes (`add` for "then add 6").

    With `beside`, the other tools offered, a word of the description counts only when
    none of them has it in its name or description: such a word names no tool in
    particular. Beside `get_time`, a `create_reminder` "…at a given time" is not named by
    "What time is it in Tokyo?", nor a `get_exchange_rate` "Get the current exchange
    rate…" by "the current time in Lisbon" (`get_time` is "Current local time…"); a tool's
    own name words always count. With more tools, more descriptions share the everyday
    words of a request. (Measured: docs/local-model.md.)

    With `claimed`, the tools already called for the request, a word that one of their
    names has names them, not `tool`: once `delete_file` ran, "Delete the file old.log"
    does not name `read_file`.
    """
    if tool.name.isalpha() and request.has_word(tool.name.lower()):
        return True
    own_name = _name_words(tool.name, request)
    spoken_for = set().union(
        *(_name_words(t.name, request) for t in claimed if t.name != tool.name)
    )
    others = " ".join(
        f"{other.name} {other.description}".replace("_", " ")
        for other in beside
        if other.name != tool.name
    )
    taken = Grounding.of_text(" ".join(words(others) - COMMON_WORDS))
    own = words(f"{tool.name} {tool.description}".replace("_", " ")) - COMMON_WORDS
    return any(
        request.has_word(word)
        for word in own - spoken_for
        if (len(word) >= 4 or word in own_name) and (word in own_name or not taken.has_word(word))
    )


def _name_words(name: str, request: Grounding) -> set[str]:
    # The words of a tool's name that can name it: of four or more letters, not
    # `COMMON_WORDS`, or an abbreviation the request writes in capitals (`Grounding.acronyms`).
    spelled = _CAMEL.sub(" ", name).replace("_", " ").replace(".", " ")
    return {w for w in words(spelled) - COMMON_WORDS if len(w) >= 4 or w in request.acronyms}


def distinct_words(tool: AgentTool, tools: Sequence[AgentTool], request: Grounding) -> set[str]:
    """The words of `tool`'s name that can name it (`mentions`) and no other tool of `tools`
    has in its name: "delete" of `delete_file` beside `read_file` and `write_file` ("file"
    is all three's). Empty for a name made only of words other names share
    (`price_by_region_day` beside `price_by_store_day` and `price_forecast_by_region`)."""
    others = set().union(*(_name_words(t.name, request) for t in tools if t.name != tool.name))
    return _name_words(tool.name, request) - others


_PUNCTUATION = "\"'`.,;:!?()[]{}<>"


def prose(text: str) -> Grounding:
    """The grounding of the request `text` without the identifiers it writes
    (`word_counter`, `Word_Count`: a name written as such is `prompt.named_tools`' to
    judge); what `spells` reads."""
    return Grounding.of_text(" ".join(w for w in text.split() if not coined(w.strip(_PUNCTUATION))))


def spells(tool: AgentTool, request: Grounding) -> bool:
    """Whether the request's `prose` spells out the tool's name: its name has two or more
    words of four or more letters (not `COMMON_WORDS`; `find_recipe`, `count_words`) or
    abbreviations the request writes in capitals (`compute_npv` for "compute the NPV"), and
    each is a word of the request ("Find me a recipe for soup"). Such a request asks for
    the tool: a small model otherwise answers with a made-up value itself.
    (Measured: docs/local-model.md.)"""
    own = _name_words(tool.name, request)
    return len(own) >= 2 and all(request.has_word(word) for word in own)


_CAMEL = re.compile(r"(?<=[a-z])(?=[A-Z])")


def unknown_tool(
    name: str,
    tools: Sequence[AgentTool],
    answer: str,
    request: Grounding | None = None,
    *,
    file_given: bool = False,
) -> bool:
    """Whether `name`, the tool name the model writes when no grammar holds it to the list,
    is a function name of two or more words (`order_pizza`, `bitcoinPrice`) that
    is neither the answer's nor a tool's, and names none (`mentions`, with the name's words
    as the request: `calculate_area` names `calculator`) or whose first word, its action,
    is a word of the `request` that no tool's name or description has (`delete_file`
    beside `read_file` for "Delete the file notes.txt."). Then the model judged that the
    request needs a tool that is not there. A one-word name is not taken as such: the
    model also writes the request's subject there (`opposite`, `pyproject.toml`,
    `yiemagent`). With `file_given` (the request gives a file name and a tool reads
    files), a name that names no tool is taken to name what the file holds
    (`guest_wifi_password` for "What is the guest wifi password? It's in wifi.txt."): only
    a foreign action counts. (Measured: docs/local-model.md.)"""
    if name == answer or not name.isidentifier() or any(tool.name == name for tool in tools):
        return False
    spelled = _CAMEL.sub(" ", name).replace("_", " ")
    if len(spelled.split()) < 2:
        return False
    if not any(mentions(tool, Grounding.of_text(spelled)) for tool in tools):
        return not file_given
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


_ENGLISH_WORDS = (
    "the of to and is are what which who whom whose how where when why it its this that "
    "these those for with from you your can could would should please does did there "
    "their they them have has been about into than after before between through without "
    "some any every all not but at by be were"
)
ENGLISH = frozenset(_ENGLISH_WORDS.split())
"""Function words of English that no common European language also writes: a request
without any is taken to be in another language (German "in", Italian "a", Spanish "me"
and Portuguese "do" are left out for that reason)."""


def other_words(request: Grounding, vocabulary: frozenset[str], arguments: dict[str, Any]) -> bool:
    """Whether `request` is put in words the tools do not use: it writes none of `ENGLISH`,
    and it has words of four or more letters besides the call's own values, none of them
    a word of the tools (`vocabulary`; "Hi!" has none to judge by). Most often another
    language ("Quelle heure est-il à Madrid ?" beside `get_time`, described in English),
    where `mentions` cannot tell whether a tool serves the request."""
    if request.words & ENGLISH:
        return False
    values = {w for v in arguments.values() for text in value_strings(v) for w in words(text)}
    tools = Grounding.of_text(" ".join(vocabulary))
    asked = {w for w in request.words if len(w) >= 4 and not _is_number(w)} - values
    return bool(asked) and not any(tools.has_word(w) for w in asked)


def relevant(tool: AgentTool, arguments: dict[str, Any], request: Grounding) -> bool:
    """Whether a call before any result may serve `request`: the request names the
    tool (`mentions`), or the call's required values (all, when none is required) hold no
    word: only numbers, expressions (`17 * 23`, `sqrt(2) * 10`; `12^2 * pi` when the
    request writes "pi") and file names the request gives.

    A small model calls an unrelated tool with words of the question
    (`get_time("Hamlet")` for who wrote Hamlet). (Measured: docs/local-model.md.)"""
    if mentions(tool, request):
        return True
    files = {name.lower() for name in request.files}
    for value in _required_values(tool, arguments):
        for text in value_strings(value):
            named = lettered(text)
            if named and _arithmetic(text):
                named -= request.words  # a constant the request writes: `12^2 * pi`
            if text.strip().lower() not in files and named:
                return False
    return True


def _arithmetic(text: str) -> bool:
    # Whether `text` is an arithmetic expression with a number in it (`12^2 * pi`,
    # `2 * e`): Python's grammar, with `^` read as a power; "Route 66" is none.
    try:
        tree = ast.parse(text.replace("^", "**"), mode="eval")
    except (SyntaxError, ValueError):
        return False
    nodes = list(ast.walk(tree))
    return any(isinstance(n, ast.BinOp) for n in nodes) and any(
        isinstance(n, ast.Constant) and isinstance(n.value, int | float) for n in nodes
    )


@dataclass(slots=True, frozen=True)
class ChainStep:
    """What a call after tool results must bring: the 0.5B model, given results,
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
        asked = [m for m in since if isinstance(m, UserMessage)]  # the request's messages
        request = Grounding.of(asked)
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
        """The tools not used yet that the request does not name: not offered now. A word of
        a called tool's name names that tool only: "file" names no `write_file` once
        `read_file` has run for "… Also read the file hours.txt". A file name the request
        gives names the tools that take files ("where.txt names a city" asks for
        `read_file` though it says neither "read" nor "file") until a call has passed it to
        one of them: once `read_file` has read notes.txt for "Read notes.txt and tell me the
        time in Rome", `write_file` (bad: the time written over the file) is not offered."""
        called = [tool for tool, _ in self.called]
        used = {tool.name for tool in called}
        passed = [
            s
            for tool, arguments in self.called
            for name, value in arguments.items()
            if takes_files(tool, name)
            for s in value_strings(value)
        ]
        file_open = any(
            not any(s.lower().endswith(f.lower()) for s in passed) for f in self.request.files
        )
        return {
            t.name
            for t in tools
            if t.name not in used
            and not mentions(t, self.request, beside=tools, claimed=called)
            and not (file_open and reads_files(t))
        }

    def allows(self, tool: AgentTool, arguments: dict[str, Any]) -> bool:
        """Whether a call of `tool` with `arguments` may run now."""
        if tool.name in self.failed or all(earlier.name != tool.name for earlier, _ in self.called):
            return True
        if reads_files(tool) and not self._names_files(tool, arguments):
            return False
        return adds_to(tool, arguments, self.called, self.results, self.known) and not (
            self._iterates(tool, arguments)
        )

    def _iterates(self, tool: AgentTool, arguments: dict[str, Any]) -> bool:
        """Whether a computation feeds a result back into an earlier call of its tool: its
        values are numbers only, and those that are no new value of the results (one no
        call held) are all values of one earlier call of the tool, or there are none
        (`225 * 225` after `15 * 15` gave 225). `multiply(391, 23)` after `multiply(17,
        23)` gave 391, `102 * 850` after `12% * 850 = 102`: the 0.5B goes on multiplying
        until the round budget ends it. `391 + 9` after `17 * 23` brings the request's 9
        and runs."""
        tokens = _tokens(tool, arguments)
        if not tokens or not all(_is_number(token) for token in tokens):
            return False
        earlier = [
            _tokens(used, used_arguments, every=True)
            for used, used_arguments in self.called
            if used.name == tool.name
        ]
        held = set().union(*earlier)
        others = {t for t in tokens if t in held or not self.results.has_number(float(t))}
        return any(others <= values for values in earlier)

    def _names_files(self, tool: AgentTool, arguments: dict[str, Any]) -> bool:
        # A reader called again follows a file a result names ("It is in secret.txt"), not
        # a folder or a phrase made into a path ("dist/", "blue_folder").
        named = {name.lower() for name in self.results.files}
        return all(
            isinstance(value, str) and value.lower() in named
            for parameter, value in arguments.items()
            if takes_files(tool, parameter)
        )


def vocabulary(tools: Sequence[AgentTool]) -> frozenset[str]:
    """The words of the tools' names, descriptions and parameter names (`adds_to`), without
    numbers: a number the user writes is a part of the request even when a description
    holds it too ("… in Python 3 syntax." must not make "the factorial of 3" no part)."""
    found: set[str] = set()
    for tool in tools:
        properties = tool.input_schema.get("properties")
        names = " ".join(properties) if isinstance(properties, dict) else ""
        found |= words(f"{tool.name} {tool.description} {names}".replace("_", " "))
    return frozenset(word for word in found if not _is_number(word))


def _required_values(tool: AgentTool, arguments: dict[str, Any]) -> list[Any]:
    # The values of the required parameters (all values when none is required).
    required = tool.input_schema.get("required")
    names = [n for n in required if n in arguments] if isinstance(required, list) else []
    return [arguments[n] for n in names] if names else list(arguments.values())


def _tokens(tool: AgentTool, arguments: dict[str, Any], *, every: bool = False) -> set[str]:
    # The words and numbers of the required values (of all values with `every`), numbers
    # as `format(n, "g")`.
    found: set[str] = set()
    for value in arguments.values() if every else _required_values(tool, arguments):
        for text in value_strings(value):
            found |= {
                format(float(w), "g") if w.isdigit() else w for w in words(THOUSANDS.sub("", text))
            }
        found |= {format(n, "g") for n in value_numbers(value)}
    return found


def _is_number(token: str) -> bool:
    try:
        float(token)
    except ValueError:
        return False
    return True


def _in_request(token: str, request: Grounding) -> bool:
    try:
        value = float(token)
    except ValueError:
        return request.has_word(token)
    return request.has_number(value)
