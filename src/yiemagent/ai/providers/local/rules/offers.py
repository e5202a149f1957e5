"""The offer rules of the embedded model (`OfferRule`): what the model is offered for one
reply — which tools the reply grammar holds, whether it may answer, what the prompt adds,
whether a lone call is continued as a list (R-11.1)."""

from __future__ import annotations

from yiemagent.ai.providers.local.choice import (
    mentions,
    prose,
    spells,
    unknown_tool,
)
from yiemagent.ai.providers.local.excerpt import excerpt
from yiemagent.ai.providers.local.grounding import reads_files
from yiemagent.ai.providers.local.native import native_no_tool_turns
from yiemagent.ai.providers.local.prompt import (
    content_text,
    last_results,
    named_tools,
    no_tool_turns,
    request_text,
    result_labels,
    result_text,
)
from yiemagent.ai.providers.local.rules.contract import Offer, OfferRule, Turn
from yiemagent.types.messages import ToolResultMessage, UserMessage

__all__ = [
    "AnswerParts",
    "ChainUnnamed",
    "ExtraCall",
    "GivenFile",
    "LongResults",
    "NamedTool",
    "NamedUnused",
    "ResultsEcho",
    "RoundBudget",
    "UnbackedAnswer",
    "UnknownTool",
]


class LongResults(OfferRule):
    """A tool result longer than `excerpt.LONG_RESULT` characters is shown as its excerpt
    for the request it answers: its opening lines and the lines about that request
    (`excerpt.excerpt`).

    For "Read h11.md and tell me the name of the project." the 0.5B, given the whole 7 KB
    README, answered "I cannot do it." (bad); given its title and the lines about a
    project's name, it answers "h11" (good). Each long result of the conversation is
    shortened for the user message before it, so the prompt's earlier turns stay the same
    from one reply to the next (its cached prefix is reused). The tool result messages
    themselves are unchanged: only what the model reads is shortened.
    """

    name = "long_results"

    async def shape(self, turn: Turn, offer: Offer) -> None:
        request = ""
        current = {id(m) for m in turn.request_messages}
        for message in turn.messages:
            if isinstance(message, UserMessage):
                request = content_text(message.content)
                continue
            if not isinstance(message, ToolResultMessage):
                continue
            text = result_text(message)
            short = excerpt(text, request)
            if short == text:
                continue
            shown = False
            for entry in offer.chat:
                content = entry.get("content")
                if entry.get("role") == "user" and isinstance(content, str) and text in content:
                    entry["content"] = content.replace(text, short)
                    shown = True
            if shown and id(message) in current:
                what = f"{message.tool_name} result: {len(text)} → {len(short)} characters"
                offer.note(self.name, "shortened", what)


class RoundBudget(OfferRule):
    """After the model's round budget of tool rounds since the request, only the answer is
    offered (a small model otherwise calls on and on).

    With a budget of 4, a fifth `search {"q": ...}` after four rounds (bad) cannot be
    written; the model answers from the results (good). The tools stay in the system
    prompt, so its cached prefix is reused.
    """

    name = "round_budget"

    async def shape(self, turn: Turn, offer: Offer) -> None:
        if turn.rounds >= turn.max_tool_rounds:
            offer.dropped |= {t.name for t in turn.tools}
            offer.note(self.name, "withheld", f"every tool after {turn.rounds} rounds")


class ChainUnnamed(OfferRule):
    """After tool results, a tool not used yet is offered only when the request names it.

    For "Read a.txt" after `read_file` returned, `get_time` (bad: a result copied into an
    unrelated tool) is not offered; `read_file` (good: a chain's next step) still is
    (`choice.ChainStep.unnamed`).
    """

    name = "chain_unnamed"

    async def shape(self, turn: Turn, offer: Offer) -> None:
        if turn.chain is None:
            return
        unnamed = turn.chain.unnamed(turn.tools) - turn.output_tools  # the answer stays
        if unnamed - offer.dropped:
            offer.note(self.name, "withheld", ", ".join(sorted(unnamed - offer.dropped)))
        offer.dropped |= unnamed


