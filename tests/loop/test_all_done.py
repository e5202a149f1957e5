"""DESIGN R-4.9: `loop.tasks.all_done`, the wait of a parallel tool-call batch, behaves like
`asyncio.gather`: it returns once every task is done, raises what the first task to fail
raised (a cancelled task: `CancelledError`) without cancelling the others, and returns at
once for no tasks (it waited forever before)."""

from __future__ import annotations

import asyncio
import random

from hypothesis import given, settings, strategies as st

from yiemagent.loop._tool_calls import all_done

OUTCOMES = st.sampled_from(["ok", "raise", "cancel"])


async def _task(steps: int, outcome: str, finished: list[int], me: int) -> None:
    for _ in range(steps):
        await asyncio.sleep(0)
    finished.append(me)
    if outcome == "raise":
        raise ValueError(f"task {me}")
    if outcome == "cancel":
        raise asyncio.CancelledError


async def test_no_tasks_is_done_at_once() -> None:
    await asyncio.wait_for(all_done([]), 1)


@settings(max_examples=60, deadline=None)
@given(st.lists(OUTCOMES, min_size=1, max_size=8), st.randoms(use_true_random=False))
def test_all_done_waits_for_every_task_and_raises_the_first_failure(
    outcomes: list[str], rnd: random.Random
) -> None:
    steps = list(range(len(outcomes)))
    rnd.shuffle(steps)  # distinct finishing steps

    async def main() -> None:
        finished: list[int] = []
        tasks = [
            asyncio.create_task(_task(steps[i], outcome, finished, i))
            for i, outcome in enumerate(outcomes)
        ]
        failing = sorted((steps[i], i) for i, o in enumerate(outcomes) if o != "ok")
        try:
            await all_done(tasks)
        except asyncio.CancelledError:
            assert failing and outcomes[failing[0][1]] == "cancel"
        except ValueError as exc:
            assert failing and str(exc) == f"task {failing[0][1]}"
        else:
            assert not failing
            assert all(task.done() for task in tasks)
        # the others were not cancelled: each ends as it would have
        await asyncio.gather(*tasks, return_exceptions=True)
        assert sorted(finished) == list(range(len(outcomes)))
        for task, outcome in zip(tasks, outcomes, strict=True):
            assert task.cancelled() == (outcome == "cancel")

    asyncio.run(main())
