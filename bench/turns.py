"""Per-turn overhead of the agent loop at 10 and at 10 000 messages of history (DESIGN §9).

Budget: the median turn at 10 000 messages takes at most 1.2 × the median turn at 10.

A turn here is one model call on the faux provider (a short text answer, no tools) opened by
a follow-up message, so what is timed is the loop's own work: polling the queues, converting
the transcript, building the provider context, streaming the events, appending. Both history
sizes are measured in one process, interleaved, and each size runs many turns; the median
of the intervals between consecutive `turn_end` events is reported. The first turn of each
run is left out of that figure (it pays the one-off conversion of the whole history a run
starts with) and reported separately as the per-run cost.

`FauxModel` records every context it receives (`fm.contexts`, for tests); a real provider
keeps nothing. The bench clears that record after each call, since a kept context makes
the loop copy its converted transcript on the next turn (copy-on-write, see
`loop/_agent_loop.py`), which is the faux's test instrumentation, not the loop's cost.

The same through the `Agent` (issue 12 item 6): one `Agent(messages=history)` answering
`turns` prompts, each `await agent.prompt(...)` timed; the median over the prompts after the
first (which pays the one-off conversion of the history) is reported, with the same budget.

Run: `.venv/bin/python bench/turns.py [--turns 200] [--rounds 5]`. Prints one line per
size and path, the ratios, and exits non-zero when a ratio is over budget.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import time
from collections import deque
from itertools import pairwise
from typing import Any

from yiemagent import (
    Agent,
    AgentContext,
    AgentEvent,
    AgentLoopConfig,
    AgentMessage,
    Context,
    Model,
    StreamOptions,
    ToolResultMessage,
    UserMessage,
    run_agent_loop,
)
from yiemagent.ai.providers.faux import FauxModel, faux_message, faux_text, faux_tool_call

BUDGET = 1.2
SIZES = (10, 10_000)


def history_of(size: int) -> list[AgentMessage]:
    """A realistic transcript of `size` messages: user, tool call, tool result, answer."""
    messages: list[AgentMessage] = []
    n = 0
    while len(messages) < size:
        call = faux_tool_call("lookup", {"query": f"q{n}"}, id=f"call_{n}")
        messages += [
            UserMessage(f"question {n}"),
            faux_message(call),
            ToolResultMessage(call.id, "lookup", [faux_text(f"result {n}")]),
            faux_message(f"answer {n}"),
        ]
        n += 1
    return messages[:size]


async def one_run(history: list[AgentMessage], turns: int) -> tuple[list[float], float]:
    """Run `turns` turns on a copy of `history`; returns the steady intervals (s) between
    turn ends and the first turn's duration (s)."""
    fm = FauxModel([f"reply {i}" for i in range(turns)])

    def stream_fn(model: Model, context: Context, options: StreamOptions | None) -> Any:
        response = fm.stream_fn(model, context, options)
        fm.contexts.clear()  # see the module docstring
        return response

    follow_ups: deque[AgentMessage] = deque(UserMessage(f"more {i}") for i in range(turns - 1))
    ends: list[float] = []
    clock = time.perf_counter

    def sink(event: AgentEvent) -> None:
        if event.type == "turn_end":
            ends.append(clock())

    config = AgentLoopConfig(
        model=fm.model,
        get_follow_up_messages=lambda: [follow_ups.popleft()] if follow_ups else [],
    )
    context = AgentContext("You are terse.", list(history), [])
    started = clock()
    await run_agent_loop([UserMessage("go")], context, config, sink, stream_fn=stream_fn)
    assert len(ends) == turns, "every turn must have ended"
    return [b - a for a, b in pairwise(ends)], ends[0] - started


async def agent_run(history: list[AgentMessage], turns: int) -> tuple[list[float], float]:
    """`turns` prompts to one Agent holding `history`; returns the durations (s) of the
    prompts after the first, and the first one's."""
    fm = FauxModel([f"reply {i}" for i in range(turns)])

    def stream_fn(model: Model, context: Context, options: StreamOptions | None) -> Any:
        response = fm.stream_fn(model, context, options)
        fm.contexts.clear()  # see the module docstring
        return response

    agent = Agent(model=fm.model, stream_fn=stream_fn, messages=history)
    clock = time.perf_counter
    durations: list[float] = []
    for i in range(turns):
        started = clock()
        await agent.prompt(f"more {i}")
        durations.append(clock() - started)
    return durations[1:], durations[0]


async def measure(turns: int, rounds: int) -> dict[int, tuple[float, float]]:
    histories = {size: history_of(size) for size in SIZES}
    keys = [*SIZES, *(-size for size in SIZES)]  # negative: through the Agent
    steady: dict[int, list[float]] = {key: [] for key in keys}
    first: dict[int, list[float]] = {key: [] for key in keys}
    await one_run(histories[SIZES[0]], 20)  # warm-up: imports, caches
    await agent_run(histories[SIZES[0]], 20)
    for _ in range(rounds):
        for size in SIZES:
            intervals, first_turn = await one_run(histories[size], turns)
            steady[size] += intervals
            first[size].append(first_turn)
            intervals, first_turn = await agent_run(histories[size], turns)
            steady[-size] += intervals
            first[-size].append(first_turn)
    return {
        size: (statistics.median(steady[size]), statistics.median(first[size])) for size in steady
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=200, help="turns per run")
    parser.add_argument("--rounds", type=int, default=5, help="runs per history size")
    args = parser.parse_args()
    results = asyncio.run(measure(args.turns, args.rounds))
    worst = 0.0
    for sign, path, what in ((1, "run_agent_loop", "turn"), (-1, "Agent.prompt", "prompt")):
        for size in SIZES:
            turn, first_turn = results[sign * size]
            print(
                f"{path:14} history {size:>6} messages: median {what} {turn * 1e6:8.1f} µs"
                f"   (first of a run {first_turn * 1e6:8.1f} µs)"
            )
        ratio = results[sign * SIZES[1]][0] / results[sign * SIZES[0]][0]
        worst = max(worst, ratio)
        verdict = "ok" if ratio <= BUDGET else "OVER BUDGET"
        print(f"{path:14} ratio 10000/10: {ratio:.3f}  (budget <= {BUDGET})  {verdict}")
    return 0 if worst <= BUDGET else 1


if __name__ == "__main__":
    sys.exit(main())
