"""DESIGN R-6.5 (abort, queued messages survive, wait_for_idle, subscribe, reset), R-6.6
(usable after a failed run), R-6.7 (no task or loop held when idle; prompt_sync)."""

from __future__ import annotations

import asyncio
import logging
from typing import Any

import pytest

from yiemagent import AbortSignal, Agent, AgentBusyError, ConfigError, ToolResultMessage
from yiemagent.agent import AgentRunError
from yiemagent.ai.providers.faux import FauxModel, faux_message, faux_tool_call
from yiemagent.types import text_of

from ._kit import EventWaiter, faux_agent, make_tool, user_texts


async def wait_until_aborted(
    tool_call_id: str, args: Any, signal: AbortSignal, on_update: Any
) -> str:
    await signal.wait()
    return "stopped"


# ── abort ─────────────────────────────────────────────────────────────


async def test_r6_5_abort_ends_the_run_and_queued_messages_survive_once_in_order() -> None:
    fm = FauxModel([faux_message(faux_tool_call("block", {})), "r1", "r2", "r3"])
    agent = faux_agent(fm, tools=[make_tool("block", wait_until_aborted)])
    waiter = EventWaiter(agent)
    run = asyncio.create_task(agent.prompt("first"))
    await waiter.wait_for("tool_execution_start")
    agent.steer("S1")
    agent.steer("S2")
    agent.follow_up("F1")
    agent.abort()
    aborted = await run
    assert aborted.stop_reason == "aborted"
    assert fm.call_count == 1
    assert agent.has_queued_messages()
    results = [m for m in agent.state.messages if isinstance(m, ToolResultMessage)]
    assert len(results) == 1  # the aborted call still has its one result

    answer = await agent.prompt("next")
    assert answer.text == "r3"
    texts = user_texts(agent.state.messages)
    assert texts == ["first", "next", "S1", "S2", "F1"]
    assert not agent.has_queued_messages()


async def test_r6_5_messages_taken_but_not_delivered_go_back_to_the_front() -> None:
    fm = FauxModel([faux_message(faux_tool_call("work", {})), "r1", "r2"])
    failing = {"on": True}

    def prepare_next_turn(turn: Any) -> None:
        if failing["on"]:
            raise RuntimeError("hook broke after the steering poll")

    agent = faux_agent(fm, steering_mode="all", prepare_next_turn=prepare_next_turn)

    def work(*args: Any) -> str:
        agent.steer("A")
        agent.steer("B")
        return "worked"

    agent.tool_store.register(make_tool("work", work))
    with pytest.raises(AgentRunError) as raised:
        await agent.prompt("first")
    failed = raised.value.message
    assert failed.stop_reason == "error"
    assert "hook broke" in (failed.error_message or "")
    assert "A" not in user_texts(agent.state.messages)  # polled, never delivered
    agent.steer("C")  # queued later: must come after the restored ones
    failing["on"] = False
    answer = await agent.prompt("second")
    assert answer.text == "r1"  # "all" mode: A, B, C open the first turn with the prompt
    assert user_texts(fm.contexts[-1].messages) == ["first", "second", "A", "B", "C"]
    assert user_texts(agent.state.messages) == ["first", "second", "A", "B", "C"]


async def test_r6_5_abort_when_idle_is_a_no_op_and_wait_for_idle_returns() -> None:
    agent = faux_agent(FauxModel(["ok"]))
    agent.abort()
    await agent.wait_for_idle()
    assert (await agent.prompt("go")).text == "ok"


async def test_r6_5_wait_for_idle_waits_for_the_run() -> None:
    fm = FauxModel(["slow answer"], delay_s=0.005)
    agent = faux_agent(fm)
    run = asyncio.create_task(agent.prompt("go"))
    await asyncio.sleep(0)
    assert agent.is_busy
    await agent.wait_for_idle()
    assert run.done()
    assert not agent.is_busy


