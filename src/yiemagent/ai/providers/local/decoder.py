"""The streamed reply parser of the embedded model (DESIGN §11, R-11.1, R-11.2): splits the
constrained JSON reply (one call, a list of calls, or the answer object; see `prompt`) into
builder events as it arrives.

`ReplyDecoder.feed` takes each text delta; `ReplyDecoder.finish` flushes and says what the
reply was. `ItemScanner` finds the top-level items (the object itself, or each list element).
"""

from __future__ import annotations

import json
import logging
import re
import uuid
from collections.abc import Collection, Sequence
from typing import Any, Literal

from yiemagent.ai.builder import MessageBuilder, parse_partial_json
from yiemagent.ai.providers.local.choice import ChainStep, adds_to, relevant, vocabulary
from yiemagent.ai.providers.local.grounding import (
    FILE_NAME,
    Grounding,
    authored,
    drop_unbacked_options,
    invented_numbers,
    ungrounded,
)
from yiemagent.ai.providers.local.prompt import ANSWER_TEXT, answer_name, call_key
from yiemagent.ai.providers.local.repair import percent_as_fraction, repair_file_names
from yiemagent.types.tools import AgentTool

__all__ = ["ItemScanner", "ReplyDecoder", "ReplyKind"]

logger = logging.getLogger(__name__)

_ARGUMENTS = re.compile(r'"arguments"\s*:\s*')
_CLOSERS = "}] \t\r\n"

ReplyKind = Literal["answer", "call", "repeat", "none"]
"""What a reply was: the answer, one or more new calls, only repeats of answered calls, or
nothing usable."""


class ItemScanner:
    """Splits a streamed reply into the raw text of its items: the reply itself when it is
    an object, each top-level element when it is a list."""

    __slots__ = ("_depth", "_escape", "_in_string", "_item_depth", "_start", "raw")

    def __init__(self) -> None:
        self.raw = ""
        self._depth = 0
        self._item_depth = -1  # 0: the reply is the item; 1: the list's elements are
        self._in_string = False
        self._escape = False
        self._start = -1

    def feed(self, text: str) -> list[str]:
        """Add `text`; returns the items completed by it, in order."""
        done: list[str] = []
        base = len(self.raw)
        self.raw += text
        for offset, char in enumerate(text):
            if self._in_string:
                if self._escape:
                    self._escape = False
                elif char == "\\":
                    self._escape = True
                elif char == '"':
                    self._in_string = False
                continue
            if char == '"':
                self._in_string = True
            elif char in "[{":
                if self._item_depth < 0:
                    self._item_depth = 1 if char == "[" else 0
                if char == "{" and self._depth == self._item_depth:
                    self._start = base + offset
                self._depth += 1
            elif char in "]}":
                self._depth -= 1
                if self._depth == self._item_depth and self._start >= 0:
                    done.append(self.raw[self._start : base + offset + 1])
                    self._start = -1
        return done

    @property
    def list_reply(self) -> bool:
        """Whether the reply is a list of items (False for an object or nothing yet)."""
        return self._item_depth == 1

    @property
    def open_item(self) -> str:
        """The raw text of the item still being received ("" between items)."""
        return self.raw[self._start :] if self._start >= 0 else ""


