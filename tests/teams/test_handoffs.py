"""Handoffs (DESIGN §17): `transfer_to_<name>` tools, the batch's other calls still
answered, the run going on in the target's configuration on the same transcript, the
speaker recorded on each message and in `state.active_agent`, `input_filter`, and
`max_handoffs` bounding a chain."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings, strategies as st

from yiemagent import (
    AgentTool,
    AssistantMessage,
    ConfigError,
    Handoff,
    TextContent,
    ToolResultMessage,
    UserMessage,
)
from yiemagent.agent import remove_handoff_turns
from yiemagent.ai.providers.faux import faux_message, faux_tool_call
from yiemagent.types import Context, text_of

from ..approvals._kit import transcript_problems
from ._kit import calls, scripted, slow_tool


async def test_the_run_continues_in_the_targets_configuration() -> None:
    log: list[tuple[str, str, float]] = []
    billing, billing_fm = scripted(
        "billing",
        ["Your invoice is paid.", "Anything else?"],
        tools=[slow_tool("invoices", log, 0)],
    )
    router, router_fm = scripted(
        "router",
        [calls(("note", {"n": 1}), ("transfer_to_billing", {"reason": "an invoice question"}))],
        tools=[slow_tool("note", log, 0.05)],
        handoffs=[Handoff(billing, description="Invoices and payments.")],
    )

    reply = await router.prompt("Is my invoice paid?")

    assert reply.text == "Your invoice is paid." and reply.agent == "billing"
    offered = {t.name: t for t in router_fm.contexts[0].tools}
    assert set(offered) == {"note", "transfer_to_billing"}
    assert "Invoices and payments." in offered["transfer_to_billing"].description
    assert "reason" in offered["transfer_to_billing"].input_schema["properties"]
    results = [m for m in router.state.messages if isinstance(m, ToolResultMessage)]
    assert [(r.tool_name, r.is_error) for r in results] == [
        ("note", False),  # the batch's other call ran and was answered
        ("transfer_to_billing", False),
    ]
    seen = billing_fm.contexts[0]
    assert seen.system_prompt == "You are billing."
    assert [t.name for t in seen.tools] == ["invoices"]
    assert any(isinstance(m, ToolResultMessage) for m in seen.messages)  # the same transcript
    speakers = [m.agent for m in router.state.messages if isinstance(m, AssistantMessage)]
    assert speakers == ["router", "billing"]
    assert router.state.active_agent == "billing"
    assert transcript_problems(router.state.messages) == []

    again = await router.prompt("Thanks")  # the next prompt is billing's
    assert again.text == "Anything else?" and again.agent == "billing"
    assert router_fm.call_count == 1 and billing_fm.call_count == 2


async def test_input_filter_trims_what_the_target_sees() -> None:
    target, target_fm = scripted("target", ["hello from target"])
    entry, _ = scripted(
        "entry",
        ["first answer", calls(("transfer_to_target", {}))],
        handoffs=[Handoff(target, input_filter=lambda messages: messages[-2:])],
    )
    await entry.prompt("one")
    await entry.prompt("two")

    assert [type(m).__name__ for m in target_fm.contexts[0].messages] == [
        "AssistantMessage",
        "ToolResultMessage",
    ]
    assert len(entry.state.messages) == 6  # the agent's transcript keeps everything


async def test_a_chain_a_b_a_is_bounded_by_max_handoffs() -> None:
    refused: list[str] = []

    def respond(other: str) -> Any:
        def next_message(context: Context) -> AssistantMessage:
            last = context.messages[-1]
            if isinstance(last, ToolResultMessage) and last.is_error:
                refused.append(last.content[0].text)  # type: ignore[union-attr]
                return faux_message("I will answer myself.")
            return faux_message(faux_tool_call(f"transfer_to_{other}", {}))

        return next_message

    a, _ = scripted("A", [respond("B")] * 20)
    b, _ = scripted("B", [respond("A")] * 20, handoffs=[a])
    a.handoffs = [Handoff(b)]  # a cycle: built after both agents exist

    reply = await a.prompt("go")

    transfers = [m for m in a.state.messages if isinstance(m, ToolResultMessage) and not m.is_error]
    assert len(transfers) == 10  # the default max_handoffs
    assert len(refused) == 1 and "max_handoffs=10 reached" in refused[0]
    assert reply.text == "I will answer myself."
    assert reply.agent == "A"  # ten handoffs: A→B→…→A
    assert transcript_problems(a.state.messages) == []

    a.max_handoffs = 1
    a.state.active_agent = "A"
    refused.clear()
    await a.prompt("again")
    assert len(refused) == 1 and "max_handoffs=1 reached" in refused[0]


def test_bad_handoffs_are_config_errors() -> None:
    one, _ = scripted("one", [])
    with pytest.raises(ConfigError, match="give Agents or Handoff"):
        scripted("x", [], handoffs=["one"])
    with pytest.raises(ConfigError, match="names the agent 'one' twice"):
        scripted("x", [], handoffs=[one, Handoff(one)])
    with pytest.raises(ConfigError, match="max_handoffs must be"):
        scripted("x", [], max_handoffs=-1)


async def test_remove_handoff_turns_lets_the_target_read_the_question_first() -> None:
    target, target_fm = scripted("target", ["the target's answer"])
    entry, _ = scripted(
        "entry",
        [calls(("transfer_to_target", {"reason": "its field"}))],
        handoffs=[Handoff(target, input_filter=remove_handoff_turns)],
    )
    assert (await entry.prompt("a question")).text == "the target's answer"
    seen = target_fm.contexts[0].messages
    assert [type(m).__name__ for m in seen] == ["UserMessage"]
    assert len(entry.state.messages) == 4  # the transcript keeps the hand-over turn


@pytest.mark.parametrize("reopened", [False, True])
async def test_a_later_prompt_shows_the_target_what_its_filter_left(
    tmp_path: Any, reopened: bool
) -> None:
    """openai-agents-python #2258 (fixed by its PR #2667): a follow-up after a filtered
    handoff replayed the unfiltered history. Here the target's second prompt showed it
    the router's `transfer_to_target` turn that `remove_handoff_turns` had taken out of
    its first: a call of a tool it does not have, which the small model copies."""
    from yiemagent.sessions import SqliteSessionStore

    store = SqliteSessionStore(tmp_path / "sessions.db")

    def team(target_script: list[Any]) -> tuple[Any, Any]:
        target, target_fm = scripted("target", target_script)
        entry, _ = scripted(
            "entry",
            [calls(("transfer_to_target", {}))],
            handoffs=[Handoff(target, input_filter=remove_handoff_turns)],
            session_store=store,
            session_id="s",
        )
        return entry, target_fm

    entry, target_fm = team(["first answer", "second answer"])
    await entry.prompt("one")
    if reopened:  # another process goes on with the stored session
        await entry.close()
        entry, target_fm = team(["second answer"])
    assert (await entry.prompt("two")).text == "second answer"

    seen = target_fm.contexts[-1].messages
    assert [(type(m).__name__, getattr(m, "agent", None)) for m in seen] == [
        ("UserMessage", None),
        ("AssistantMessage", "target"),
        ("UserMessage", None),
    ]
    assert len(entry.state.messages) == 6  # the transcript keeps the hand-over turn
    await entry.close()


async def test_a_filter_applies_to_the_view_of_the_agent_that_handed_over() -> None:
    """A hands to B through a filter, B to C without one: C's next prompt sees what B saw
    (A's hand-over taken out), then B's turns, as C's first turn did."""
    c, c_fm = scripted("C", ["from C", "C again"])
    b, _ = scripted("B", [calls(("transfer_to_C", {}))], handoffs=[c])
    a, _ = scripted(
        "A",
        [calls(("transfer_to_B", {}))],
        handoffs=[Handoff(b, input_filter=remove_handoff_turns)],
    )
    await a.prompt("one")
    await a.prompt("two")

    first, second = (ctx.messages for ctx in c_fm.contexts)
    shown = ["UserMessage", "AssistantMessage", "ToolResultMessage"]
    assert [type(m).__name__ for m in first] == shown
    assert [type(m).__name__ for m in second] == [*shown, "AssistantMessage", "UserMessage"]
    assert all(m.agent == "B" for m in first if isinstance(m, AssistantMessage))
    assert transcript_problems(second) == []


def _ping_pong(turns: int) -> list[Any]:
    """A session where A hands each question to B and B hands it back."""
    messages: list[Any] = []
    for turn in range(turns):
        messages.append(UserMessage(f"q{turn}"))
        for writer, target in (("A", "B"), ("B", "A")):
            transfer = calls((f"transfer_to_{target}", {}))
            transfer.agent = writer
            call_id = transfer.tool_calls[0].id
            done = ToolResultMessage(call_id, f"transfer_to_{target}", [TextContent("ok")])
            messages += [transfer, done]
        answer = faux_message(f"a{turn}")
        answer.agent = "A"
        messages.append(answer)
    return messages


async def test_a_session_of_a_thousand_handoffs_still_gets_its_view() -> None:
    """The view walked back through the chain of handoffs by recursion, one level a
    handoff: a long-lived session (a server's) with a thousand filtered handoffs failed
    every prompt with RecursionError."""
    b, _ = scripted("B", [])
    a, a_fm = scripted(
        "A", ["A answers"] * 2, handoffs=[Handoff(b, input_filter=remove_handoff_turns)],
        messages=_ping_pong(600),
    )  # fmt: skip
    b.handoffs = [Handoff(a, input_filter=remove_handoff_turns)]

    for _ in range(2):  # the second from the view the first started from
        assert (await a.prompt("one more")).text == "A answers"
        seen = a_fm.contexts[-1].messages
        assert not any("transfer_to" in repr(m) for m in seen)
        assert transcript_problems(seen) == []
    assert len(a_fm.contexts[1].messages) == len(a_fm.contexts[0].messages) + 2


TEAM_EDGES = {"A": ["B"], "B": ["C", "A"], "C": ["A"]}


def _team(scripts: dict[str, list[Any]], messages: list[Any] | None = None) -> Any:
    """A→B (without its hand-over turns), B→C (without the first message), B→A (without
    the hand-over turns), C→A (unfiltered); each agent answers from `scripts`."""
    agents = {name: scripted(name, scripts[name]) for name in "BC"}
    a, a_fm = scripted("A", scripts["A"], messages=messages)
    agents["A"] = (a, a_fm)
    drop_first = lambda messages: messages[1:]  # noqa: E731
    filters = {("A", "B"): remove_handoff_turns, ("B", "C"): drop_first,
               ("B", "A"): remove_handoff_turns}  # fmt: skip
    for name, targets in TEAM_EDGES.items():
        agents[name][0].handoffs = [
            Handoff(agents[t][0], input_filter=filters.get((name, t))) for t in targets
        ]
    return a, {name: fm for name, (_, fm) in agents.items()}


def _shape(messages: Any) -> list[str]:
    return [f"{type(m).__name__}:{getattr(m, 'agent', '')}:{m.content!r}"[:120] for m in messages]


@settings(max_examples=20, deadline=None)
@given(st.lists(st.lists(st.integers(0, 1), max_size=3), min_size=1, max_size=6))
async def test_a_later_prompts_view_is_the_one_a_fresh_agent_computes(
    plans: list[list[int]],
) -> None:
    """The views a long-lived agent starts its runs from (each from the last one, plus
    what happened since) are exactly those an agent made afresh on the same transcript
    computes from the whole session."""
    scripts: dict[str, list[Any]] = {"A": [], "B": [], "C": []}
    prompts: list[tuple[str, dict[str, list[Any]]]] = []
    speaker = "A"
    for number, plan in enumerate(plans):
        mine: dict[str, list[Any]] = {"A": [], "B": [], "C": []}
        for step in plan:  # a walk along the team's handoffs
            target = TEAM_EDGES[speaker][step % len(TEAM_EDGES[speaker])]
            mine[speaker].append(calls((f"transfer_to_{target}", {})))
            speaker = target
        mine[speaker].append(f"answer {number} by {speaker}")
        prompts.append((f"question {number}", mine))
        for name in scripts:
            scripts[name] += mine[name]

    lived, lived_fms = _team(scripts)
    for text, mine in prompts:
        before = list(lived.state.messages)
        speaker_before = lived.state.active_agent
        counts = {name: fm.call_count for name, fm in lived_fms.items()}
        await lived.prompt(text)
        fresh, fresh_fms = _team(mine, messages=before)
        fresh.state.active_agent = speaker_before  # (handoffs assigned after it was made)
        await fresh.prompt(text)
        for name, fm in fresh_fms.items():
            mine_seen = [_shape(c.messages) for c in lived_fms[name].contexts[counts[name] :]]
            assert mine_seen == [_shape(c.messages) for c in fm.contexts], name


async def test_a_filter_that_raises_is_a_clear_error_at_every_prompt_it_would_shape() -> None:
    """openai/openai-agents-js #1427 (invalid handoff filters fail as configuration
    errors): a filter that raises is named, in the run that hands over and in a later
    prompt the target would answer through it; assigning `active_agent` goes on."""
    from yiemagent import AgentRunError

    def broken(messages: list[Any]) -> list[Any]:
        raise ValueError("filter broke")

    target, target_fm = scripted("target", ["never"])
    entry, _ = scripted(
        "entry",
        [calls(("transfer_to_target", {})), "entry again"],
        handoffs=[Handoff(target, input_filter=broken)],
    )
    named = r"the input_filter of the handoff to 'target' raised ValueError: filter broke"
    with pytest.raises(AgentRunError, match=named):
        await entry.prompt("one")
    with pytest.raises(ConfigError, match=named):
        await entry.prompt("two")
    assert target_fm.call_count == 0  # it never saw what the filter was to keep from it
    entry.state.active_agent = "entry"
    assert (await entry.prompt("three")).text == "entry again"
    assert transcript_problems(entry.state.messages) == []


async def test_a_filter_that_leaves_no_message_is_a_clear_error_not_an_empty_request() -> None:
    """microsoft/agent-framework #7573 (a handoff target invoked with no messages): a
    filter that keeps nothing sent the target's model an empty conversation, which
    Anthropic refuses ("at least one message is required") and others answer at random.
    It is named like a filter that raises, and the target's model is not called. At a
    later prompt the filter may keep nothing of the turns before the handoff (it clears
    the target's memory): the target is asked the new question."""
    from yiemagent import AgentRunError

    target, target_fm = scripted("target", ["fresh start"])
    entry, _ = scripted(
        "entry",
        [calls(("transfer_to_target", {}))],
        handoffs=[Handoff(target, input_filter=lambda messages: [])],
    )
    with pytest.raises(AgentRunError, match="the input_filter of the handoff to 'target' left no"):
        await entry.prompt("one")
    assert target_fm.call_count == 0
    assert transcript_problems(entry.state.messages) == []
    assert (await entry.prompt("two")).text == "fresh start"
    seen = target_fm.contexts[0].messages
    assert [text_of(m.content) for m in seen if m.role == "user"] == ["two"]


async def test_reset_gives_the_conversation_back_to_the_entry_agent() -> None:
    target, _ = scripted("target", ["from target"])
    entry, _ = scripted(
        "entry", [calls(("transfer_to_target", {})), "from entry"], handoffs=[target]
    )
    await entry.prompt("one")
    assert entry.state.active_agent == "target"
    entry.reset()
    assert entry.state.active_agent == "entry"
    assert (await entry.prompt("two")).agent == "entry"


async def test_a_reopened_session_is_answered_by_the_agent_handed_to(tmp_path: Any) -> None:
    from yiemagent.sessions import SqliteSessionStore

    store = SqliteSessionStore(tmp_path / "sessions.db")
    billing, _ = scripted("billing", ["Your invoice is paid."])
    router, _ = scripted(
        "router",
        [calls(("transfer_to_billing", {}))],
        handoffs=[billing],
        session_store=store,
        session_id="s",
    )
    await router.prompt("Is my invoice paid?")
    await router.close()

    billing2, billing2_fm = scripted("billing", ["Anything else?"])
    router2, router2_fm = scripted(
        "router", ["router again"], handoffs=[billing2], session_store=store, session_id="s"
    )
    assert router2.state.active_agent == "billing"
    reply = await router2.prompt("Thanks")
    assert reply.agent == "billing" and reply.text == "Anything else?"
    assert router2_fm.call_count == 0 and billing2_fm.call_count == 1
    await router2.close()


async def test_a_transcript_ending_in_a_transfer_is_the_targets() -> None:
    # The run stopped after the transfer's result, before the target spoke (an abort, a
    # turn limit): the target answers next, as `state.active_agent` said in that process.
    target, target_fm = scripted("target", ["from target"])
    user = UserMessage("one")
    transfer = calls(("transfer_to_target", {}))
    transfer.agent = "entry"
    done = ToolResultMessage(
        transfer.tool_calls[0].id, "transfer_to_target", [TextContent("Transferred")]
    )
    refused = calls(("transfer_to_target", {}))
    refused.agent = "entry"
    error = ToolResultMessage(
        refused.tool_calls[0].id, "transfer_to_target", [TextContent("refused")], is_error=True
    )

    handed, _ = scripted("entry", [], handoffs=[target], messages=[user, transfer, done])
    assert handed.state.active_agent == "target"
    assert (await handed.prompt("two")).text == "from target"
    kept, _ = scripted("entry", [], handoffs=[target], messages=[user, refused, error])
    assert kept.state.active_agent == "entry"  # a refused transfer hands nothing over
    stranger = faux_message("hi")
    stranger.agent = "someone else"  # renamed, or another team's transcript
    assert (
        scripted("entry", [], handoffs=[target], messages=[user, stranger])[0].state.active_agent
        == "entry"
    )
    assert target_fm.call_count == 1


@pytest.mark.parametrize("reopened", [False, True])
async def test_an_approved_call_held_beside_a_transfer_runs_with_its_agents_tools(
    tmp_path: Any, reopened: bool
) -> None:
    """[pay (held for approval), transfer_to_billing] in one message: the transfer made
    billing the speaker, and the resume ran the approved call with billing's tools, where
    "pay" is not: the payment the user approved never happened ("Tool "pay" not found")."""
    from yiemagent.sessions import SqliteSessionStore

    from ..approvals._kit import recording_tool

    store = SqliteSessionStore(tmp_path / "sessions.db")
    ran: list[str] = []

    def make(router_script: list[Any], billing_text: str) -> tuple[Any, Any, Any]:
        billing, billing_fm = scripted("billing", [billing_text])
        router, router_fm = scripted(
            "router",
            router_script,
            tools=[recording_tool("pay", ran, requires_approval=True)],
            handoffs=[billing],
            session_store=store,
            session_id="s",
        )
        return router, router_fm, billing_fm

    script = [calls(("pay", {"n": 5}), ("transfer_to_billing", {}))]
    router, _, billing_fm = make(script, "Paid, thank you.")
    await router.prompt("Pay my invoice, then let billing confirm.")
    [held] = router.pending_approvals
    assert held.tool_name == "pay" and router.state.active_agent == "billing"
    if reopened:  # another process approves and resumes
        await router.close()
        router, _, billing_fm = make([], "Paid, thank you.")
        assert router.state.active_agent == "billing"
    router.approve(held.tool_call_id)

    reply = await router.resume()

    assert ran == [held.tool_call_id]  # the approved call ran, once
    result = next(
        m for m in router.state.messages
        if isinstance(m, ToolResultMessage) and m.tool_call_id == held.tool_call_id
    )  # fmt: skip
    assert not result.is_error, result.content
    assert reply.agent == "billing" and router.state.active_agent == "billing"
    assert billing_fm.call_count == 1
    assert transcript_problems(router.state.messages) == []
    await router.close()


CITY = {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}


async def test_a_targets_own_output_type_is_said_not_to_apply_and_the_runs_one_does() -> None:
    """A target's own `output_type` was dropped without a word when the run came to it
    through a handoff. A run keeps its entry's output type (or the prompt's) whoever
    answers, as `Agent[T].prompt` returns `OutputMessage[T]` (docs/teams.md); the
    Agent now says so when it is made, and a type given to the run applies to the target's
    answer."""
    billing, _ = scripted("billing", ['{"city": "Paris"}'], output_type=CITY)
    with pytest.warns(UserWarning) as said:
        lead, _ = scripted("lead", [calls(("transfer_to_billing", {}))], handoffs=[billing])
    assert [str(w.message) for w in said] == [
        "agent 'lead' hands off to 'billing', whose own output_type does not apply there: "
        "whoever answers, a run keeps the output type of the agent it starts on ('lead': "
        "none) or of prompt(output_type=...) (docs/teams.md)"
    ]
    reply = await lead.prompt("where?")
    assert reply.text == '{"city": "Paris"}' and not hasattr(reply, "output")

    billing, _ = scripted("billing", ['{"city": "Oslo"}'], output_type=CITY)
    with pytest.warns(UserWarning):
        lead, _ = scripted("lead", [calls(("transfer_to_billing", {}))], handoffs=[billing])
    typed = await lead.prompt("where?", output_type=CITY)
    assert typed.output == {"city": "Oslo"} and typed.agent == "billing"


def test_a_target_with_the_entrys_output_type_says_nothing(recwarn: Any) -> None:
    billing, _ = scripted("billing", [], output_type=CITY)
    scripted("lead", [], handoffs=[billing], output_type=CITY)
    scripted("plain", [], handoffs=[scripted("other", [])[0]])
    assert [str(w.message) for w in recwarn if "output_type" in str(w.message)] == []


def test_a_tool_named_as_a_handoff_is_refused_when_the_agent_is_made() -> None:
    # Two tools of one name reach the model as one it cannot tell apart (and a provider
    # may refuse the request): a function tool named `transfer_to_target` beside the
    # handoff to `target` is refused as the Agent is made, as other bad options are.
    def execute(call_id: str, args: Any, signal: Any, on_update: Any) -> str:
        return "mine"

    mine = AgentTool("transfer_to_target", "t", "Mine.", {"type": "object"}, execute)
    target, _ = scripted("target", ["never"])
    with pytest.raises(
        ConfigError, match=r"agent 'entry' has a tool named 'transfer_to_target'.*rename the tool"
    ):
        scripted("entry", ["never"], tools=[mine], handoffs=[target])
    with pytest.raises(ConfigError, match=r"'transfer_to_target'.*rename the tool"):
        scripted("entry", ["never"], tools={"transfer_to_target": mine}, handoffs=[target])


async def test_a_tool_registered_later_as_a_handoff_is_refused_before_the_model_is_asked() -> None:
    def execute(call_id: str, args: Any, signal: Any, on_update: Any) -> str:
        return "mine"

    mine = AgentTool("transfer_to_target", "t", "Mine.", {"type": "object"}, execute)
    target, target_fm = scripted("target", ["never"])
    entry, entry_fm = scripted("entry", ["never"], handoffs=[target])
    entry.tool_store.register(mine)
    with pytest.raises(ConfigError, match=r"a tool named 'transfer_to_target'.*rename the tool"):
        await entry.prompt("go")
    assert entry_fm.call_count == target_fm.call_count == 0
