"""The streamed reply parser of the embedded model (DESIGN §11): splits the
constrained JSON reply (one call, a list of calls, or the answer object; see `prompt`) into
builder events as it arrives.

`ReplyDecoder.feed` takes each text delta; `ReplyDecoder.finish` flushes and says what the
reply was. `ItemScanner` finds the top-level items (the object itself, or each list element).
`CallGate` runs the policy's call rules on each whole call and emits those kept; the
native format's decoder (`native.NativeDecoder`) shares it, and both are a `Decoder`.
"""

from __future__ import annotations

import json
import logging
import re
import uuid
from collections.abc import Callable, Collection, Sequence
from typing import Any, Literal, Protocol

from yiemagent.ai.builder import MessageBuilder, parse_partial_json
from yiemagent.ai.providers.local.prompt import ANSWER_TEXT, answer_name, call_key, copies
from yiemagent.ai.providers.local.rules.contract import CallRule, CallScene, Repaired, RuleNote
from yiemagent.types.tools import AgentTool

__all__ = [
    "HOLD_CHARS",
    "CallGate",
    "Decoder",
    "ItemScanner",
    "ReplyDecoder",
    "ReplyKind",
    "new_call_id",
]

logger = logging.getLogger(__name__)

_ARGUMENTS = re.compile(r'"arguments"\s*:\s*')
_CLOSERS = "}] \t\r\n"

ReplyKind = Literal["answer", "call", "repeat", "none"]
"""What a reply was: the answer, one or more new calls, only repeats of answered calls, or
nothing usable."""


class Decoder(Protocol):
    """What `generation.stream_chunks` feeds a reply's text to, in either tool format."""

    notes: list[RuleNote]
    """What the call rules did to the reply's calls, in order."""

    def feed(self, text: str) -> None:
        """Take the next text delta of the reply."""

    def finish(self, cut: bool) -> tuple[ReplyKind, set[str]]:
        """Flush what is left (`cut`: generation ended early); returns the reply's kind
        and, for a "repeat", the tools whose calls were dropped to be asked again."""

    @property
    def open_chars(self) -> int:
        """Characters of the call still being received (0 when none is)."""

    @property
    def hopeless(self) -> bool:
        """Whether a call rule stopped the call being received (`CallRule.stops`)."""


