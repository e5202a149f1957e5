"""The two contracts of the embedded model's rules, and the policy that orders them.

An `OfferRule` shapes what the model is offered for one reply (which tools' branches the
reply grammar holds, whether the answer is among them, extra turns of the prompt, whether a
lone call is continued as a list). A `CallRule` judges one whole call the model wrote:
it keeps it, repairs its arguments, or drops it. `LocalPolicy(rules)` holds both kinds in
order; a policy with no rules is plain constrained decoding: the reply grammar offers every
tool and the answer, and every call is emitted as written. Each step a rule takes is
recorded as a `RuleNote`, which the provider puts in the assistant message's
`details["local_rules"]`.
"""

from __future__ import annotations

import json
from abc import ABC, abstractmethod
from collections.abc import Awaitable, Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from yiemagent.ai.providers.local.choice import ChainStep
from yiemagent.ai.providers.local.grounding import FILE_NAME, Grounding
from yiemagent.errors import ProviderError
from yiemagent.types.messages import Message
from yiemagent.types.tools import AgentTool

__all__ = [
    "CallRule",
    "CallScene",
    "Dropped",
    "LocalPolicy",
    "Offer",
    "OfferRule",
    "Repaired",
    "RuleAction",
    "RuleNote",
    "Turn",
]

RuleAction = Literal[
    "repaired", "dropped", "stopped", "withheld", "required", "told", "asked", "shortened"
]
"""What a rule did: a call's arguments "repaired", a call "dropped", a call "stopped" while
it was written, tools "withheld" from the offer, a call "required" (the answer not offered),
the model "told" something in the prompt, one more call "asked" for, or a long tool result
"shortened" to what the model reads of it."""


@dataclass(frozen=True, slots=True)
class RuleNote:
    """One step a rule took in one model call, as the message's details record it."""

    rule: str
    action: RuleAction
    what: str
    """Which call or tools, in a few words (e.g. `get_time {"place": "Paris"}`)."""

    def as_dict(self) -> dict[str, str]:
        """`{"rule": ..., "action": ..., "what": ...}` (JSON-ready)."""
        return {"rule": self.rule, "action": self.action, "what": self.what}


# ── offer rules ────────────────────────────────────────────────────────────


@dataclass(slots=True)
class Turn:
    """What an offer rule reads about the reply to come (read-only by convention)."""

    tools: Sequence[AgentTool]
    messages: Sequence[Message]
    """The conversation (after `transform_messages`)."""
    request: Grounding
    """The grounding of the current request: the last user message and what followed it."""
    request_messages: Sequence[Message]
    """The last user message and what followed it (`prompt.current_request`)."""
    rounds: int
    """Tool rounds since the last user message."""
    max_tool_rounds: int
    chain: ChainStep | None
    """What a call after results must bring; None before any result since the request."""
    output_tools: frozenset[str]
    """A typed run's output tool: never withheld, and no answer is offered."""
    answer: str
    """The name of the answer object in the reply grammar."""
    probe: Callable[[], Awaitable[str | None]]
    """The tool name the model writes with no grammar (`generation.free_name`), generated
    at most once per turn, whichever rule asks first; None when it writes none."""
    native: bool = False
    """Whether the model writes in its own format (`<tool_call>` blocks, `native`) rather
    than the JSON reply: what a rule adds to the prompt is framed that way."""

    @property
    def first_round(self) -> bool:
        """Whether no tool has run since the request."""
        return self.rounds == 0


@dataclass(slots=True)
class Offer:
    """What the model is offered for one reply; offer rules change it in order."""

    chat: list[dict[str, Any]]
    """The chat messages sent to the runtime."""
    dropped: set[str] = field(default_factory=set)
    """Tools whose branch the reply grammar leaves out."""
    named: set[str] = field(default_factory=set)
    """Tools the request asks for: while one of them is offered, the answer is not."""
    parts: tuple[str, ...] = ()
    """A label per result the answer reports; with 2 or more, the answer is one string per
    label (`prompt.reply_schema`)."""
    extra_call: bool = False
    """Whether a lone first call is continued as a list and one more call asked for."""
    check_answer: bool = False
    """Whether an answer is held back until whole and, when it states a number nothing the
    model was given backs, refused once for a call of a tool still offered."""
    check_dropped: bool = False
    """Whether an answer after a dropped call is held back and, when it states a number
    nothing the model was given backs, refused once: the model is told no tool gives that
    (`prompt.not_given_turns`) and only the answer is offered."""
    no_echo: bool = False
    """Whether an answer that copies `prompt.AFTER_RESULTS` is stopped and asked again with
    its first word barred, and a second copy replaced by the round's results."""
    notes: list[RuleNote] = field(default_factory=list)

    def note(self, rule: str, action: RuleAction, what: str) -> None:
        """Record a step of `rule`."""
        self.notes.append(RuleNote(rule, action, what))