@pytest.mark.parametrize("where", ["listener", "tool", "sent prompt's listener"])
async def test_r6_5_wait_for_idle_inside_the_run_raises_instead_of_waiting_for_itself(
    where: str,
) -> None:
    # pi's listeners are not awaited, so waitForIdle() in one simply resolves later; ours
    # are awaited, and waiting there for the run to end would hang the run for good.
    fm = FauxModel([faux_message(faux_tool_call("wait", {})), "answer"])
    agent = faux_agent(fm)
    refused: list[BaseException] = []

    async def wait_in_tool(*args: Any) -> str:
        try:
            await agent.wait_for_idle()
        except AgentBusyError as exc:
            refused.append(exc)
            raise
        return "waited"

    async def listener(event: Any, signal: Any) -> None:
        if event.type == "agent_end" and where != "tool":
            try:
                await agent.wait_for_idle()
            except AgentBusyError as exc:
                refused.append(exc)

    execute = wait_in_tool if where == "tool" else (lambda *args: "ok")
    agent.tool_store.register(make_tool("wait", execute))
    agent.subscribe(listener)
    if where == "sent prompt's listener":
        agent.send("go")
        answer = await asyncio.wait_for(agent.take_response(), timeout=30)
    else:
        answer = await asyncio.wait_for(agent.prompt("go"), timeout=30)

    assert answer.text == "answer"
    assert len(refused) == 1 and "wait for itself" in str(refused[0])
    await asyncio.wait_for(agent.wait_for_idle(), timeout=30)  # outside the run it waits
    if where == "tool":
        result = next(m for m in agent.state.messages if isinstance(m, ToolResultMessage))
        assert result.is_error and "wait for itself" in text_of(result.content)


@pytest.mark.parametrize("parallel", [False, True], ids=["sequential", "parallel"])
@pytest.mark.parametrize(
    "where", ["tool past its first wait", "second tool", "update listener", "after hook"]
)
async def test_r6_5_wait_for_idle_in_a_task_the_run_made_raises_too(
    parallel: bool, where: str
) -> None:
    # An async tool past its first wait, the second call of a parallel batch, the listeners
    # of a tool's update and the hooks run in tasks the run makes, not in the run's own
    # task; waiting there for the run's end hung the run until the caller's timeout.
    fm = FauxModel(
        [faux_message(faux_tool_call("first", {}), faux_tool_call("second", {})), "answer"]
    )
    refused: list[BaseException] = []

    async def wait_for_idle() -> None:
        try:
            await agent.wait_for_idle()
        except AgentBusyError as exc:
            refused.append(exc)

    async def first(call_id: str, args: Any, signal: Any, on_update: Any) -> str:
        await asyncio.sleep(0.01)
        if where == "tool past its first wait":
            await wait_for_idle()
        return "first"

    async def second(call_id: str, args: Any, signal: Any, on_update: Any) -> str:
        on_update("half way")
        await asyncio.sleep(0.01)
        if where == "second tool":
            await wait_for_idle()
        return "second"

    async def listener(event: Any, signal: Any) -> None:
        if event.type == "tool_execution_update" and where == "update listener":
            await wait_for_idle()

    async def after(context: Any, signal: Any) -> None:
        await asyncio.sleep(0.01)
        if context.tool_call.name == "second" and where == "after hook":
            await wait_for_idle()

    agent = faux_agent(fm, after_tool_call=after)
    agent.tool_store.register(make_tool("first", first, parallel=parallel))
    agent.tool_store.register(make_tool("second", second, parallel=parallel))
    agent.subscribe(listener)

    assert (await asyncio.wait_for(agent.prompt("go"), timeout=30)).text == "answer"
    assert len(refused) == 1 and "wait for itself" in str(refused[0])