class CallGate:
    """The call rules of one reply (`rules.CallRule`): judges each whole call (keep,
    repair, drop), stops a call still being written that cannot end well, emits the calls
    kept and records them in the scene.

    Calls of a typed run's output tool (`exempt`) are seen only by the rules that judge
    output tools (`CallRule.output_tools`). Every step of a rule is in `notes`; the tools of
    calls dropped to be asked again are in `repeats`.
    """

    __slots__ = (
        "_builder",
        "_exempt",
        "_rules",
        "held",
        "hopeless",
        "notes",
        "repeats",
        "scene",
        "tools",
    )

    def __init__(
        self,
        builder: MessageBuilder,
        tools: Sequence[AgentTool],
        *,
        scene: CallScene,
        rules: Sequence[CallRule] = (),
        exempt: Collection[str] = (),
    ) -> None:
        """Args:
        builder: Receives the emitted calls.
        tools: The tools offered.
        scene: What the rules read (the reply's emitted calls are added to it).
        rules: The call rules, in order; none: every call is kept as written.
        exempt: A typed run's output tools.
        """
        self._builder = builder
        self.tools = {tool.name: tool for tool in tools}
        """The tools offered, by name."""
        self._rules = tuple(rules)
        self._exempt = set(exempt)
        self.scene = scene
        self.held: set[str] = set()
        """Tools whose calls are judged whole before they are emitted: with call rules,
        every tool but the exempt ones, and any tool a call of which was answered or is in
        this reply."""
        if self._rules:
            self.held = set(self.tools) - self._exempt
            self.held |= {name for name, _ in scene.answered}
        self.hopeless: str | None = None
        """The tool of the call a rule stopped while it was written."""
        self.repeats: set[str] = set()
        self.notes: list[RuleNote] = []

    @property
    def active(self) -> bool:
        """Whether there are call rules at all."""
        return bool(self._rules)

    def check_open(self, raw: str) -> None:
        """Ask the rules whether the call being written (`raw`, its partial JSON
        `{"name": ..., "arguments": ...}`) can end well; the first that says no makes the
        gate `hopeless`."""
        parsed = parse_partial_json(raw)
        name, arguments = parsed.get("name"), parsed.get("arguments")
        if name not in self.held or name in self._exempt or not isinstance(arguments, dict):
            return
        tool = self.tools.get(name)
        if tool is None:
            return
        for rule in self._rules:
            why = rule.stops(tool, arguments, self.scene)
            if why is not None:
                logger.info("local call %s stopped by %s: %s", name, rule.name, why)
                self.notes.append(RuleNote(rule.name, "stopped", why))
                self.hopeless = name
                return

    def judge(self, tool: AgentTool, arguments: dict[str, Any]) -> dict[str, Any] | None:
        """The call's arguments after the call rules, or None when one drops it."""
        exempt = tool.name in self._exempt
        for rule in self._rules:
            if exempt and not rule.output_tools:
                continue
            verdict = rule.judge(tool, arguments, self.scene)
            if verdict is None:
                continue
            if isinstance(verdict, Repaired):
                logger.info("local call %s repaired by %s", tool.name, rule.name)
                self.notes.append(RuleNote(rule.name, "repaired", verdict.what))
                arguments = verdict.arguments
                continue
            logger.info("local call %s dropped by %s: %s", tool.name, rule.name, verdict.what)
            self.notes.append(RuleNote(rule.name, "dropped", verdict.what))
            if verdict.ask_again:
                self.repeats.add(tool.name)
            return None
        return arguments

    def emit(self, name: str, arguments: dict[str, Any]) -> None:
        """Judge a whole call of `name` (one of no tool offered is emitted as written) and
        emit it unless a rule drops it."""
        tool = self.tools.get(name)
        if tool is not None:
            judged = self.judge(tool, arguments)
            if judged is None:
                return
            arguments = judged
        self._builder.tool_call_start(new_call_id(), name)
        self._builder.tool_call_delta(json.dumps(arguments, ensure_ascii=False))
        self._builder.end_block()
        self.record(name, arguments)

    def record(self, name: str, arguments: dict[str, Any]) -> None:
        """Add an emitted call to the scene (what the rules read of the reply so far)."""
        self.scene.emitted.add(call_key(name, arguments))
        if self._rules:
            self.held.add(name)
        tool = self.tools.get(name)
        if tool is not None:
            self.scene.calls.append((tool, arguments))

    def outcome(self) -> tuple[ReplyKind, set[str]]:
        """What a reply with no answer was: "call" when it emitted a call, "repeat" (with
        the tools to ask again without) when rules dropped or stopped its calls, else
        "none"."""
        repeats = self.repeats | ({self.hopeless} if self.hopeless is not None else set())
        if self.scene.emitted:
            return "call", set()
        if repeats:
            return "repeat", repeats
        return "none", set()


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


HOLD_CHARS = 240
"""An answer held back (`ReplyDecoder(hold=True)`) is judged and, when let through, streams
once it is longer than this: the made-up answers the provider refuses state their figure
early ("3 weeks have 14 days.", "…sunny, with a temperature of 24°C…"), and a long answer
(a story) should not wait for its end to appear."""


