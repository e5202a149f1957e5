"""Bench: what yiemagent adds to the embedded model's own generation time (DESIGN §9: ≤ 5 %).

For each scenario the exact request the provider sends is recorded once, then timed
alternately (a) straight into the runtime (`handle_chat_completions` streaming to a no-op
callback) and (b) through the framework (`agent_loop` → `stream_local` → events). Greedy
decoding makes both produce the same tokens; the prompt is cached after the warm-up, so both
paths do the same work. Prints the medians and the overhead ratio.

    .venv/bin/python bench/local_model.py [--runs 7]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import time
from typing import Any

from yiemagent import AgentContext, AgentLoopConfig, UserMessage, agent_loop
from yiemagent.ai import get_model
from yiemagent.ai.providers.local import load_runtime, local_spec
from yiemagent.cli.options import example_tools

MODEL = get_model("local/qwen2.5-coder-0.5b")

SCENARIOS: dict[str, tuple[str, list[str]]] = {
    "text answer (no tools, 96 tokens)": ("Count from 1 to 40, separated by commas.", []),
    "tool call (calculator schema)": ("What is 17 * 23?", ["calculator"]),
}


async def _framework_once(prompt: str, tools: list[Any]) -> float:
    context = AgentContext("You are a helpful assistant.", [], tools)
    # max_turns=1: one model call, no tool execution, so both paths generate exactly once.
    config = AgentLoopConfig(model=MODEL, max_turns=1, max_tokens=96)
    started = time.perf_counter()
    events = agent_loop([UserMessage(prompt)], context, config)
    async for _ in events:
        pass
    await events.result()
    return time.perf_counter() - started


def _direct_once(server: Any, request: dict[str, Any]) -> float:
    started = time.perf_counter()
    server.handle_chat_completions(request, lambda chunk: False)
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=7)
    args = parser.parse_args()

    t0 = time.perf_counter()
    runtime = load_runtime(local_spec(MODEL.id))
    print(f"model load: {time.perf_counter() - t0:.2f} s (llama.cpp {runtime.load_s:.2f} s)")

    server = runtime.server
    recorded: list[dict[str, Any]] = []

    class Recorder:
        """Stands in for the server on the framework path: records each request."""

        def handle_chat_completions(self, request: dict[str, Any], *callback: Any) -> Any:
            recorded.append(dict(request))
            return server.handle_chat_completions(request, *callback)

    runtime.server = Recorder()
    total_direct: list[float] = []
    total_framework: list[float] = []
    for name, (prompt, tool_names) in SCENARIOS.items():
        tools = example_tools(*tool_names)
        recorded.clear()
        asyncio.run(_framework_once(prompt, tools))  # warm-up; records the request
        request = recorded[-1]
        _direct_once(server, request)  # warm-up of the direct path
        direct: list[float] = []
        framework: list[float] = []
        for _ in range(args.runs):
            direct.append(_direct_once(server, request))
            framework.append(asyncio.run(_framework_once(prompt, tools)))
        d, f = statistics.median(direct), statistics.median(framework)
        total_direct.append(d)
        total_framework.append(f)
        print(
            f"{name}: runtime {d * 1000:.0f} ms, framework {f * 1000:.0f} ms, "
            f"added {(f - d) * 1000:+.1f} ms ({(f / d - 1) * 100:+.2f} %)"
        )
    d, f = sum(total_direct), sum(total_framework)
    ratio = f / d - 1
    verdict = "OK" if ratio <= 0.05 else "OVER BUDGET"
    print(f"overall: framework adds {ratio * 100:+.2f} % to generation time (budget 5 %):", verdict)


if __name__ == "__main__":
    main()