class ReplyDecoder:
    """Turns the streamed JSON reply into builder calls.

    The answer's `text` is emitted as text deltas as it grows. A call is opened as soon as
    its name is complete (the `"arguments"` key follows it) and its argument text is
    forwarded as it arrives, holding back trailing `}`/`]`/whitespace that may close the
    item. A call of a tool in `held` (tools with an answered call, and tools already called
    in this reply) is held back until complete, so a repeat of an answered call or of an
    earlier item is dropped without having been shown. With `known` (the grounding of the
    user messages and results), every call of a tool not in `exempt` is held and one with
    `grounding.ungrounded` words or numbers is dropped like a repeat (the reply is then
    generated again without that tool). A call cut off by the end of generation stays open
    with the arguments received (the message ends with it partial).
    """

    __slots__ = (
        "_answer",
        "_answer_name",
        "_answered",
        "_builder",
        "_calls",
        "_chain",
        "_emitted",
        "_exempt",
        "_extra",
        "_held",
        "_hopeless",
        "_items",
        "_known",
        "_open",
        "_repeats",
        "_request",
        "_sent",
        "_tools",
        "_vocabulary",
    )

    def __init__(
        self,
        builder: MessageBuilder,
        tools: Sequence[AgentTool],
        answered: set[tuple[str, str]],
        known: Grounding | None = None,
        exempt: Collection[str] = (),
        request: Grounding | None = None,
        chain: ChainStep | None = None,
    ) -> None:
        self._builder = builder
        self._tools = {tool.name: tool for tool in tools}
        self._answer_name = answer_name(tools)
        self._answered = answered
        self._known = known
        self._exempt = set(exempt)
        # With the grounding guard on, every call is checked whole before it is emitted.
        held = set(self._tools) - self._exempt if known is not None else set()
        self._held = held | {name for name, _ in answered}
        self._items = ItemScanner()
        self._emitted: set[tuple[str, str]] = set()
        self._calls: list[tuple[AgentTool, dict[str, Any]]] = []
        self._request = request
        self._chain = chain
        self._vocabulary = vocabulary(tools)
        self._answer: str | None = None
        self._repeats: set[str] = set()
        self._open: tuple[str, int] | None = None
        """The call being streamed: its name and where its arguments start in the item."""
        self._sent = 0
        self._hopeless: str | None = None
        self._extra = False

    def lone_call(self) -> str | None:
        """The raw JSON of the reply's one call when the reply was a single call object (not a
        list), else None: the provider may then ask for more calls (`resume_as_list`)."""
        if self._items.list_reply or self._answer is not None or len(self._emitted) != 1:
            return None
        return self._items.raw.strip()

    def resume_as_list(self, first: str) -> None:
        """Go on as if the reply had been `[` + `first` (its call already emitted): the text
        fed next continues that list with extra calls (`, {...}` items). An extra call is
        kept only if it adds a part of the request (`choice.adds_to`, R-11.1) and is
        complete: one cut short (a token cap, a runaway) is dropped."""
        self._items = ItemScanner()
        self._items.feed("[" + first)
        self._extra = True

    @property
    def raw(self) -> str:
        """The reply's text so far (after `resume_as_list`: the open list)."""
        return self._items.raw

    @property
    def calls(self) -> int:
        """How many calls the reply has emitted."""
        return len(self._emitted)

    @property
    def open_chars(self) -> int:
        """Characters of the call item still being received (0 for the answer or between
        items): the provider stops a runaway call by it."""
        if self._answer is not None:
            return 0
        return len(self._items.open_item)

    @property
    def hopeless(self) -> bool:
        """Whether the call being received already holds numbers nothing backs
        (`grounding.invented_numbers`): the provider stops generating and asks again
        without that tool, instead of waiting for a runaway expression to end."""
        return self._hopeless is not None

    def feed(self, text: str) -> None:
        """Take the next text delta of the reply: emit the answer's text as it grows, open
        and stream a call whose name is complete, and judge each item once it is whole."""
        for item in self._items.feed(text):
            self._complete(item)
        current = self._items.open_item
        if current:
            self._progress(current)
            if self._open is None and self._known is not None and len(current) > 40:
                self._check_open(current)

    def _check_open(self, raw: str) -> None:
        parsed = parse_partial_json(raw)
        name, arguments = parsed.get("name"), parsed.get("arguments")
        if name not in self._held or name in self._exempt or not isinstance(arguments, dict):
            return
        tool = self._tools.get(name)
        if tool is None:
            return
        assert self._known is not None
        strings = [v for k, v in arguments.items() if isinstance(v, str) and not authored(tool, k)]
        if any(invented_numbers(text, self._known) for text in strings):
            logger.info("local call %s stopped: it writes numbers nothing backs", name)
            self._hopeless = name

    def _progress(self, raw: str) -> None:
        if self._open is None:
            parsed = parse_partial_json(raw)
            name = parsed.get("name")
            if name == self._answer_name:
                self._emit_answer(raw)
                return
            match = _ARGUMENTS.search(raw)
            if match is None or name not in self._tools or name in self._held:
                return
            self._open = (name, match.end())
            self._sent = 0
            self._builder.tool_call_start(_new_id(), name)
        args = raw[self._open[1] :]
        end = len(args.rstrip(_CLOSERS))
        if end > self._sent:
            self._builder.tool_call_delta(args[self._sent : end])
            self._sent = end

    def _complete(self, raw: str) -> None:
        streamed, self._open = self._open, None
        try:
            item = json.loads(raw)
        except ValueError:
            item = None
        if not isinstance(item, dict):
            logger.debug("local reply item is not a JSON object: %.200s", raw)
            if streamed is not None:
                self._builder.end_block()
            return
        name = item.get("name")
        if name == self._answer_name:
            self._emit_answer(raw)
            return
        arguments = item.get("arguments")
        if not isinstance(name, str) or not isinstance(arguments, dict):
            if streamed is not None:
                self._builder.end_block()
            return
        tool = self._tools.get(name)
        known = self._known
        if streamed is None and tool is not None and known is not None and name not in self._exempt:
            if known.files:
                repaired = repair_file_names(tool, arguments, known, self._used_files())
                if repaired is not arguments:
                    logger.info("local call %s: file name in %s repaired", name, arguments)
                    arguments = repaired
            trimmed = drop_unbacked_options(tool, arguments, known)
            if trimmed is not arguments:
                logger.info("local call %s: optional values nothing backs left out", name)
                arguments = trimmed
            fractions = percent_as_fraction(tool, arguments, known)
            if fractions is not arguments:
                logger.info("local call %s: percentages given as fractions", name)
                arguments = fractions
        key = call_key(name, arguments)
        if streamed is None:
            if key in self._answered:
                self._repeats.add(name)
                return
            if tool is not None and self._known is not None and name not in self._exempt:
                missing = ungrounded(tool, arguments, self._known)
                if missing:
                    logger.info("local call %s dropped: %s are not grounded", name, missing)
                    self._repeats.add(name)
                    return
            if (
                tool is not None
                and self._chain is None
                and self._request is not None
                and name not in self._exempt
                and not relevant(tool, arguments, self._request)
            ):
                logger.info("local call %s dropped: the request does not name it", name)
                self._repeats.add(name)
                return
            if (
                tool is not None
                and self._chain is not None
                and not self._chain.allows(tool, arguments)
            ):
                logger.info("local call %s dropped: it takes nothing from the results", name)
                self._repeats.add(name)
                return
            if key in self._emitted:
                return
            if (
                self._calls
                and tool is not None
                and self._request is not None
                and not adds_to(tool, arguments, self._calls, self._request, self._vocabulary)
            ):
                # Every call after a reply's first must add a part of the request, in a
                # list the model opened too (BFCL simple: the same directions twice).
                logger.info("local call %s dropped: it adds nothing to the request", name)
                return
            self._builder.tool_call_start(_new_id(), name)
            self._builder.tool_call_delta(json.dumps(arguments, ensure_ascii=False))
        else:
            args = raw[streamed[1] :].rstrip()
            args = args[:-1].rstrip() if args.endswith("}") else args  # the item's own brace
            if len(args) > self._sent:
                self._builder.tool_call_delta(args[self._sent :])
        self._builder.end_block()
        self._emitted.add(key)
        self._held.add(name)
        if name in self._tools:
            self._calls.append((self._tools[name], arguments))

    def _used_files(self) -> list[str]:
        # The file names earlier calls passed: those answered and those of this reply.
        values: list[Any] = [json.loads(arguments) for _, arguments in self._answered]
        values += [arguments for _, arguments in self._calls]
        found: list[str] = []
        for value in values:
            strings = value.values() if isinstance(value, dict) else ()
            found += [v for v in strings if isinstance(v, str) and FILE_NAME.fullmatch(v)]
        return found

    def _emit_answer(self, raw: str) -> None:
        parsed = parse_partial_json(raw)
        if parsed.get("name") != self._answer_name:
            return
        answer = parsed.get(ANSWER_TEXT)
        if isinstance(answer, list):  # one part per result (`prompt.reply_schema`)
            answer = "\n".join(part for part in answer if isinstance(part, str))
        if not isinstance(answer, str):
            return
        sent = self._answer or ""
        if self._answer is None:
            self._answer = ""
        # A half-received escape can make the partial string differ from the last one;
        # emit only when it extends what was already sent.
        if len(answer) > len(sent) and answer.startswith(sent):
            self._builder.text_delta(answer[len(sent) :])
            self._answer = answer

    def finish(self, cut: bool) -> tuple[ReplyKind, set[str]]:
        """Flush what is left (`cut`: generation ended early); returns the reply's kind and,
        when it held only repeats of answered calls, their tool names."""
        current = self._items.open_item
        if self._answer is not None:
            if current:
                self._emit_answer(current)
            return "answer", set()
        if self._hopeless is not None:
            self._repeats.add(self._hopeless)
            current = ""
        if self._extra:
            current = ""  # an extra call cut short is dropped, the calls before it stand
        if cut and current:
            if self._open is not None:
                return "call", set()  # left open: the message ends with it partial
            parsed = parse_partial_json(current)
            match = _ARGUMENTS.search(current)
            if isinstance(parsed.get("name"), str) and match is not None:
                self._builder.tool_call_start(_new_id(), parsed["name"])
                self._builder.tool_call_delta(current[match.end() :].rstrip(_CLOSERS))
                return "call", set()
        if self._emitted:
            return "call", set()
        if self._repeats:
            return "repeat", set(self._repeats)
        return "none", set()


def _new_id() -> str:
    return f"call_{uuid.uuid4().hex[:16]}"
