"""DESIGN R-4.8 (sequential batch), R-4.9 (parallel batch) and the choice between them;
seed 000 §9, seed 004. Timing is the point here, so real sleeps are used."""

from __future__ import annotations

import asyncio
import threading
import time
from typing import Any

import pytest

from tests.loop._kit import call, make_tool, run_batch, sleeper, texts
from yiemagent import (
    AbortSignal,
    AgentContext,
    AgentLoopConfig,
    BeforeToolCallContext,
    BeforeToolCallResult,
    execute_tool_calls_parallel,
    execute_tool_calls_sequential,
)

from ._kit import MODEL, Recorder, message

SKIPPED_TEXT = "Tool call skipped: the run was aborted"


class Concurrency:
    """Counts how many tool bodies run at once (async or on threads)."""

    def __init__(self) -> None:
        self.now = 0
        self.peak = 0
        self.lock = threading.Lock()

    def enter(self) -> None:
        with self.lock:
            self.now += 1
            self.peak = max(self.peak, self.now)

    def exit(self) -> None:
        with self.lock:
            self.now -= 1

    def tool(self, name: str, seconds: float, *, plain: bool = False, parallel: bool = True) -> Any:
        if plain:

            def execute_plain(tool_call_id: str, args: Any, signal: Any, on_update: Any) -> str:
                self.enter()
                time.sleep(seconds)
                self.exit()
                return name

            return make_tool(name, execute_plain, parallel=parallel)

        async def execute(tool_call_id: str, args: Any, signal: Any, on_update: Any) -> str:
            self.enter()
            await asyncio.sleep(seconds)
            self.exit()
            return name

        return make_tool(name, execute, parallel=parallel)


def ids_of(rec: Recorder, kind: str) -> list[str]:
    return [getattr(e, "tool_call_id", None) or e.message.tool_call_id for e in rec.of(kind)]


# ── sequential ─────────────────────────────────────────────────────────


async def test_r4_8_sequential_runs_each_call_to_its_result_message_in_order() -> None:
    c = Concurrency()
    tools = [c.tool("a", 0.03), c.tool("b", 0.01, plain=True), c.tool("c", 0.02)]
    batch, rec, _ = await run_batch(
        tools, call("a"), call("b"), call("c"), tool_execution="sequential"
    )
    assert c.peak == 1
    assert texts(batch) == ["a", "b", "c"]
    per_call = ["tool_execution_start", "tool_execution_end", "message_start", "message_end"]
    assert rec.kinds() == per_call * 3
    assert [getattr(e, "tool_call_id", None) or e.message.tool_call_id for e in rec.events] == [
        i for i in ("id_a", "id_b", "id_c") for _ in range(4)
    ]
    assert [m.tool_call_id for m in batch.messages] == ["id_a", "id_b", "id_c"]


async def test_r4_8_abort_after_a_call_skips_the_rest_with_events() -> None:
    signal = AbortSignal()

    async def aborts(tool_call_id: str, args: Any, s: Any, on_update: Any) -> str:
        signal.abort("stop")
        return "first done"

    ran: list[str] = []

    async def later(tool_call_id: str, args: Any, s: Any, on_update: Any) -> str:
        ran.append(tool_call_id)
        return "later"

    batch, rec, _ = await run_batch(
        [make_tool("first", aborts, parallel=False), make_tool("later", later)],
        call("first"),
        call("later", id="l1"),
        call("later", id="l2"),
        signal=signal,
    )
    assert ran == []
    assert texts(batch) == ["first done", SKIPPED_TEXT, SKIPPED_TEXT]
    assert [m.is_error for m in batch.messages] == [False, True, True]
    assert ids_of(rec, "tool_execution_start") == ["id_first", "l1", "l2"]
    assert ids_of(rec, "tool_execution_end") == ["id_first", "l1", "l2"]
    assert ids_of(rec, "message_end") == ["id_first", "l1", "l2"]


async def test_r4_8_mode_choice_config_sequential_or_any_non_parallel_tool() -> None:
    c = Concurrency()
    par = [c.tool("a", 0.03), c.tool("b", 0.03)]
    await run_batch(par, call("a"), call("b"), tool_execution="sequential")
    assert c.peak == 1
    c = Concurrency()
    mixed = [c.tool("a", 0.03), c.tool("b", 0.03), c.tool("s", 0.01, parallel=False)]
    await run_batch(mixed, call("a"), call("b"), call("s"))
    assert c.peak == 1  # one sequential tool makes the whole batch sequential
    c = Concurrency()
    await run_batch([c.tool("a", 0.03), c.tool("b", 0.03)], call("a"), call("b"), call("unknown"))
    assert c.peak == 2  # an unknown tool does not force sequential


# ── parallel ───────────────────────────────────────────────────────────


GATE_S = 10.0
"""How long a gated tool waits for the others (a bound, never reached when the batch is right)."""