async def test_r6_5_a_task_a_parallel_tool_starts_may_wait_for_idle() -> None:
    fm = FauxModel([faux_message(faux_tool_call("t", {}), faux_tool_call("t", {})), "answer"])
    later: list[asyncio.Task[Any]] = []

    async def start_waiting(*args: Any) -> str:
        await asyncio.sleep(0.01)
        later.append(asyncio.create_task(agent.wait_for_idle()))
        return "ok"

    agent = faux_agent(fm, tools=[make_tool("t", start_waiting, parallel=True)])
    assert (await asyncio.wait_for(agent.prompt("go"), timeout=30)).text == "answer"
    await asyncio.wait_for(asyncio.gather(*later), timeout=30)  # no AgentBusyError


async def test_r6_4_take_response_inside_the_run_with_none_ready_raises() -> None:
    # the response it would wait for is of a sent prompt that starts only after this run
    fm = FauxModel(["first", "second"])
    agent = faux_agent(fm)
    refused: list[BaseException] = []

    async def listener(event: Any, signal: Any) -> None:
        if event.type == "agent_end" and fm.call_count == 1:
            agent.send("next")
            try:
                await agent.take_response()
            except AgentBusyError as exc:
                refused.append(exc)

    agent.subscribe(listener)
    assert (await asyncio.wait_for(agent.prompt("go"), timeout=30)).text == "first"
    assert len(refused) == 1 and "wait for itself" in str(refused[0])
    assert (await asyncio.wait_for(agent.take_response(), timeout=30)).text == "second"


async def test_r6_5_a_task_a_listener_starts_may_wait_for_idle_then_prompt() -> None:
    fm = FauxModel(["first", "second"])
    agent = faux_agent(fm)
    later: list[asyncio.Task[Any]] = []

    async def prompt_again() -> str:
        await agent.wait_for_idle()
        return (await agent.prompt("again")).text

    def listener(event: Any, signal: Any) -> None:
        if event.type == "agent_end" and not later:
            later.append(asyncio.create_task(prompt_again()))

    agent.subscribe(listener)
    assert (await agent.prompt("go")).text == "first"
    assert await asyncio.wait_for(later[0], timeout=30) == "second"


async def test_r6_5_subscribe_async_listeners_are_awaited_in_order_with_the_signal() -> None:
    fm = FauxModel([faux_message(faux_tool_call("t", {})), "done"])
    agent = faux_agent(fm, tools=[make_tool("t", lambda *a: "ok")])
    log: list[tuple[str, str]] = []
    signals: set[int] = set()

    async def slow_first(event: Any, signal: Any) -> None:
        assert isinstance(signal, AbortSignal)
        signals.add(id(signal))
        await asyncio.sleep(0.001)
        log.append(("first", event.type))

    def second(event: Any, signal: Any) -> None:
        log.append(("second", event.type))

    def raising(event: Any, signal: Any) -> None:
        raise ValueError("listener bug")

    agent.subscribe(slow_first)
    agent.subscribe(raising)
    unsubscribe = agent.subscribe(second)
    await agent.prompt("go")
    kinds = [kind for who, kind in log if who == "first"]
    assert kinds[0] == "agent_start" and kinds[-1] == "agent_end"
    assert log == [pair for kind in kinds for pair in (("first", kind), ("second", kind))]
    assert len(signals) == 1

    unsubscribe()
    unsubscribe()  # idempotent
    log.clear()
    fm.add("again")
    await agent.prompt("again")
    assert log and all(who == "first" for who, _ in log)


async def test_r6_5_a_listener_subscribed_twice_is_called_once_per_event() -> None:
    # pi keeps its listeners in a Set: subscribing one again changes nothing. Ours were a
    # list, so each event reached the same listener twice (a chat line printed twice).
    fm = FauxModel(["first", "second", "third"])
    agent = faux_agent(fm)
    seen: list[str] = []

    class Watcher:
        def on_event(self, event: Any) -> None:
            seen.append(f"method {event.type}")

    def listener(event: Any, signal: Any) -> None:
        seen.append(event.type)

    watcher = Watcher()
    unsubscribe = agent.subscribe(listener)
    unsubscribe_again = agent.subscribe(listener)
    agent.subscribe(watcher.on_event)
    unsubscribe_method = agent.subscribe(watcher.on_event)  # a new bound method, same one
    await agent.prompt("go")
    kinds = [kind for kind in seen if not kind.startswith("method")]
    assert kinds[0] == "agent_start" and kinds.count("agent_end") == 1
    assert seen.count("method agent_end") == 1

    unsubscribe_again()  # either function removes it
    unsubscribe_method()
    seen.clear()
    await agent.prompt("again")
    assert seen == []
    unsubscribe()  # already removed: nothing happens

    agent.subscribe(listener)  # and it may come back
    await agent.prompt("once more")
    assert seen.count("agent_end") == 1


