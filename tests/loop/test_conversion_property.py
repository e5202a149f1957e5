"""DESIGN R-5.2 (property): whatever the transcript and however it grows, each model call
receives exactly `default_convert_to_llm` of the transcript at that moment, and what a
provider received earlier never changes afterwards (the loop converts incrementally)."""

from __future__ import annotations

from collections import deque
from typing import Any

from hypothesis import given, settings, strategies as st

from yiemagent import (
    AgentContext,
    AgentLoopConfig,
    AgentMessage,
    BashExecutionMessage,
    BranchSummaryMessage,
    CompactionSummaryMessage,
    Context,
    Message,
    Model,
    StreamOptions,
    TurnContext,
    TurnUpdate,
    UserMessage,
    default_convert_to_llm,
    run_agent_loop,
)
from yiemagent.ai.providers.faux import FauxModel, faux_message


class Note:
    """An application's own message type: the default conversion leaves it out."""

    role = "note"


def make(kind: str, n: int) -> AgentMessage:
    if kind == "user":
        return UserMessage(f"u{n}")
    if kind == "assistant":
        return faux_message(f"a{n}")
    if kind == "bash":
        return BashExecutionMessage(f"cmd{n}", f"out{n}", exit_code=n % 3)
    if kind == "compaction":
        return CompactionSummaryMessage(f"summary {n}")
    if kind == "branch":
        return BranchSummaryMessage(f"branch {n}")
    return Note()


KINDS = st.sampled_from(["user", "assistant", "bash", "compaction", "branch", "note"])
INJECTED = st.sampled_from(["user", "bash", "compaction", "note"])


@settings(max_examples=60, deadline=None)
@given(
    history=st.lists(KINDS, max_size=12),
    follow_ups=st.lists(st.lists(INJECTED, min_size=1, max_size=3), max_size=5),
    prepare=st.sampled_from(["none", "new_list", "truncate_front"]),
    keep_contexts=st.booleans(),
)
async def test_r5_2_every_call_sees_the_converted_transcript_of_that_moment(
    history: list[str], follow_ups: list[list[str]], prepare: str, keep_contexts: bool
) -> None:
    counter = iter(range(10_000))
    queue = deque([[make(kind, next(counter)) for kind in batch] for batch in follow_ups])
    fm = FauxModel([f"reply {i}" for i in range(len(follow_ups) + 1)])
    current = {"context": AgentContext("sys", [make(k, next(counter)) for k in history], [])}
    expected: list[list[Message]] = []
    received: list[Context] = []

    def stream_fn(model: Model, context: Context, options: StreamOptions | None) -> Any:
        expected.append(default_convert_to_llm(list(current["context"].messages)))
        if keep_contexts:
            received.append(context)
        else:  # a provider that keeps nothing; check now, then let it go
            assert context.messages == expected[-1]
        response = fm.stream_fn(model, context, options)
        fm.contexts.clear()
        return response

    def prepare_next_turn(turn: TurnContext) -> TurnUpdate | None:
        if prepare == "new_list":
            new = AgentContext("sys", list(turn.context.messages), turn.context.tools)
            current["context"] = new
            return TurnUpdate(context=new)
        if prepare == "truncate_front" and len(turn.context.messages) > 3:
            del turn.context.messages[:2]  # in place, as a crude compaction would
        return None

    config = AgentLoopConfig(
        model=fm.model,
        get_follow_up_messages=lambda: queue.popleft() if queue else [],
        prepare_next_turn=prepare_next_turn,
    )
    await run_agent_loop(
        [UserMessage("go")], current["context"], config, lambda e: None, stream_fn=stream_fn
    )
    assert len(expected) == len(follow_ups) + 1
    if keep_contexts:
        assert [c.messages for c in received] == expected