class NamedUnused(OfferRule):
    """After tool results, a tool the request names that no call since the request used
    gets the answer withheld while it is offered: the model takes that step instead of
    answering its part from its own head.

    For "where.txt names a city. What time is it there?" after `read_file` returned
    "Nairobi", "It is 12:34 in Nairobi." (bad: made up) becomes `get_time {"place":
    "Nairobi"}` (good). Naming is `choice.mentions` beside the other tools; the round
    budget still ends the steps. In a typed run the output tool is the answer withheld.
    """

    name = "named_unused"

    async def shape(self, turn: Turn, offer: Offer) -> None:
        if turn.chain is None:
            return
        called = [tool for tool, _ in turn.chain.called]
        used = {tool.name for tool in called}
        named = {
            tool.name
            for tool in turn.tools
            if tool.name not in used
            and tool.name not in offer.dropped
            and tool.name not in turn.output_tools
            and mentions(tool, turn.chain.request, beside=turn.tools, claimed=called)
        }
        if named - offer.named:
            offer.named |= named
            offer.note(self.name, "required", ", ".join(sorted(named)))


class NamedTool(OfferRule):
    """A first-round request that names a tool as written (`word_count`) or spells out its
    name's words ("count the words") gets no answer offered while that tool is: the model
    calls it instead of answering itself.

    "Use word_count on: a b c" answered "3" (bad) becomes `word_count {"text": "a b c"}`
    (good). In a typed run the output tool is the answer, and is withheld the same way.
    """

    name = "named_tool"

    async def shape(self, turn: Turn, offer: Offer) -> None:
        if not turn.tools or not turn.first_round:
            return
        named = named_tools(turn.tools, turn.request_messages)
        spelled = prose(request_text(turn.request_messages))  # read once for every tool
        named |= {t.name for t in turn.tools if spells(t, spelled)}
        named -= turn.output_tools
        if named:
            offer.named |= named
            offer.note(self.name, "required", ", ".join(sorted(named)))


def _probes(turn: Turn, offer: Offer) -> bool:
    # The free-name probe serves a first round with tools to choose from and none named.
    return (
        bool(turn.tools)
        and not turn.output_tools
        and turn.first_round
        and not offer.named
        and len(offer.dropped) < len(turn.tools)
    )


def _readers(turn: Turn, offer: Offer) -> set[str]:
    # The tools still offered that read files (`grounding.reads_files`); not an output tool.
    offered = offer.dropped | turn.output_tools
    return {t.name for t in turn.tools if t.name not in offered and reads_files(t)}


class UnknownTool(OfferRule):
    """When the model, with no grammar holding it, reaches for a function that is not among
    the tools, it is told so and answers (a request no tool serves is declined,
    not forced onto a tool that is there).

    For "Book a flight to Rome" with only `get_time`, the free name `book_flight` is not a
    tool: instead of `get_time {"place": "Rome"}` (bad), the model is told "No tool does
    that" and says it cannot (good). Only a name of two or more words that names no tool
    (`choice.unknown_tool`). When the request gives a file and a tool that reads files is
    offered, only a name whose action no tool has: "What is the wifi password? See
    wifi.txt." → `get_wifi_password` reads the file; "Delete the file notes.txt." →
    `delete_file` is told.
    """

    name = "unknown_tool"

    async def shape(self, turn: Turn, offer: Offer) -> None:
        if not _probes(turn, offer):
            return
        name = await turn.probe()
        file_given = bool(turn.request.files) and bool(_readers(turn, offer))
        if name is not None and unknown_tool(
            name, turn.tools, turn.answer, turn.request, file_given=file_given
        ):
            told = native_no_tool_turns(name) if turn.native else no_tool_turns(name)
            offer.chat = [*offer.chat, *told]
            offer.dropped |= {t.name for t in turn.tools}
            offer.note(self.name, "told", f"there is no {name}")


class GivenFile(OfferRule):
    """A first-round request that gives a file name gets no answer offered while a tool
    that reads files is: the model reads the file instead of answering about it from its
    own head.

    For "Open config.yaml and tell me the port.", "The port is 5000." (bad: made up) becomes
    `read_file {"path": "config.yaml"}` (good). After `unknown_tool`, so a request no tool
    serves ("Delete notes.txt.") is still declined; which tools read files:
    `grounding.reads_files`. In a typed run the output tool is the answer withheld.
    """

    name = "given_file"

    async def shape(self, turn: Turn, offer: Offer) -> None:
        if not turn.first_round or not turn.request.files:
            return
        readers = _readers(turn, offer)
        if readers - offer.named:
            offer.named |= readers
            offer.note(self.name, "required", ", ".join(sorted(readers)))


