"""Bench: the embedded model's generation time by llama.cpp thread count, alone and beside
processes that keep cores busy (why the default thread count leaves one core free).

For each setting a fresh process loads the 0.5B with `YIEMAGENT_LOCAL_THREADS=N` and times
`--runs` generations of 96 tokens, each after a new system prompt of ~330 tokens (so each
includes reading a prompt, as a new conversation's first turn does). With `--busy K`, K
processes spinning on a core each run beside it. Prints the median seconds per setting.

    .venv/bin/python bench/local_threads.py [--threads 1,2] [--busy 0,1] [--runs 5]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time

SPIN = "while True: pass"


def _child(runs: int) -> None:
    """Load the model and print one generation time per line (seconds)."""
    from yiemagent.ai.providers.local import load_runtime, local_spec

    runtime = load_runtime(local_spec("local/qwen2.5-coder-0.5b"))
    for index in range(runs + 1):
        system = "You are a helpful assistant. " * 55 + f"Conversation {index}."
        request = {
            "messages": [
                {"role": "system", "content": system},
                {"role": "user", "content": "Count from 1 to 40, separated by commas."},
            ],
            "max_tokens": 96,
            "temperature": 0,
            "stream": True,
        }
        started = time.perf_counter()
        runtime.chat(request, lambda chunk: False)
        if index:  # the first is a warm-up
            print(f"{time.perf_counter() - started:.3f}", flush=True)


def _measure(threads: int, busy: int, runs: int) -> list[float]:
    spinners = [subprocess.Popen([sys.executable, "-c", SPIN]) for _ in range(busy)]
    try:
        env = {**os.environ, "YIEMAGENT_LOCAL_THREADS": str(threads)}
        out = subprocess.run(
            [sys.executable, __file__, "--child", str(runs)],
            env=env,
            capture_output=True,
            text=True,
            check=True,
        ).stdout
    finally:
        for spinner in spinners:
            spinner.kill()
            spinner.wait()
    return [float(line) for line in out.split()]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", default="1,2", help="comma-separated thread counts")
    parser.add_argument("--busy", default="0,1", help="comma-separated busy-process counts")
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--child", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child is not None:
        _child(args.child)
        return
    print(f"{os.cpu_count()} CPUs; load average {os.getloadavg()[0]:.2f} at start")
    print("| threads | busy processes | median s | all s |")
    print("|---|---|---|---|")
    for busy in (int(b) for b in args.busy.split(",")):
        for threads in (int(t) for t in args.threads.split(",")):
            times = _measure(threads, busy, args.runs)
            cells = ", ".join(f"{t:.2f}" for t in times)
            print(f"| {threads} | {busy} | {statistics.median(times):.2f} | {cells} |", flush=True)


if __name__ == "__main__":
    main()
