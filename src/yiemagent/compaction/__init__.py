"""Compaction: keep a long conversation inside the model's context window (DESIGN §15).

Public: `Compactor` (a `transform_context` for any `Agent` or `AgentLoopConfig`: near the
window, older turns become one model-written `CompactionSummaryMessage`, tool calls and
results stay in pairs, the stored transcript stays whole), `CompactionInfo` (what one
compaction did, for `on_compact`), `ContextWindowExceeded` (a last turn no compaction can
fit, raised before any model call), `estimate_tokens` and `answer_tokens` (the room a call's
answer needs). Example:

    compactor = Compactor(model, context_window=8192)
    agent = Agent(model=model, transform_context=compactor)

The module `_compactor` is private.
"""

from yiemagent.compaction._compactor import (
    CompactionInfo as CompactionInfo,
    Compactor as Compactor,
    ContextWindowExceeded as ContextWindowExceeded,
    answer_tokens as answer_tokens,
    estimate_tokens as estimate_tokens,
)

__all__ = [
    "CompactionInfo",
    "Compactor",
    "ContextWindowExceeded",
    "answer_tokens",
    "estimate_tokens",
]

# Exceptions name this package, their public path, in tracebacks and pickles (pickle finds
# them here); classes with annotations keep their module, where `get_type_hints` reads them.
for _error in (ContextWindowExceeded,):
    _error.__module__ = __name__
del _error
