"""The embedded model's rules as one pipeline (DESIGN §20): `OfferRule`s shape what the
model is offered for a reply, `CallRule`s repair or drop what it wrote, and a `LocalPolicy`
orders them. `DEFAULT_POLICY` is what the embedded provider runs unless told otherwise
(`local_model("local/...", policy=...)` chooses another); `LocalPolicy(())` is plain
constrained decoding. Every step a rule takes is recorded in the assistant message's
`details["local_rules"]`.

Switch a rule off by name: `DEFAULT_POLICY.without("relevant")`.
"""

from __future__ import annotations

from yiemagent.ai.providers.local.rules.calls import (
    AddsPart,
    AnsweredRepeat,
    ChainStepRule,
    DateFormat,
    FileAsValue,
    FileNames,
    Grounded,
    NamedFirst,
    PercentAsFraction,
    Relevant,
    RunawayChoices,
    UnbackedOptions,
)
from yiemagent.ai.providers.local.rules.contract import (
    CallRule,
    CallScene,
    Dropped,
    LocalPolicy,
    Offer,
    OfferRule,
    Repaired,
    RuleAction,
    RuleNote,
    Turn,
)
from yiemagent.ai.providers.local.rules.offers import (
    AnswerParts,
    ChainUnnamed,
    ExtraCall,
    GivenFile,
    LongResults,
    NamedTool,
    NamedUnused,
    ResultsEcho,
    RoundBudget,
    UnbackedAnswer,
    UnknownTool,
)

__all__ = [
    "DEFAULT_POLICY",
    "DETAILS_KEY",
    "AddsPart",
    "AnswerParts",
    "AnsweredRepeat",
    "CallRule",
    "CallScene",
    "ChainStepRule",
    "ChainUnnamed",
    "DateFormat",
    "Dropped",
    "ExtraCall",
    "FileAsValue",
    "FileNames",
    "GivenFile",
    "Grounded",
    "LocalPolicy",
    "LongResults",
    "NamedFirst",
    "NamedTool",
    "NamedUnused",
    "Offer",
    "OfferRule",
    "PercentAsFraction",
    "Relevant",
    "Repaired",
    "ResultsEcho",
    "RoundBudget",
    "RuleAction",
    "RuleNote",
    "RunawayChoices",
    "Turn",
    "UnbackedAnswer",
    "UnbackedOptions",
    "UnknownTool",
]

DETAILS_KEY = "local_rules"
"""The key of the assistant message's `details` that lists the rules' steps."""

DEFAULT_POLICY = LocalPolicy(
    (
        LongResults(),
        RoundBudget(),
        ChainUnnamed(),
        NamedUnused(),
        NamedTool(),
        UnknownTool(),
        GivenFile(),
        UnbackedAnswer(),
        AnswerParts(),
        ResultsEcho(),
        ExtraCall(),
        FileNames(),
        FileAsValue(),
        RunawayChoices(),
        UnbackedOptions(),
        PercentAsFraction(),
        DateFormat(),
        AnsweredRepeat(),
        Grounded(),
        Relevant(),
        ChainStepRule(),
        AddsPart(),
        NamedFirst(),
    )
)
"""The embedded provider's rules, in order: offer rules, then call rules."""