def meeting(names: list[str], *, plain: bool) -> list[Any]:
    """Tools that each answer "{name} done" only once all of them have started, so they can
    all answer so only by running at once; each gives up after `GATE_S` and answers
    "{name} ran alone". No timing: a loaded machine only makes them meet later."""
    if plain:
        barrier = threading.Barrier(len(names))

        def plain_tool(name: str) -> Any:
            def execute_plain(tool_call_id: str, args: Any, signal: Any, on_update: Any) -> str:
                try:
                    barrier.wait(timeout=GATE_S)
                except threading.BrokenBarrierError:
                    return f"{name} ran alone"
                return f"{name} done"

            return make_tool(name, execute_plain)

        return [plain_tool(name) for name in names]
    arrived: list[str] = []
    everyone = asyncio.Event()

    def async_tool(name: str) -> Any:
        async def execute(tool_call_id: str, args: Any, signal: Any, on_update: Any) -> str:
            arrived.append(name)
            if len(arrived) == len(names):
                everyone.set()
            try:
                await asyncio.wait_for(everyone.wait(), GATE_S)
            except TimeoutError:
                return f"{name} ran alone"
            return f"{name} done"

        return make_tool(name, execute)

    return [async_tool(name) for name in names]


@pytest.mark.parametrize("plain", [False, True])
async def test_r4_9_parallel_tools_overlap(plain: bool) -> None:
    names = [f"t{i}" for i in range(4)]
    batch, _, _ = await run_batch(meeting(names, plain=plain), *(call(n) for n in names))
    assert texts(batch) == [f"{n} done" for n in names]


def gated(name: str, gate: threading.Event, *, plain: bool = False) -> Any:
    """A tool that answers "{name} done" once `gate` is set ("{name} gate timeout" after
    `GATE_S`): the test decides when each call completes."""
    if plain:

        def execute_plain(tool_call_id: str, args: Any, signal: Any, on_update: Any) -> str:
            return f"{name} done" if gate.wait(GATE_S) else f"{name} gate timeout"

        return make_tool(name, execute_plain)

    async def execute(tool_call_id: str, args: Any, signal: Any, on_update: Any) -> str:
        deadline = time.monotonic() + GATE_S
        while not gate.is_set():
            if time.monotonic() > deadline:
                return f"{name} gate timeout"
            await asyncio.sleep(0.005)
        return f"{name} done"

    return make_tool(name, execute)


class Releasing(Recorder):
    """Records events; a call's end event opens the gate of the call meant to finish next."""

    def __init__(self, next_gate: dict[str, threading.Event]) -> None:
        super().__init__()
        self.next_gate = next_gate

    async def __call__(self, event: Any) -> None:
        await super().__call__(event)
        if event.type == "tool_execution_end" and event.tool_call_id in self.next_gate:
            self.next_gate[event.tool_call_id].set()


async def test_r4_9_end_events_in_completion_order_results_in_source_order() -> None:
    # The calls complete fast, then mid (a plain tool, on its thread), then slow: each gate
    # opens on the end event of the call before, so a batch that held the end events back
    # (source order) would leave slow waiting for its gate until GATE_S and fail below.
    fast, mid, slow = threading.Event(), threading.Event(), threading.Event()
    fast.set()
    tools = [gated("slow", slow), gated("fast", fast), gated("mid", mid, plain=True)]
    rec = Releasing({"id_fast": mid, "id_mid": slow})
    batch, _, _ = await run_batch(tools, call("slow"), call("fast"), call("mid"), recorder=rec)
    assert texts(batch) == ["slow done", "fast done", "mid done"]
    assert ids_of(rec, "tool_execution_start") == ["id_slow", "id_fast", "id_mid"]
    assert ids_of(rec, "tool_execution_end") == ["id_fast", "id_mid", "id_slow"]
    assert [m.tool_call_id for m in batch.messages] == ["id_slow", "id_fast", "id_mid"]
    kinds = rec.kinds()
    last_end = max(i for i, k in enumerate(kinds) if k == "tool_execution_end")
    first_message = kinds.index("message_start")
    assert first_message > last_end  # result messages only once all are done
    assert ids_of(rec, "message_start") == ["id_slow", "id_fast", "id_mid"]
    assert rec.kinds()[first_message:] == ["message_start", "message_end"] * 3


async def test_r4_9_preparation_in_source_order_and_immediate_outcomes_end_at_once() -> None:
    order: list[str] = []

    def before(ctx: BeforeToolCallContext, signal: AbortSignal) -> BeforeToolCallResult | None:
        order.append(ctx.tool_call.id)
        return BeforeToolCallResult(block=True) if ctx.tool_call.id == "blocked" else None

    tools = [sleeper("s", 0.05)]
    batch, rec, _ = await run_batch(
        tools,
        call("s", id="one"),
        call("s", id="blocked"),
        call("missing"),
        call("s", id="two"),
        before_tool_call=before,
    )
    assert order == ["one", "blocked", "two"]
    kinds_ids = [
        (e.type, e.tool_call_id) for e in rec.events if e.type.startswith("tool_execution")
    ]
    assert kinds_ids[:6] == [
        ("tool_execution_start", "one"),
        ("tool_execution_start", "blocked"),
        ("tool_execution_end", "blocked"),
        ("tool_execution_start", "id_missing"),
        ("tool_execution_end", "id_missing"),
        ("tool_execution_start", "two"),
    ]
    assert sorted(kinds_ids[6:]) == [("tool_execution_end", "one"), ("tool_execution_end", "two")]
    assert [m.tool_call_id for m in batch.messages] == ["one", "blocked", "id_missing", "two"]
    assert [m.is_error for m in batch.messages] == [False, True, True, False]