async def test_r6_5_a_listener_of_the_event_alone_gets_every_event() -> None:
    # pi's listeners take the event only (agent.subscribe((e) => ...)); ours may also take
    # the run's signal. One that takes the event alone got nothing but logged TypeErrors.
    fm = FauxModel(["done"])
    agent = faux_agent(fm)
    plain: list[str] = []
    awaited: list[str] = []

    async def async_listener(event: Any) -> None:
        awaited.append(event.type)

    agent.subscribe(lambda event: plain.append(event.type))
    agent.subscribe(async_listener)
    await agent.prompt("go")
    assert plain[0] == "agent_start" and plain[-1] == "agent_end"
    assert awaited == plain

    with pytest.raises(ConfigError, match=r"listener must take \(event\) or \(event, signal\)"):
        agent.subscribe(lambda: None)


async def test_r6_5_a_raising_listener_is_logged_and_the_run_goes_on(
    caplog: pytest.LogCaptureFixture,
) -> None:
    agent = faux_agent(FauxModel(["fine"]))

    def raising(event: Any, signal: Any) -> None:
        raise ValueError("listener bug")

    agent.subscribe(raising)
    with caplog.at_level(logging.ERROR):
        answer = await agent.prompt("go")
    assert answer.text == "fine"
    assert "agent_start" in caplog.text and "listener bug" in caplog.text


async def test_r6_5_reset_raises_while_running_and_clears_when_idle() -> None:
    fm = FauxModel([faux_message(faux_tool_call("block", {})), "never"])
    agent = faux_agent(fm, tools=[make_tool("block", wait_until_aborted)])
    waiter = EventWaiter(agent)
    run = asyncio.create_task(agent.prompt("go"))
    await waiter.wait_for("tool_execution_start")
    with pytest.raises(AgentBusyError, match="reset"):
        agent.reset()
    agent.steer("leftover")
    agent.abort()
    await run
    agent.reset()
    assert agent.state.messages == []
    assert agent.state.error_message is None
    assert not agent.has_queued_messages()


# ── usable after a failure ────────────────────────────────────────────


async def test_r6_6_the_agent_is_usable_after_a_failed_run() -> None:
    calls = {"n": 0}

    def convert_to_llm(messages: list[Any]) -> list[Any]:
        calls["n"] += 1
        if calls["n"] == 1:
            raise RuntimeError("converter exploded")
        return [m for m in messages if m.role in ("user", "assistant", "toolResult")]

    fm = FauxModel(["recovered"])
    agent = faux_agent(fm, convert_to_llm=convert_to_llm)
    with pytest.raises(AgentRunError) as raised:
        await agent.prompt("one")
    failed = raised.value.message
    assert failed.stop_reason == "error"
    assert "converter exploded" in (failed.error_message or "")
    assert agent.state.error_message and "converter exploded" in agent.state.error_message
    assert not agent.is_busy and agent.state.active_run is False
    answer = await agent.prompt("two")
    assert answer.text == "recovered"
    assert agent.state.error_message is None


# ── no loop held ──────────────────────────────────────────────────────