class UnbackedAnswer(OfferRule):
    """A first-round answer that states a number nothing the model was given backs is not
    let through as it is:
    - to a request that gives a number, the answer is held back until whole (or
      `decoder.HOLD_CHARS` long) and refused once for a call of a tool still offered
      (whose call the call rules then judge as any other);
    - after a call the model wrote was dropped (the tool it reached for does not serve),
      the answer is held back too, and refused once: the model is told that no tool gives
      that (`prompt.not_given_turns`) and only the answer is offered.

    For "How many hours are in 4 days?" beside a calculator, "4 days have 48 hours." (bad:
    worked out in its head, and wrong) becomes `calculator {"expression": "4 * 24"}`
    (good). For "What will the weather be in Berlin tomorrow?" with `get_time` dropped,
    "…sunny, with a temperature of 24°C…" (bad: made up) becomes a reply that it cannot
    tell (good). "Which year did the war end?" with no call dropped is left alone; an
    answer whose numbers the request or the system prompt give ("40 pages a day") is let
    through. The JSON reply only (in its own format the model's text streams as it comes).
    """

    name = "unbacked_answer"

    async def shape(self, turn: Turn, offer: Offer) -> None:
        first = turn.first_round and not turn.output_tools and not turn.native
        offer.check_answer = first and bool(turn.request.numbers)
        offer.check_dropped = first


class AnswerParts(OfferRule):
    """After a round of several results, the answer has one string per result, each under
    a label naming the call that gave it (`get_time(Oslo)`), so a small model reports
    each one, not only the last. A message steered in while tools ran adds to a request
    not yet answered: the results of the round before it count too.

    After `get_time` for Oslo and for Lima, "It is 14:02 in Lima." (bad) becomes
    "It is 20:02 in Oslo.\\nIt is 14:02 in Lima." (good) (`prompt.reply_schema`'s parts);
    asked the time in London, then steered "Also, what is 365 * 24?", the 0.5B's
    "8760\\n365 * 24" (bad: a plain list of two strings, and it wrote the sum twice)
    becomes "09:20 on Friday … in London …\\n8760" (good). The results carried are those
    `prompt.chat_messages` puts in the same block. The JSON reply only: in its own format
    the model's answer is free text.
    """

    name = "answer_parts"

    async def shape(self, turn: Turn, offer: Offer) -> None:
        count = last_results(turn.messages)
        if not count:
            offer.parts = ()
            return
        before = turn.messages[: -len(turn.request_messages)]
        carried = last_results(before)  # a steer right after results no answer reported
        results = [*before[len(before) - carried :], *turn.messages[-count:]]
        offer.parts = result_labels(
            turn.messages, [m for m in results if isinstance(m, ToolResultMessage)]
        )


class ResultsEcho(OfferRule):
    """After results, an answer that copies the words handing them back
    (`prompt.AFTER_RESULTS`) is stopped before any of it shows, and asked again with its
    first word barred; a second copy gives way to the results themselves.

    After `calculator {"expression": "5 * 2.2"}` returned "5 * 2.2 = 11", the 0.5B
    answered "Those are the results of the calls you made for my request. Answer it now,
    …" (bad: our instruction, shown as the answer); asked again without "Those", it
    reports the result (good). An answer is held back only while its first words match
    the instruction's (`prompt.copies`). The JSON reply only, when the prompt ends with a
    round's results.
    """

    name = "results_echo"

    async def shape(self, turn: Turn, offer: Offer) -> None:
        offer.no_echo = not turn.native and last_results(turn.messages) > 0


class ExtraCall(OfferRule):
    """A lone first call is continued as an open list, `[{call}`, and the model must write
    one more call; `adds_part` keeps it only if it adds a part of the request,
    and then the next one is asked for. A small model rarely opens a list by itself.

    For "The time in Oslo and in Lima", the lone `get_time {"place": "Oslo"}` (bad: one
    part left out) is followed by `get_time {"place": "Lima"}` (good). Only in the first
    round (after results a call is a chain's next step), not in a typed run. In the model's
    own format the lone call is written back as its `<tool_call>` block and one more block
    is asked for: left to itself, the 0.5B closed the reply after one block.
    """

    name = "extra_call"

    async def shape(self, turn: Turn, offer: Offer) -> None:
        offer.extra_call = turn.first_round and not turn.output_tools
