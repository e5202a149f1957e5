"""Per-run overhead of `output_type` on the faux model, in µs (DESIGN §14; issue 11's note).

Each figure is the median wall time of one `Agent.prompt` on a `FauxModel` (no delay, one
chunk per message so streaming costs little), over many runs, after a warm-up:
- `text`: no output type, the model answers `{"name": "Ann", "age": 31}` as text;
- `native`: `output_type=OutputSpec(Person, mode="native")` given to the `Agent`, same text
  answer, validated into a `Person`;
- `tool`: `Agent(output_type=Person)`, the model calls `final_result` with the same object
  (one tool call through the pipeline, its result message, then the run ends);
- `tool, per prompt`: the same, with `prompt(..., output_type=Person)` on every run;
- `plain tool call`: for scale, no output type, the model calls an ordinary no-op tool with
  the same arguments and then answers (what a tool round costs without output types).
The overheads printed are differences of medians against `text`.

Usage: `.venv/bin/python bench/output_type.py [--runs 2000]`
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import statistics
import time
from typing import Any

from pydantic import BaseModel

from yiemagent import Agent, AgentTool
from yiemagent.ai.providers.faux import FauxModel, faux_message, faux_tool_call
from yiemagent.types import OutputSpec

ANSWER = {"name": "Ann", "age": 31}


class Person(BaseModel):
    name: str
    age: int


async def noop(_id: str, args: Any, *_: Any) -> str:
    return "ok"


async def measure(kind: str, runs: int) -> float:
    text = json.dumps(ANSWER)
    per_prompt: Any = None
    agent_output: Any = None
    tools: list[AgentTool] = []
    if kind == "text":
        responses: list[Any] = [text] * runs
    elif kind == "native":
        responses = [text] * runs
        agent_output = OutputSpec(Person, mode="native")
    elif kind in ("tool", "tool, per prompt"):
        responses = [faux_message(faux_tool_call("final_result", ANSWER))] * runs
        if kind == "tool":
            agent_output = Person
        else:
            per_prompt = Person
    else:
        responses = [faux_message(faux_tool_call("noop", ANSWER)), "done"] * runs
        schema = {"type": "object", "properties": {"name": {}, "age": {}}}
        tools = [AgentTool("noop", "noop", "noop", schema, noop, parallel=True)]
    fm = FauxModel(responses, chunk_size=10_000)
    agent: Agent[Any] = Agent(
        model=fm.model, stream_fn=fm.stream_fn, tools=tools, output_type=agent_output
    )
    times: list[float] = []
    gc.collect()
    for _ in range(runs):
        start = time.perf_counter()
        if per_prompt is not None:
            reply = await agent.prompt("who?", output_type=per_prompt)
        else:
            reply = await agent.prompt("who?")
        times.append(time.perf_counter() - start)
        agent.state.messages = []  # flat history: the per-run cost only
        if kind not in ("text", "plain tool call"):
            assert reply.output == Person(**ANSWER), reply  # type: ignore[attr-defined]
    warm = times[len(times) // 10 :]
    return statistics.median(warm) * 1e6


async def main(runs: int) -> None:
    kinds = ["text", "native", "tool", "tool, per prompt", "plain tool call"]
    medians = {kind: await measure(kind, runs) for kind in kinds}
    base = medians["text"]
    print(f"median µs per Agent.prompt on the faux model ({runs} runs each)")
    for kind in kinds:
        extra = "" if kind == "text" else f"   overhead vs text: {medians[kind] - base:+.0f} µs"
        print(f"  {kind:<17} {medians[kind]:8.0f} µs{extra}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=2000)
    asyncio.run(main(parser.parse_args().runs))
