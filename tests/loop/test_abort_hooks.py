"""DESIGN R-4.5: a child signal's `on_parent_abort` hook — the one way a tool call's deadline
hears of the run's abort (no listener of its own) — and the abort grace of a tool that had
aborted its own signal before the run was aborted."""

from __future__ import annotations

import asyncio
import contextlib
import threading
import time
from typing import Any

import pytest
from hypothesis import given, strategies as st

import yiemagent.loop._execution as deadline
from tests.approvals._kit import transcript_problems
from tests.loop._kit import call, make_tool, run_batch, texts
from yiemagent import (
    AbortSignal,
    AgentContext,
    AgentEndEvent,
    AgentLoopConfig,
    AssistantMessage,
    ToolResultMessage,
    UserMessage,
    agent_loop,
    default_convert_to_llm,
)
from yiemagent.ai.providers.faux import FauxModel, faux_message, faux_tool_call

STEPS = st.lists(st.sampled_from(["child", "parent", "detach"]), max_size=6)


@given(STEPS)
def test_on_parent_abort_runs_once_exactly_when_the_parent_aborts_first(steps: list[str]) -> None:
    """Whatever the order of the child's own abort, the parent's abort and `detach()`: the
    hook runs once, with the parent's reason, iff the parent is aborted while attached; the
    child is aborted iff either was; the parent keeps no listener after `detach()`."""
    parent = AbortSignal()
    calls: list[str | None] = []
    child = parent.child(on_parent_abort=calls.append)
    attached, parent_aborted, child_aborted = True, False, False
    expected: list[str | None] = []
    for step in steps:
        if step == "child":
            child.abort("own")
            child_aborted = True
        elif step == "parent":
            parent.abort("run")
            if attached and not parent_aborted:
                expected.append("run")
            parent_aborted = True
        else:
            child.detach()
            attached = False
    assert calls == expected
    assert child.aborted == (child_aborted or bool(expected))
    if expected and not child_aborted:
        assert child.reason == "run"
    child.detach()
    assert parent._listeners == [] and parent._children == {}


def test_a_child_of_an_aborted_parent_runs_the_hook_at_once() -> None:
    parent = AbortSignal()
    parent.abort("gone")
    calls: list[str | None] = []
    child = parent.child(on_parent_abort=calls.append)
    assert child.aborted and child.reason == "gone" and calls == ["gone"]


