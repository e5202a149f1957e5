"""Bench: several sessions at once on the embedded model (DESIGN §18, llama.cpp's parallel
slots with continuous batching).

Loads the model once, then runs one session alone and then N sessions at once (default 4),
each a different question answered in up to `--max-tokens` tokens. Prints, per session, the
time to its first token and its tokens; per round, the tokens per second summed over the
sessions (all output tokens / the round's wall time) and the load average of the machine
(the figures mean little without it). `--slots K` sets `$YIEMAGENT_LOCAL_SLOTS` for the
load (1: the sessions queue one after the other, as before the slots).

    .venv/bin/python bench/local_concurrency.py [--sessions 4] [--max-tokens 64] [--slots K]
        [--model local/qwen2.5-coder-0.5b]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from yiemagent.ai import Model

QUESTIONS = [
    "Describe how a steam engine works, step by step.",
    "Write a short story about a lighthouse keeper.",
    "Explain what a hash table is and when to use one.",
    "List ten facts about the planet Jupiter.",
    "Write a poem about a red fox in the snow.",
    "Explain how bread rises, in detail.",
    "Describe the water cycle for a child.",
    "Explain the rules of chess briefly.",
]


@dataclass
class Session:
    """What one session's reply measured."""

    first_token_s: float | None
    """Seconds from the round's start to its first text delta."""
    end_s: float
    """Seconds from the round's start to the end of its reply."""
    tokens: int
    """Output tokens the model reported."""
    stop_reason: str


async def one(model: Model, question: str, max_tokens: int, start: float) -> Session:
    from yiemagent import UserMessage
    from yiemagent.ai import Context, StreamOptions, stream

    context = Context("Be helpful.", [UserMessage(question)])
    s = stream(model, context, StreamOptions(max_tokens=max_tokens))
    first = None
    async for event in s:
        if event.type == "text_delta" and first is None:
            first = time.monotonic() - start
    reply = await s.result()
    return Session(first, time.monotonic() - start, reply.usage.output, reply.stop_reason)


async def round_of(model: Model, sessions: int, max_tokens: int) -> tuple[list[Session], float]:
    start = time.monotonic()
    questions = [QUESTIONS[i % len(QUESTIONS)] for i in range(sessions)]
    results = await asyncio.gather(*(one(model, q, max_tokens, start) for q in questions))
    return list(results), time.monotonic() - start


def report(name: str, results: list[Session], wall_s: float) -> None:
    load = os.getloadavg()[0]
    tokens = sum(r.tokens for r in results)
    print(f"\n{name}: {len(results)} session(s), wall {wall_s:.1f} s, load average {load:.1f}")
    for i, r in enumerate(results, 1):
        first = "-" if r.first_token_s is None else f"{r.first_token_s:.1f} s"
        rate = r.tokens / r.end_s if r.end_s else 0.0
        print(
            f"  session {i}: first token {first}, {r.tokens} tokens in {r.end_s:.1f} s "
            f"({rate:.2f} tok/s), {r.stop_reason}"
        )
    firsts = [r.first_token_s for r in results if r.first_token_s is not None]
    median_first = f"{statistics.median(firsts):.1f} s" if firsts else "-"
    print(
        f"  summed: {tokens} tokens / {wall_s:.1f} s = {tokens / wall_s:.2f} tok/s; "
        f"median first token {median_first}"
    )


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sessions", type=int, default=4)
    parser.add_argument("--max-tokens", type=int, default=64)
    parser.add_argument("--slots", type=int, default=None)
    parser.add_argument("--model", default="local/qwen2.5-coder-0.5b")
    args = parser.parse_args()
    if args.slots is not None:
        os.environ["YIEMAGENT_LOCAL_SLOTS"] = str(args.slots)

    from yiemagent.ai import get_model
    from yiemagent.ai.providers.local import load_runtime, local_spec

    model = get_model(args.model)
    runtime = await asyncio.to_thread(load_runtime, local_spec(model.id))
    print(
        f"{model.id}: loaded in {runtime.load_s:.1f} s, {runtime.slots} slot(s) of "
        f"{runtime.n_ctx} tokens; {os.cpu_count()} CPUs"
    )
    await round_of(model, 1, 8)  # warm-up: the first request pays one-off costs
    report("alone", *await round_of(model, 1, args.max_tokens))
    report("at once", *await round_of(model, args.sessions, args.max_tokens))


if __name__ == "__main__":
    asyncio.run(main())
