"""The call rules of the embedded model (`CallRule`): what is repaired or dropped in a call
the model wrote, before it is emitted. Each judges one whole call; the decoder runs them in
the policy's order (R-11.1)."""

from __future__ import annotations

import json
from typing import Any

from yiemagent.ai.providers.local.choice import (
    adds_to,
    distinct_words,
    mentions,
    other_words,
    relevant,
)
from yiemagent.ai.providers.local.grounding import (
    FILE_NAME,
    authored,
    drop_unbacked_options,
    invented_numbers,
    reads_files,
    takes_files,
    ungrounded,
    value_strings,
)
from yiemagent.ai.providers.local.prompt import call_key
from yiemagent.ai.providers.local.repair import (
    date_as_described,
    percent_as_fraction,
    repair_file_names,
    runaway_choices,
)
from yiemagent.ai.providers.local.rules.contract import CallRule, CallScene, Dropped, Repaired
from yiemagent.types.tools import AgentTool

__all__ = [
    "AddsPart",
    "AnsweredRepeat",
    "ChainStepRule",
    "DateFormat",
    "FileAsValue",
    "FileNames",
    "Grounded",
    "NamedFirst",
    "PercentAsFraction",
    "Relevant",
    "RunawayChoices",
    "UnbackedOptions",
]

_WHAT_CHARS = 200


def show(name: str, arguments: Any) -> str:
    """A call as a note shows it: `name {"arg": ...}`, cut to a few hundred characters."""
    text = f"{name} {json.dumps(arguments, ensure_ascii=False)}"
    return text if len(text) <= _WHAT_CHARS else text[: _WHAT_CHARS - 1] + "…"


class _Rewrite(CallRule):
    """A rule that rewrites values in place (`rewrite` returns `arguments` itself when
    nothing changes); its note shows the call before and the arguments after."""

    def rewrite(
        self, tool: AgentTool, arguments: dict[str, Any], scene: CallScene
    ) -> dict[str, Any]:
        raise NotImplementedError

    def judge(
        self, tool: AgentTool, arguments: dict[str, Any], scene: CallScene
    ) -> Repaired | Dropped | None:
        fixed = self.rewrite(tool, arguments, scene)
        if fixed is arguments:
            return None
        return Repaired(fixed, f"{show(tool.name, arguments)} → {json.dumps(fixed)}")


class FileNames(CallRule):
    """Puts the file name the user gave for a file name nobody gave.

    A small model fills a path parameter with a placeholder or a variant of the name:
    for "Summarise notes.md", `read_file {"path": "path/to/notes.md"}` (bad) is repaired to
    `read_file {"path": "notes.md"}` (good). Only a required string that is a file name
    nothing gives, and only when exactly one given file name is not used yet by an earlier
    call (`repair.repair_file_names`); otherwise the call is left to `grounded`.
    """

    name = "file_names"

    def judge(
        self, tool: AgentTool, arguments: dict[str, Any], scene: CallScene
    ) -> Repaired | Dropped | None:
        if not scene.known.files:
            return None
        repaired = repair_file_names(tool, arguments, scene.known, scene.used_files())
        if repaired is arguments:
            return None
        return Repaired(repaired, f"{show(tool.name, arguments)} → {json.dumps(repaired)}")


class FileAsValue(CallRule):
    """Drops a call that puts a file name the conversation gives into a parameter that
    does not take files; the reply is asked again without that tool.

    For "where.txt names a city. What time is it there?", `get_time {"place": "where.txt"}`
    (bad: the file's name for its content) is dropped, and the model, asked again, writes
    `read_file {"path": "where.txt"}` (good). Which parameters take files:
    `grounding.takes_files`; only while a tool `reads_files` (else a name like "site.com"
    is no file).
    """

    name = "file_as_value"

    def judge(
        self, tool: AgentTool, arguments: dict[str, Any], scene: CallScene
    ) -> Repaired | Dropped | None:
        files = {name.lower() for name in scene.known.files}
        if not files or not any(reads_files(t) for t in scene.tools.values()):
            return None  # without a tool that reads files, "site.com" is not one
        for name, value in arguments.items():
            if takes_files(tool, name) or authored(tool, name):
                continue
            for text in value_strings(value):
                named = {m.group(0).lower() for m in FILE_NAME.finditer(text)} & files
                if named:
                    return Dropped(f"{show(tool.name, arguments)}: {min(named)} is a file")
        return None


class RunawayChoices(_Rewrite):
    """Keeps each choice of a list that ran to its bound once.

    For "Which gyms in Leeds are open 24 hours?", `find_gym {"amenities": ["Open 24
    Hours", "Open 24 Hours", …]}` as many times as the parameter has choices (bad: the
    model went round one item until the grammar's bound) becomes `find_gym {"amenities":
    ["Open 24 Hours"]}` (good). `repair.runaway_choices` says which lists.
    """

    name = "runaway_choices"

    def rewrite(
        self, tool: AgentTool, arguments: dict[str, Any], scene: CallScene
    ) -> dict[str, Any]:
        return runaway_choices(tool, arguments)


