"""Seconds to stream one long reply, 100 KB to 4 MB, in small deltas (DESIGN §7).

A provider hands the message builder a reply a few characters at a time; each kind of block
(text, thinking, a tool call's argument text) is streamed on its own through the faux
provider to a consumer that reads every event, and the CPU and wall seconds are printed per
size. Linear accumulation shows as seconds proportional to the size (the `per MB` column
stays flat); a block grown by copying its whole text on every delta shows as seconds that
quadruple when the size doubles. A kind whose run took longer than `--limit` seconds is not
run at the larger sizes (its next one would take at least four times as long if quadratic).

Run: `.venv/bin/python bench/stream_text.py [--delta 4] [--limit 30] [--kinds text,...]`.
"""

from __future__ import annotations

import argparse
import asyncio
import time

from yiemagent import AssistantMessage
from yiemagent.ai import Context
from yiemagent.ai.providers.faux import FauxModel, faux_message, faux_thinking, faux_tool_call

SIZES_KB = (100, 250, 500, 1000, 2000, 4000)
LINE = "a line of a long generated answer, with some words in it\n"


def reply(kind: str, size: int) -> AssistantMessage:
    """A reply whose one block of `kind` holds about `size` characters."""
    body = LINE * max(1, size // len(LINE))
    if kind == "text":
        return faux_message(body)
    if kind == "thinking":
        return faux_message(faux_thinking(body), "ok")
    return faux_message(faux_tool_call("write", {"path": "out.txt", "content": body}, id="c1"))


async def stream_once(kind: str, size: int, delta: int) -> tuple[float, float, int]:
    """Stream `reply(kind, size)` in `delta`-character deltas: (CPU s, wall s, events)."""
    fm = FauxModel([reply(kind, size)], chunk_size=delta)
    cpu, wall = time.process_time(), time.perf_counter()
    events = fm.stream_fn(fm.model, Context(), None)
    count = 0
    async for _ in events:
        count += 1
    await events.result()
    return time.process_time() - cpu, time.perf_counter() - wall, count


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--delta", type=int, default=4, help="characters per delta")
    parser.add_argument("--limit", type=float, default=30.0, help="seconds before a kind stops")
    parser.add_argument("--kinds", default="text,thinking,arguments")
    args = parser.parse_args()
    await stream_once("text", 10_000, args.delta)  # imports and first-call costs
    print(f"{'kind':<10} {'size':>8} {'events':>9} {'cpu s':>8} {'wall s':>8} {'cpu s/MB':>9}")
    for kind in args.kinds.split(","):
        for kb in SIZES_KB:
            cpu, wall, count = await stream_once(kind, kb * 1000, args.delta)
            print(
                f"{kind:<10} {kb:>6}KB {count:>9} {cpu:>8.2f} {wall:>8.2f} {cpu * 1000 / kb:>9.2f}"
            )
            if wall > args.limit:
                print(f"{kind:<10} larger sizes left out: {wall:.1f} s > --limit {args.limit} s")
                break


if __name__ == "__main__":
    asyncio.run(main())