@pytest.mark.parametrize("plain", [False, True])
async def test_r4_5_a_tool_that_aborted_its_own_signal_still_gets_the_runs_grace(
    plain: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Its own abort starts no grace; the run's abort later does (0.1 s here). The run is
    aborted 0.4 s after the tool's own abort, whenever that comes (no fixed schedule, which a
    loaded machine outran)."""
    monkeypatch.setattr(deadline, "ABORT_GRACE_S", 0.1)
    run = AbortSignal()
    own_aborted = threading.Event()

    async def own_async(tool_call_id: str, args: Any, signal: AbortSignal, on_update: Any) -> str:
        signal.abort("I give up on my helpers")
        own_aborted.set()
        await asyncio.sleep(10)
        return "never"

    def own_plain(tool_call_id: str, args: Any, signal: AbortSignal, on_update: Any) -> str:
        signal.abort("I give up on my helpers")
        own_aborted.set()
        time.sleep(5.0)
        return "late"

    aborted_at: list[float] = []

    async def abort_the_run() -> None:
        await asyncio.to_thread(own_aborted.wait, 10)
        await asyncio.sleep(0.4)  # four graces: had its own abort started one, it is over
        aborted_at.append(time.perf_counter())
        run.abort()

    task = asyncio.create_task(abort_the_run())
    batch, _, _ = await run_batch(
        [make_tool("s", own_plain if plain else own_async)], call("s"), signal=run
    )
    ended = time.perf_counter()
    await task
    assert texts(batch) == ["Operation aborted: tool s did not stop within 0.1 s"]
    # Answered after the run's abort (not at its own), long before the tool would end.
    assert aborted_at and 0 <= ended - aborted_at[0] < 3.0


@pytest.mark.parametrize("trial", range(20))
def test_children_attached_while_another_thread_aborts_each_hear_it_once(trial: int) -> None:
    """A child attaches without a lock: one attaching on the loop's thread while
    the run is aborted on another is still aborted, and its hook runs exactly once, whichever
    side wins; children detached before the abort hear nothing."""
    parent = AbortSignal()
    heard: dict[int, int] = {}
    children: list[AbortSignal] = []
    detached: set[int] = set()
    go = threading.Barrier(2)

    def hook_for(n: int) -> Any:
        def hook(reason: str | None) -> None:
            assert reason == "stop"
            heard[n] = heard.get(n, 0) + 1

        return hook

    def attach() -> None:
        go.wait()
        for n in range(3000):
            child = parent.child(on_parent_abort=hook_for(n))
            children.append(child)
            if n % 3 == 0 and not parent.aborted:
                child.detach()
                if not child.aborted:
                    detached.add(n)

    def abort() -> None:
        go.wait()
        time.sleep(0.0002 * trial)
        parent.abort("stop")

    threads = [threading.Thread(target=attach), threading.Thread(target=abort)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    for n, child in enumerate(children):
        if n in detached:
            assert n not in heard
        else:
            assert child.aborted and child.reason == "stop", n
            assert heard.get(n) == 1, n
    assert parent._children == {}


@pytest.mark.parametrize("hook", ["before_tool_call", "after_tool_call", "transform_context"])
async def test_a_hook_that_ignores_the_abort_is_abandoned_after_the_grace(
    hook: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An async hook that ignored the run's abort held the run until it returned (30 s
    here); like a tool or a provider, it now gets the grace (0.1 s), then its call is
    answered "Operation aborted" (a context hook: the model call ends aborted)."""
    monkeypatch.setattr(deadline, "ABORT_GRACE_S", 0.1)
    signal = AbortSignal()
    started = asyncio.Event()

    async def stuck(*args: Any) -> Any:
        if hook != "transform_context" or len(args[0]) > 2:  # the turn after the tool's
            started.set()
            await asyncio.sleep(30)
        return args[0] if hook == "transform_context" else None

    fm = FauxModel([faux_message(faux_tool_call("t", {})), "never"])
    context = AgentContext("sys", [], [make_tool("t")])
    config = AgentLoopConfig(model=fm.model, **{hook: stuck})

    async def abort_once_stuck() -> None:
        await asyncio.wait_for(started.wait(), 10)
        signal.abort("stop")

    aborter = asyncio.create_task(abort_once_stuck())
    stream = agent_loop([UserMessage("go")], context, config, signal, fm.stream_fn)
    events = await asyncio.wait_for(_all(stream), 10)
    await aborter

    end = events[-1]
    assert isinstance(end, AgentEndEvent) and end.reason == "aborted"
    assert transcript_problems(context.messages) == []
    results = [m for m in context.messages if isinstance(m, ToolResultMessage)]
    assert len(results) == 1
    if hook == "transform_context":
        last = context.messages[-1]
        assert isinstance(last, AssistantMessage) and last.stop_reason == "aborted"
    else:
        text = results[0].content[0].text  # type: ignore[union-attr]
        assert text == f"Operation aborted: {hook} did not stop within 0.1 s"