class UnbackedOptions(CallRule):
    """Leaves out optional values that nothing the model was given backs, so the tool's
    default applies.

    A small model fills optional parameters with values of its own: for "Find hotels in
    Lyon", `find_hotels {"city": "Lyon", "stars": 5}` (bad: no one asked for five stars)
    becomes `find_hotels {"city": "Lyon"}` (good). A value is backed as `grounded` says
    (`grounding.drop_unbacked_options`); required and `authored` values are not touched.
    """

    name = "unbacked_options"

    def judge(
        self, tool: AgentTool, arguments: dict[str, Any], scene: CallScene
    ) -> Repaired | Dropped | None:
        trimmed = drop_unbacked_options(tool, arguments, scene.known)
        if trimmed is arguments:
            return None
        left_out = sorted(
            set(arguments) - set(trimmed) | {k for k in trimmed if trimmed[k] != arguments.get(k)}
        )
        return Repaired(trimmed, f"{show(tool.name, arguments)}: left out {', '.join(left_out)}")


class PercentAsFraction(_Rewrite):
    """Gives a percentage the user wrote as the fraction a `number` parameter takes.

    For "a loan at 4% a year", `loan_payment {"rate": 4}` (bad: a rate of 400 %) becomes
    `loan_payment {"rate": 0.04}` (good). Not for `integer` parameters, nor when the
    parameter's description asks for a percentage (`repair.percent_as_fraction`).
    """

    name = "percent_fraction"

    def rewrite(
        self, tool: AgentTool, arguments: dict[str, Any], scene: CallScene
    ) -> dict[str, Any]:
        return percent_as_fraction(tool, arguments, scene.known)


class DateFormat(_Rewrite):
    """Writes a date in the layout its parameter's description gives.

    For "Book a table for June 5th, 2025." and a `date` described "in the format
    MM-DD-YYYY", `book_table {"date": "2025-06-05"}` (bad: the tool parses month first)
    becomes `book_table {"date": "06-05-2025"}` (good). Only a value that reads as one
    date is rewritten (`repair.date_as_described`).
    """

    name = "date_format"

    def rewrite(
        self, tool: AgentTool, arguments: dict[str, Any], scene: CallScene
    ) -> dict[str, Any]:
        return date_as_described(tool, arguments)


class AnsweredRepeat(CallRule):
    """Drops a call identical to one already answered in the conversation; the reply is
    asked again without that tool (no loop of the same call).

    After `get_weather {"city": "Oslo"}` returned its result, the same call again (bad) is
    dropped; `get_weather {"city": "Bergen"}` (good) runs.
    """

    name = "answered_repeat"
    output_tools = True

    def judge(
        self, tool: AgentTool, arguments: dict[str, Any], scene: CallScene
    ) -> Repaired | Dropped | None:
        if call_key(tool.name, arguments) not in scene.answered:
            return None
        return Dropped(f"{show(tool.name, arguments)}: already answered")


class Grounded(CallRule):
    """Drops a call whose required values hold a word or a number that nothing the model
    was given backs; the reply is asked again without that tool.

    For "What is the weather like?", `get_weather {"city": "Paris"}` (bad: no one named
    Paris) is dropped; for "What is the weather in Paris?" it runs (good). What backs a
    value is `grounding.ungrounded`'s (given words and their forms, numbers with their
    units and scales, a parameter's listed choices); `authored` parameters (code, an
    expression the model writes) are not checked. A call still being written is stopped
    as soon as a string holds several numbers nothing backs (`stops`): a made-up
    expression can run to the token cap.
    """

    name = "grounded"

    def judge(
        self, tool: AgentTool, arguments: dict[str, Any], scene: CallScene
    ) -> Repaired | Dropped | None:
        missing = ungrounded(tool, arguments, scene.known)
        if not missing:
            return None
        return Dropped(f"{show(tool.name, arguments)}: nothing gives {', '.join(sorted(missing))}")

    def stops(self, tool: AgentTool, arguments: dict[str, Any], scene: CallScene) -> str | None:
        strings = [v for k, v in arguments.items() if isinstance(v, str) and not authored(tool, k)]
        if any(invented_numbers(text, scene.known) for text in strings):
            return f"{tool.name}: writes numbers nothing gives"
        return None