class OfferRule(ABC):
    """Shapes what the model is offered for one reply (its contract: `shape`)."""

    name: str = ""
    """The rule's name, as `LocalPolicy.without` and `bench/bfcl.py --without` take it."""

    @abstractmethod
    async def shape(self, turn: Turn, offer: Offer) -> None:
        """Change `offer` for `turn` (and `offer.note` what changed); may ask `turn.probe`."""


# ── call rules ─────────────────────────────────────────────────────────────


@dataclass(slots=True)
class CallScene:
    """What a call rule reads besides the call: what the model was given and what the reply
    has emitted so far (read-only by convention; the decoder keeps it up to date)."""

    tools: Mapping[str, AgentTool]
    known: Grounding
    """Every user message and tool result of the conversation."""
    request: Grounding
    """The current request (`Turn.request`)."""
    answered: Collection[tuple[str, str]]
    """Calls already answered, as `prompt.call_key`s."""
    chain: ChainStep | None
    vocabulary: frozenset[str]
    """The tools' own words (`choice.vocabulary`)."""
    emitted: set[tuple[str, str]] = field(default_factory=set)
    """The calls this reply has emitted, as `prompt.call_key`s."""
    calls: list[tuple[AgentTool, dict[str, Any]]] = field(default_factory=list)
    """The calls this reply has emitted, in order."""
    reached_for: str | None = None
    """The tool name the model wrote with no grammar holding it (`Turn.probe`), when an
    offer rule asked for it."""

    def used_files(self) -> list[str]:
        """The file names earlier calls passed: those answered and those of this reply."""
        values: list[Any] = [json.loads(arguments) for _, arguments in self.answered]
        values += [arguments for _, arguments in self.calls]
        found: list[str] = []
        for value in values:
            strings = value.values() if isinstance(value, dict) else ()
            found += [v for v in strings if isinstance(v, str) and FILE_NAME.fullmatch(v)]
        return found


@dataclass(frozen=True, slots=True)
class Repaired:
    """A call kept with other arguments."""

    arguments: dict[str, Any]
    what: str


@dataclass(frozen=True, slots=True)
class Dropped:
    """A call not emitted."""

    what: str
    ask_again: bool = True
    """Whether the reply, if it has no other call, is generated again without this tool
    (False: the call is simply left out, and the reply ends with what it has)."""


class CallRule(ABC):
    """Judges one whole call the model wrote, before it is emitted (its contract: `judge`).

    Rules run in the policy's order, each on the arguments the rules before it left; the
    first drop ends the call."""

    name: str = ""
    """The rule's name, as `LocalPolicy.without` and `bench/bfcl.py --without` take it."""
    output_tools: bool = False
    """Whether it also judges calls of a typed run's output tool."""

    @abstractmethod
    def judge(
        self, tool: AgentTool, arguments: dict[str, Any], scene: CallScene
    ) -> Repaired | Dropped | None:
        """`Repaired` (new arguments), `Dropped`, or None to keep the call as it is."""

    def stops(self, tool: AgentTool, arguments: dict[str, Any], scene: CallScene) -> str | None:
        """For a call still being written (`arguments` partial): why it cannot end well, so
        generation stops now and the reply is asked again without the tool; None: go on."""
        return None


# ── the policy ─────────────────────────────────────────────────────────────


@dataclass(frozen=True, slots=True, init=False)
class LocalPolicy:
    """The embedded model's rules, in the order they run: offer rules before a reply, call
    rules on each call of it. `LocalPolicy(())` is plain constrained decoding."""

    rules: tuple[OfferRule | CallRule, ...] = ()

    def __init__(self, rules: Iterable[OfferRule | CallRule] = ()) -> None:
        """Args:
            rules: Offer and call rules, in order; names must be distinct.

        Raises:
            ProviderError: two rules share a name.
        """
        rules = tuple(rules)
        names = [rule.name for rule in rules]
        twice = sorted({n for n in names if names.count(n) > 1})
        if twice:
            raise ProviderError(f"a local policy names each rule once; twice: {', '.join(twice)}")
        object.__setattr__(self, "rules", rules)

    @property
    def names(self) -> tuple[str, ...]:
        """The rules' names, in order."""
        return tuple(rule.name for rule in self.rules)

    @property
    def offer_rules(self) -> tuple[OfferRule, ...]:
        """The offer rules, in order."""
        return tuple(rule for rule in self.rules if isinstance(rule, OfferRule))

    @property
    def call_rules(self) -> tuple[CallRule, ...]:
        """The call rules, in order."""
        return tuple(rule for rule in self.rules if isinstance(rule, CallRule))

    def without(self, *names: str) -> LocalPolicy:
        """This policy without the rules `names`.

        Raises:
            ProviderError: a name is not a rule of this policy (the message lists them).
        """
        unknown = [name for name in names if name not in self.names]
        if unknown:
            raise ProviderError(
                f"no local rule named {', '.join(map(repr, unknown))}; "
                f"the rules are: {', '.join(self.names)}"
            )
        return LocalPolicy(rule for rule in self.rules if rule.name not in names)