@pytest.mark.parametrize("hook", ["before_tool_call", "after_tool_call", "transform_context"])
async def test_a_hook_that_swallows_its_cancellation_is_left_behind(
    hook: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Past the grace the hook is cancelled; one that catches the CancelledError and waits
    on kept the run until it chose to return. It is left to finish on its own."""
    monkeypatch.setattr(deadline, "ABORT_GRACE_S", 0.1)
    signal = AbortSignal()
    started, release = asyncio.Event(), asyncio.Event()

    async def stubborn(*args: Any) -> Any:
        if hook != "transform_context" or len(args[0]) > 2:  # the turn after the tool's
            started.set()
            while not release.is_set():
                with contextlib.suppress(asyncio.CancelledError):
                    await release.wait()
        return args[0] if hook == "transform_context" else None

    fm = FauxModel([faux_message(faux_tool_call("t", {})), "never"])
    context = AgentContext("sys", [], [make_tool("t")])
    config = AgentLoopConfig(model=fm.model, **{hook: stubborn})
    await _abort_while_held(
        fm, context, config, signal, (started, release), 30, "a hook it had abandoned"
    )


async def _abort_while_held(
    fm: FauxModel,
    context: AgentContext,
    config: AgentLoopConfig,
    signal: AbortSignal,
    gates: tuple[asyncio.Event, asyncio.Event],
    guard_s: float,
    held_by: str,
) -> None:
    """Run the loop until the hook sets `started`, abort it, and check that it ends
    "aborted" within `guard_s` (a hang guard, not a time budget) with every tool call
    answered; `release` lets the held hook go afterwards."""
    started, release = gates
    stream = agent_loop([UserMessage("go")], context, config, signal, fm.stream_fn)
    running = asyncio.ensure_future(_all(stream))
    await asyncio.wait_for(started.wait(), 10)
    signal.abort("stop")
    done, _ = await asyncio.wait({running}, timeout=guard_s)
    release.set()
    assert done, f"the aborted run waited for {held_by}"
    end = running.result()[-1]
    assert isinstance(end, AgentEndEvent) and end.reason == "aborted"
    assert transcript_problems(context.messages) == []


async def _all(stream: Any) -> list[Any]:
    return [event async for event in stream]


# The hooks the loop awaits between turns and before a model call, each stuck on its call
# after the tool's turn (steering and the context hooks also run before the first call).
TURN_HOOKS = {
    "get_steering_messages": 2,
    "should_stop_after_turn": 1,
    "prepare_next_turn": 1,
    "get_follow_up_messages": 1,
    "convert_to_llm": 2,
    "get_api_key": 2,
}


def _answer(hook: str, args: tuple[Any, ...]) -> Any:
    if hook == "convert_to_llm":
        return default_convert_to_llm(args[0])
    return [] if hook in ("get_steering_messages", "get_follow_up_messages") else None


@pytest.mark.parametrize("swallows", [False, True], ids=["ignores", "swallows"])
@pytest.mark.parametrize("hook", sorted(TURN_HOOKS))
async def test_a_turn_hook_stuck_past_the_abort_is_abandoned_after_the_grace(
    hook: str, swallows: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`get_steering_messages`, `get_follow_up_messages`, `prepare_next_turn` and
    `should_stop_after_turn` held an aborted run for as long as they hung (30 s here);
    `convert_to_llm` and `get_api_key` as long as one that swallowed its cancellation
    chose. Each now gets the grace (0.1 s) that tools, tool hooks and streams get; the
    run ends "aborted" with every tool call answered and no further model call."""
    monkeypatch.setattr(deadline, "ABORT_GRACE_S", 0.1)
    signal = AbortSignal()
    started, release = asyncio.Event(), asyncio.Event()
    calls = 0

    async def stuck(*args: Any) -> Any:
        nonlocal calls
        calls += 1
        if calls == TURN_HOOKS[hook]:
            started.set()
            if swallows:
                while not release.is_set():
                    with contextlib.suppress(asyncio.CancelledError):
                        await release.wait()
            else:
                await asyncio.sleep(30)
        return _answer(hook, args)

    fm = FauxModel([faux_message(faux_tool_call("t", {})), "answer", "never"])
    context = AgentContext("sys", [], [make_tool("t")])
    config = AgentLoopConfig(model=fm.model, **{hook: stuck})
    await _abort_while_held(fm, context, config, signal, (started, release), 20, hook)
    assert len([m for m in context.messages if isinstance(m, ToolResultMessage)]) == 1
    answers = [m.text for m in context.messages if isinstance(m, AssistantMessage)]
    assert "never" not in answers  # the follow-up poll comes after the model's answer
    assert ("answer" in answers) == (hook == "get_follow_up_messages")
