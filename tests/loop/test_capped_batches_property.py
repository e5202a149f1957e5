"""openai-agents' function-tool concurrency cap (tests/test_run_step_execution.py:
test_function_tool_concurrency_cap_limits_calls_and_preserves_output_order,
..._leaves_queued_calls_unstarted_after_failure) as a property of a parallel batch under
`max_parallel_tools` (R-4.1, R-4.9): for random batches of calls that succeed, raise or abort
the run, after random delays, under a random cap, no more than the cap run at once, every
call gets exactly one result, in source order, and a call still queued when the run is
aborted never starts. A call that raises does not stop the queued ones (openai-agents
leaves them unstarted; here each call runs to its own result, docs/tools.md)."""

from __future__ import annotations

import asyncio
from typing import Any

from hypothesis import given, settings, strategies as st

from tests.loop._kit import call, make_tool, run_batch, texts
from yiemagent import AbortSignal

CALL = st.tuples(st.sampled_from(["ok", "raise", "abort"]), st.integers(0, 3))


@settings(max_examples=40, deadline=None)
@given(plan=st.lists(CALL, min_size=1, max_size=8), cap=st.integers(1, 4))
def test_a_capped_batch_answers_each_call_once_in_order(
    plan: list[tuple[str, int]], cap: int
) -> None:
    asyncio.run(_check(plan, cap))


async def _check(plan: list[tuple[str, int]], cap: int) -> None:
    signal = AbortSignal()
    running = 0
    peak = 0
    started: list[int] = []

    def tool(index: int, behaviour: str, ticks: int) -> Any:
        async def execute(call_id: str, args: Any, s: AbortSignal, on_update: Any) -> str:
            nonlocal running, peak
            running += 1
            peak = max(peak, running)
            started.append(index)
            try:
                for _ in range(ticks):
                    await asyncio.sleep(0)
                if behaviour == "raise":
                    raise RuntimeError(f"call {index} failed")
                if behaviour == "abort":
                    signal.abort("stop")
                return f"ok {index}"
            finally:
                running -= 1

        return make_tool(f"t{index}", execute)

    tools = [tool(i, behaviour, ticks) for i, (behaviour, ticks) in enumerate(plan)]
    calls = [call(f"t{i}", id=f"c{i}") for i in range(len(plan))]

    batch, rec, _ = await run_batch(tools, *calls, signal=signal, max_parallel_tools=cap)

    assert peak <= cap
    assert [m.tool_call_id for m in batch.messages] == [c.id for c in calls]
    assert sorted(e.tool_call_id for e in rec.of("tool_execution_end")) == sorted(
        c.id for c in calls
    )
    first_abort = next((i for i, (b, _) in enumerate(plan) if b == "abort"), None)
    for i, (text, message) in enumerate(zip(texts(batch), batch.messages, strict=True)):
        behaviour = plan[i][0]
        if i in started:
            if behaviour == "raise":
                assert message.is_error and text == f"call {i} failed"
            elif behaviour == "ok" and not message.is_error:
                assert text == f"ok {i}"
        else:  # never started: only a call queued behind an abort is skipped
            assert first_abort is not None and message.is_error
            assert "skipped" in text or "aborted" in text.lower()
    if first_abort is None:
        assert sorted(started) == list(range(len(plan)))  # a failure stops no queued call