class Relevant(CallRule):
    """Drops a first-round call of a tool the request does not name when the call carries
    words; the reply is asked again without that tool.

    For "Who wrote Hamlet?" with a `get_time` tool, `get_time {"place": "Hamlet"}` (bad)
    is dropped; for "What time is it in Oslo?" `get_time {"place": "Oslo"}` runs (good: the
    request names the tool's words). A call whose values are only numbers, expressions or
    given file names needs no naming (`choice.relevant`). Nor does a call of the very tool
    the model reached for with no grammar holding it when the request shares no word with
    the tools (`choice.other_words`): "¿Qué hora es en Lima?" → `get_time {"place":
    "Lima"}` (good), where dropping it left a made-up time. Not after tool results
    (`chain_step` judges those).
    """

    name = "relevant"

    def judge(
        self, tool: AgentTool, arguments: dict[str, Any], scene: CallScene
    ) -> Repaired | Dropped | None:
        if scene.chain is not None or relevant(tool, arguments, scene.request):
            return None
        if tool.name == scene.reached_for and other_words(
            scene.request, scene.vocabulary, arguments
        ):
            return None  # the model's own choice, for a request in words no tool uses
        return Dropped(f"{show(tool.name, arguments)}: the request does not name it")


class ChainStepRule(CallRule):
    """After tool results, drops a further call of a used tool that takes nothing new from
    the results; the reply is asked again without that tool.

    After `read_file {"path": "a.txt"}` returned "the answer is in b.txt",
    `read_file {"path": "b.txt"}` (good: the chain's next step) runs, and
    `read_file {"path": "a.txt, again"}` (bad: nothing the results gave) is dropped
    (`choice.ChainStep.allows`). So is a computation fed its own result: after
    `multiply {"a": 17, "b": 23}` returned 391, `multiply {"a": 391, "b": 23}` (bad: the
    first call again, on its result) is dropped and `add {"a": 391, "b": 9}` runs. A tool
    not used yet, or one whose last result was an error, is not judged here
    (`chain_unnamed` decides whether it is offered).
    """

    name = "chain_step"
    output_tools = True

    def judge(
        self, tool: AgentTool, arguments: dict[str, Any], scene: CallScene
    ) -> Repaired | Dropped | None:
        if scene.chain is None or scene.chain.allows(tool, arguments):
            return None
        return Dropped(f"{show(tool.name, arguments)}: takes nothing from the results")


class AddsPart(CallRule):
    """Leaves out a call after a reply's first that adds no part of the request.

    For "Time in Oslo and in Lima", `get_time {"place": "Lima"}` after the Oslo call adds a
    part (good); for "Time in Oslo", `get_time {"place": "Oslo, Norway"}` after it adds
    nothing (bad) and ends the reply's calls. A part is a word or number of the request no
    earlier call holds, or a tool the request names that no earlier call used
    (`choice.adds_to`); a call the reply already holds adds none and is left out.
    """

    name = "adds_part"
    output_tools = True

    def judge(
        self, tool: AgentTool, arguments: dict[str, Any], scene: CallScene
    ) -> Repaired | Dropped | None:
        if not scene.calls or adds_to(
            tool, arguments, scene.calls, scene.request, scene.vocabulary
        ):
            return None
        what = f"{show(tool.name, arguments)}: adds no part of the request"
        return Dropped(what, ask_again=False)


class NamedFirst(CallRule):
    """Leaves out a call after the reply's first of a tool the request does not name while
    it names a tool no call of the reply has used: the named step is the one asked for.

    For "Read the file d.txt and write its content to e.txt.", after `read_file {"path":
    "d.txt"}`, `delete_file {"path": "e.txt"}` (bad: nobody asked for a delete) is left
    out, and `write_file` follows once the content is read; for "What time is it in Oslo,
    and what is 17 * 23?", `calculator` after `get_time` runs (good: the request names no
    other tool). A tool is named here by a word of its name no other tool's name has
    (`choice.distinct_words`: "write", not "file"); a tool with no such word is not judged,
    nor one the request names by its description (`choice.mentions` beside the other
    tools, a word of an earlier call's tool name naming that tool only): `stats_mean`,
    "The average of a list of numbers.", runs for "What is the average of 3, 5 and 10, and
    the weather in Oslo?" after `get_weather`. In the first round only: after results
    `chain_step` judges calls.
    """

    name = "named_first"

    def judge(
        self, tool: AgentTool, arguments: dict[str, Any], scene: CallScene
    ) -> Repaired | Dropped | None:
        called = [earlier for earlier, _ in scene.calls]
        used = {earlier.name for earlier in called}
        if scene.chain is not None or not used or tool.name in used:
            return None
        offered = list(scene.tools.values())

        def named(candidate: AgentTool) -> bool | None:
            own = distinct_words(candidate, offered, scene.request)
            return any(scene.request.has_word(w) for w in own) if own else None

        if named(tool) is not False or mentions(
            tool, scene.request, beside=offered, claimed=called
        ):
            return None
        waiting = sorted(t.name for t in offered if t.name not in used and named(t))
        if not waiting:
            return None
        what = f"{show(tool.name, arguments)}: the request names {', '.join(waiting)}"
        return Dropped(what, ask_again=False)