def test_r6_7_two_asyncio_runs_in_a_row() -> None:
    fm = FauxModel([faux_message(faux_tool_call("t", {})), "one", "two"], delay_s=0.001)
    agent = faux_agent(fm, tools=[make_tool("t", lambda *a: "ok")])
    assert asyncio.run(agent.prompt("first")).text == "one"
    assert asyncio.run(agent.prompt("second")).text == "two"
    agent.send("third")  # no loop running: waits for the next take_response
    fm.add("three")
    assert asyncio.run(agent.take_response()).text == "three"
    assert user_texts(agent.state.messages) == ["first", "second", "third"]


def test_r6_7_prompt_sync_from_plain_code() -> None:
    fm = FauxModel([faux_message(faux_tool_call("t", {})), "sync answer"])
    agent = Agent(model=fm.model, stream_fn=fm.stream_fn, tools=[make_tool("t", lambda *a: "ok")])
    answer = agent.prompt_sync("hello")
    assert answer.text == "sync answer"
    results = [m for m in agent.state.messages if isinstance(m, ToolResultMessage)]
    assert [text_of(r.content) for r in results] == ["ok"]


def test_r6_7_a_failed_prompt_sync_raises_without_an_unrelated_error_chained() -> None:
    """A failed run's AgentRunError was raised inside prompt_sync's check for a running
    loop, so every traceback began with "RuntimeError: no running event loop" and "During
    handling of the above exception, another exception occurred"."""
    agent = faux_agent(FauxModel([]))  # no response queued: the model call fails
    with pytest.raises(AgentRunError) as caught:
        agent.prompt_sync("hello")
    assert caught.value.__context__ is None
    assert not agent.is_busy


async def test_r6_7_prompt_sync_inside_a_running_loop_says_to_await() -> None:
    agent = faux_agent(FauxModel(["x"]))
    with pytest.raises(RuntimeError, match=r"await agent\.prompt"):
        agent.prompt_sync("hello")
    assert not agent.is_busy


async def test_r6_6_a_cancelled_prompt_leaves_the_agent_idle_and_usable() -> None:
    fm = FauxModel([faux_message(faux_tool_call("block", {})), "after"])
    agent = faux_agent(fm, tools=[make_tool("block", wait_until_aborted)])
    waiter = EventWaiter(agent)
    run = asyncio.create_task(agent.prompt("first"))
    await waiter.wait_for("tool_execution_start")
    run.cancel()
    with pytest.raises(asyncio.CancelledError):
        await run
    assert not agent.is_busy and agent.state.active_run is False
    assert waiter.types()[-1] == "agent_end"
    assert (await agent.prompt("second")).text == "after"


async def test_r6_1_on_event_and_prepare_context_on_the_stream_path() -> None:
    fm = FauxModel(["ok"])
    seen: list[str] = []

    def prepare_context(state: Any) -> Any:
        from yiemagent import AgentContext

        return AgentContext(state.system_prompt + " (prepared)", state.messages, [])

    agent = faux_agent(
        fm,
        system_prompt="base",
        on_event=lambda event: seen.append(event.type),
        prepare_context=prepare_context,
        tools=[make_tool("t", lambda *a: "ok")],
    )
    await agent.prompt("go")
    assert fm.contexts[0].system_prompt == "base (prepared)"
    assert fm.contexts[0].tools == []
    assert seen[0] == "agent_start" and seen[-1] == "agent_end"


async def test_r6_6_a_model_that_cannot_load_raises_and_leaves_the_agent_idle(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import yiemagent.ai.models as models
    from yiemagent import ProviderError

    def missing(name: str, **kwargs: Any) -> Any:
        raise ProviderError("the local extra is not installed: pip install 'yiemagent[local]'")

    monkeypatch.setattr(models, "get_model", missing)
    agent = Agent()
    with pytest.raises(ProviderError, match="local extra"):
        await agent.prompt("hi")
    assert not agent.is_busy and agent.state.active_run is False
    agent.send("queued")
    failed = await agent.take_response()  # a sent prompt answers with the error instead
    assert failed.stop_reason == "error" and "local extra" in (failed.error_message or "")