@pytest.mark.parametrize("plain", [False, True])
async def test_r4_9_max_parallel_tools_caps_concurrency(plain: bool) -> None:
    c = Concurrency()
    tools = [c.tool(f"t{i}", 0.25, plain=plain) for i in range(4)]
    start = time.perf_counter()
    batch, _, _ = await run_batch(tools, *(call(f"t{i}") for i in range(4)), max_parallel_tools=2)
    elapsed = time.perf_counter() - start
    assert c.peak == 2
    assert 0.45 < elapsed < 0.9  # two waves of 0.25 s, not four
    assert texts(batch) == ["t0", "t1", "t2", "t3"]


async def test_r4_9_a_call_waiting_for_a_parallel_slot_is_skipped_after_an_abort() -> None:
    """With `max_parallel_tools`, a call whose slot frees up after the run was aborted is
    skipped, never started: it would run its work (a sub-agent's whole run) for nothing."""
    signal = AbortSignal()
    ran: list[str] = []

    async def execute(tool_call_id: str, args: Any, s: AbortSignal, on_update: Any) -> str:
        ran.append(tool_call_id)
        if tool_call_id == "first":
            signal.abort("stop")
            await asyncio.sleep(0.05)  # ignores the abort, finishes within the grace
        return "ran"

    tools = [make_tool("t", execute)]
    batch, rec, _ = await run_batch(
        tools,
        call("t", id="first"),
        call("t", id="second"),
        call("t", id="third"),
        signal=signal,
        max_parallel_tools=1,
    )
    assert ran == ["first"]
    assert texts(batch) == ["ran", SKIPPED_TEXT, SKIPPED_TEXT]
    assert [m.is_error for m in batch.messages] == [False, True, True]
    assert [e.tool_call_id for e in rec.of("tool_execution_end")] == ["first", "second", "third"]


async def test_r4_9_abort_during_preparation_runs_nothing_and_skips_the_rest() -> None:
    signal = AbortSignal()
    ran: list[str] = []

    async def execute(tool_call_id: str, args: Any, s: Any, on_update: Any) -> str:
        ran.append(tool_call_id)
        return "ran"

    def before(ctx: BeforeToolCallContext, s: AbortSignal) -> None:
        if ctx.tool_call.id == "2":
            asyncio.get_running_loop().call_soon(signal.abort)

    async def slow_before(ctx: BeforeToolCallContext, s: AbortSignal) -> None:
        before(ctx, s)
        await asyncio.sleep(0)

    tools = [make_tool("t", execute)]
    batch, rec, _ = await run_batch(
        tools,
        call("t", id="1"),
        call("t", id="2"),
        call("t", id="3"),
        signal=signal,
        before_tool_call=slow_before,
    )
    assert ran == []
    assert texts(batch) == [SKIPPED_TEXT, "Operation aborted", SKIPPED_TEXT]
    assert ids_of(rec, "tool_execution_end") == ["2", "3", "1"]
    assert ids_of(rec, "message_end") == ["1", "2", "3"]


async def test_r4_9_abort_while_running_reaches_every_parallel_tool() -> None:
    signal = AbortSignal()

    async def cooperative(tool_call_id: str, args: Any, s: AbortSignal, on_update: Any) -> str:
        await s.wait()
        return f"{tool_call_id} stopped"

    def plain_cooperative(tool_call_id: str, args: Any, s: AbortSignal, on_update: Any) -> str:
        while not s.aborted:
            time.sleep(0.005)
        return f"{tool_call_id} stopped"

    asyncio.get_running_loop().call_later(0.05, signal.abort)
    batch, _, _ = await run_batch(
        [make_tool("a", cooperative), make_tool("p", plain_cooperative)],
        call("a", id="1"),
        call("p", id="2"),
        call("a", id="3"),
        signal=signal,
    )
    assert texts(batch) == ["1 stopped", "2 stopped", "3 stopped"]


async def test_r4_9_public_schedules_can_be_called_directly() -> None:
    c = Concurrency()
    tools = [c.tool("a", 0.05, parallel=False), c.tool("b", 0.05, parallel=False)]
    calls = [call("a"), call("b")]
    ctx = AgentContext(tools=tools)
    config = AgentLoopConfig(model=MODEL)
    batch = await execute_tool_calls_parallel(
        ctx, message(*calls), calls, config, AbortSignal(), Recorder()
    )
    assert c.peak == 2 and texts(batch) == ["a", "b"]  # the caller chose parallel
    c.peak = 0
    batch = await execute_tool_calls_sequential(
        ctx, message(*calls), calls, config, AbortSignal(), Recorder()
    )
    assert c.peak == 1 and texts(batch) == ["a", "b"]