class ReplyDecoder:
    """Turns the streamed JSON reply into builder calls, judging each call by the policy's
    call rules (`CallGate`).

    The answer's `text` is emitted as text deltas as it grows. A call is opened as soon as
    its name is complete (the `"arguments"` key follows it) and its argument text is
    forwarded as it arrives, holding back trailing `}`/`]`/whitespace that may close the
    item. With call rules, a call is held back until complete and judged whole: the rules
    repair its arguments or drop it (a drop that asks again makes the reply, when it has no
    other call, a "repeat": the provider generates it again without that tool). Calls of a
    typed run's output tool (`exempt`) stream, and only the rules that judge output tools
    see them once a call of that tool was answered or is in this reply. Every step of a
    rule is in `notes`. A call cut off by the end of generation stays open with the
    arguments received (the message ends with it partial).
    """

    __slots__ = (
        "_answer",
        "_answer_name",
        "_builder",
        "_copied",
        "_extra",
        "_gate",
        "_held",
        "_items",
        "_judge",
        "_open",
        "_own",
        "_refused",
        "_scene",
        "_sent",
        "_shown",
        "_tools",
        "notes",
    )

    def __init__(
        self,
        builder: MessageBuilder,
        gate: CallGate,
        *,
        hold: bool = False,
        judge: Callable[[str], bool] | None = None,
        own: str | None = None,
    ) -> None:
        """Args:
        builder: Receives the message's events.
        gate: The reply's call rules (and the tools offered, the scene).
        hold: Keep the answer back until `release` (the provider may refuse it whole).
        judge: With `hold`, asked of a held answer that grows past `HOLD_CHARS`: True
            refuses it (`refused`; it stays held and generation may stop), False lets it
            stream from there.
        own: An instruction of the provider's that the answer must not copy
            (`prompt.copies`): an answer that starts as it does is not shown until it
            differs, and one that copies it is stopped (`copied`).
        """
        self._builder = builder
        self._tools = gate.tools
        self._answer_name = answer_name(list(gate.tools.values()))
        self._scene = gate.scene
        self._gate = gate
        self._items = ItemScanner()
        self._answer: str | None = None
        self._held = hold
        self._judge = judge
        self._refused = False
        self._own = own
        self._copied = False
        self._shown = 0
        """How much of the answer was emitted as text."""
        self._open: tuple[str, int] | None = None
        """The call being streamed: its name and where its arguments start in the item."""
        self._sent = 0
        self._extra = False
        self.notes = self._gate.notes
        """What the rules did to this reply's calls, in order."""

    def lone_call(self) -> str | None:
        """The raw JSON of the reply's one call when the reply was a single call object (not a
        list), else None: the provider may then ask for more calls (`resume_as_list`)."""
        if self._items.list_reply or self._answer is not None or len(self._scene.emitted) != 1:
            return None
        return self._items.raw.strip()

    def resume_as_list(self, first: str) -> None:
        """Go on as if the reply had been `[` + `first` (its call already emitted): the text
        fed next continues that list with extra calls (`, {...}` items). An extra call is
        kept only if it adds a part of the request (`choice.adds_to`) and is
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
        return len(self._scene.emitted)

    @property
    def open_chars(self) -> int:
        """Characters of the call item still being received (0 for the answer or between
        items): the provider stops a runaway call by it."""
        if self._answer is not None:
            return 0
        return len(self._items.open_item)

    @property
    def hopeless(self) -> bool:
        """Whether a rule stopped the call being received (`CallRule.stops`, e.g. numbers
        nothing backs), or `judge` refused the held answer (`refused`): the provider stops
        generating instead of waiting for a runaway expression or a made-up answer to
        end, and asks again."""
        return self._gate.hopeless is not None or self._refused or self._copied

    @property
    def copied(self) -> bool:
        """Whether the answer copies the provider's instruction `own` (nothing of it shown)."""
        return self._copied

    @property
    def refused(self) -> bool:
        """Whether `judge` refused the held answer before it was whole."""
        return self._refused

    def feed(self, text: str) -> None:
        """Take the next text delta of the reply: emit the answer's text as it grows, open
        and stream a call whose name is complete, and judge each item once it is whole."""
        for item in self._items.feed(text):
            self._complete(item)
        current = self._items.open_item
        if current:
            self._progress(current)
            if self._open is None and self._gate.active and len(current) > 40:
                self._gate.check_open(current)

    def _progress(self, raw: str) -> None:
        if self._open is None:
            parsed = parse_partial_json(raw)
            name = parsed.get("name")
            if name == self._answer_name:
                self._emit_answer(raw)
                return
            match = _ARGUMENTS.search(raw)
            if match is None or name not in self._tools or name in self._gate.held:
                return
            self._open = (name, match.end())
            self._sent = 0
            self._builder.tool_call_start(new_call_id(), name)
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
        if streamed is None:
            self._gate.emit(name, arguments)
            return
        args = raw[streamed[1] :].rstrip()
        args = args[:-1].rstrip() if args.endswith("}") else args  # the item's own brace
        if len(args) > self._sent:
            self._builder.tool_call_delta(args[self._sent :])
        self._builder.end_block()
        self._gate.record(name, arguments)

    def _emit_answer(self, raw: str) -> None:
        parsed = parse_partial_json(raw)
        if parsed.get("name") != self._answer_name:
            return
        answer = parsed.get(ANSWER_TEXT)
        if isinstance(answer, dict):  # one part per result (`prompt.reply_schema`)
            answer = "\n".join(part for part in answer.values() if isinstance(part, str))
        if not isinstance(answer, str):
            return
        known = self._answer or ""
        if self._answer is None:
            self._answer = ""
        # A half-received escape can make the partial string differ from the last one;
        # take it only when it extends what was already received.
        if len(answer) <= len(known) or not answer.startswith(known) or self._copied:
            return
        self._answer = answer
        if self._own is not None:
            verdict = copies(answer, self._own)
            if verdict is None:  # it may still turn into a copy: nothing shown yet
                return
            self._copied = verdict
            if verdict:
                return
            self._own = None
        if self._held and len(answer) > HOLD_CHARS and not self._refused:
            if self._judge is not None and self._judge(answer):
                self._refused = True  # judged on what it has said so far
            else:
                self.release()  # a long answer streams from here
        elif not self._held:
            self._show()

    def _show(self) -> None:
        answer = self._answer or ""
        if len(answer) > self._shown:
            self._builder.text_delta(answer[self._shown :])
            self._shown = len(answer)

    @property
    def answer(self) -> str | None:
        """The answer's text so far; None when the reply is not an answer."""
        return self._answer

    @property
    def holding(self) -> bool:
        """Whether the answer is still held back (`hold`, and no longer than `HOLD_CHARS`)."""
        return self._held

    def release(self) -> None:
        """Emit an answer held back (`hold`) whole; later text streams as it comes. An
        answer that copies `own`, or may still turn into a copy, is not emitted."""
        self._held = False
        if self._own is None and not self._copied:
            self._show()

    def finish(self, cut: bool) -> tuple[ReplyKind, set[str]]:
        """Flush what is left (`cut`: generation ended early); returns the reply's kind and,
        when it held only calls dropped to be asked again, their tool names."""
        current = self._items.open_item
        if self._answer is not None:
            if current:
                self._emit_answer(current)
            if self._own is not None and not self._copied:  # it ended before it could copy
                self._own = None
                if not self._held:
                    self._show()
            return "answer", set()
        if self._gate.hopeless is not None or self._extra:
            # A stopped call is asked again; an extra call cut short is dropped, the calls
            # before it stand.
            current = ""
        if cut and current:
            if self._open is not None:
                return "call", set()  # left open: the message ends with it partial
            parsed = parse_partial_json(current)
            match = _ARGUMENTS.search(current)
            if isinstance(parsed.get("name"), str) and match is not None:
                self._builder.tool_call_start(new_call_id(), parsed["name"])
                self._builder.tool_call_delta(current[match.end() :].rstrip(_CLOSERS))
                return "call", set()
        return self._gate.outcome()


def new_call_id() -> str:
    """A fresh id for a tool call the model wrote."""
    return f"call_{uuid.uuid4().hex[:16]}"
