"""A tool call through one level of `Agent.as_tool` against a plain tool call (DESIGN §17:
target ≤ 3 ×), in µs per call, in one run.

Workload, as `bench/overhead.py`: an `Agent` whose model is a `stream_fn` handing back
pre-built messages (one `done` event each), 20 turns of N parallel calls then a text answer;
µs per call = (time at N = 50 − time at N = 1) / (20 × 49), the median over `--runs`
runs. Three tools are called:

- `plain`: an async no-op tool;
- `as_tool`: an agent as a tool whose sub-run answers at once (one model call): what the
  sub-agent machinery costs (a fresh Agent, a run, its events relayed as
  `NestedAgentEvent`s to a listener, its usage summed);
- `as_tool+call`: an agent as a tool whose sub-run calls the async no-op tool, then
  answers (two model calls and one tool call inside);
- `nested`: the same no-op tool calls made inside one sub-run (the parent calls the
  sub-agent once; the sub-agent's model does the 20 turns of N calls): a tool call through
  one level, its events relayed to the parent's listener as `NestedAgentEvent`s. This is
  the row the ≤ 3 × target reads; the two rows above cost a whole agent run per call.

Usage: `.venv/bin/python bench/teams.py [--runs 15]`
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import statistics
import time
from collections.abc import Callable
from typing import Any

from yiemagent import (
    Agent,
    AgentTool,
    AssistantMessage,
    Context,
    Model,
    StreamOptions,
    TextContent,
    ToolCall,
)
from yiemagent.ai.providers.faux import FauxModel
from yiemagent.types import AssistantMessageEventStream, DoneEvent

SCHEMA: dict[str, Any] = {"type": "object", "properties": {"x": {"type": "integer"}}}
TURNS = 20
WIDE, NARROW = 50, 1


async def noop(tool_call_id: str, args: Any, signal: Any, on_update: Any) -> str:
    return "ok"


def noop_tool() -> AgentTool:
    return AgentTool("noop", "noop", "does nothing", SCHEMA, noop, parallel=True)


def done_stream(message: AssistantMessage) -> AssistantMessageEventStream:
    stream = AssistantMessageEventStream()
    stream.push(DoneEvent(message.stop_reason, message))  # type: ignore[arg-type]
    return stream


def parent_script(tool: str, calls: int) -> Callable[..., AssistantMessageEventStream]:
    """The parent's model: TURNS turns of `calls` calls of `tool`, then an answer."""
    out = []
    for turn in range(TURNS):
        args = {"input": "go"} if tool != "noop" else {"x": 1}
        content: list[Any] = [ToolCall(f"c{turn}_{i}", tool, args) for i in range(calls)]
        out.append(AssistantMessage(content, stop_reason="toolUse"))
    out.append(AssistantMessage([TextContent("done")]))
    answers = iter(out)

    def stream_fn(model: Model, context: Context, options: StreamOptions | None) -> Any:
        return done_stream(next(answers))

    return stream_fn


def sub_stream_fn(calls_noop: bool) -> Callable[..., AssistantMessageEventStream]:
    """The sub-agent's model: answer at once, or call `noop` first (read from the context:
    every sub-run shares this function)."""
    answer = AssistantMessage([TextContent("sub answer")])
    call = AssistantMessage([ToolCall("s1", "noop", {"x": 1})], stop_reason="toolUse")

    def stream_fn(model: Model, context: Context, options: StreamOptions | None) -> Any:
        last = context.messages[-1]
        wants_call = calls_noop and getattr(last, "role", "") == "user"
        return done_stream(call if wants_call else answer)

    return stream_fn


def make_parent(kind: str, calls: int, model: Model) -> Agent[Any]:
    if kind == "nested":  # the calls happen one level down
        sub = Agent(model=model, stream_fn=parent_script("noop", calls), name="sub",
                    tools=[noop_tool()])  # fmt: skip
        once = iter([AssistantMessage([ToolCall("c0", "sub", {"input": "go"})],
                                      stop_reason="toolUse"),
                     AssistantMessage([TextContent("done")])])  # fmt: skip

        def lead_fn(model: Model, context: Context, options: StreamOptions | None) -> Any:
            return done_stream(next(once))

        parent = Agent(model=model, stream_fn=lead_fn, tools=[sub.as_tool()], name="lead")
        parent.subscribe(lambda event, signal: None)
        return parent
    if kind == "plain":
        tools = [noop_tool()]
        name = "noop"
    else:
        sub = Agent(
            model=model,
            stream_fn=sub_stream_fn(kind == "as_tool+call"),
            name="sub",
            tools=[noop_tool()],
        )
        tools = [sub.as_tool()]
        name = "sub"
    parent = Agent(model=model, stream_fn=parent_script(name, calls), tools=tools, name="lead")
    parent.subscribe(lambda event, signal: None)  # someone listens: nested events are relayed
    return parent


def timed(kind: str, calls: int, model: Model) -> float:
    parent = make_parent(kind, calls, model)
    gc.collect()
    gc.disable()
    try:
        start = time.perf_counter()
        asyncio.run(parent.prompt("go"))
        return time.perf_counter() - start
    finally:
        gc.enable()


def per_call_us(kind: str, runs: int, model: Model) -> float:
    samples = []
    for _ in range(runs):
        wide = timed(kind, WIDE, model)
        narrow = timed(kind, NARROW, model)
        samples.append((wide - narrow) / (TURNS * (WIDE - NARROW)) * 1e6)
    return statistics.median(samples)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=15)
    args = parser.parse_args()
    model = FauxModel([]).model
    kinds = ("plain", "nested", "as_tool", "as_tool+call")
    for kind in kinds:  # warm up imports and caches
        timed(kind, NARROW, model)
    figures = {kind: per_call_us(kind, args.runs, model) for kind in kinds}
    plain = figures["plain"]
    print(f"µs per call (median of {args.runs} runs; {TURNS} turns × {WIDE} vs {NARROW} calls)")
    for kind, us in figures.items():
        target = " (target ≤ 3 ×)" if kind == "nested" else " (a whole sub-run per call)"
        ratio = "" if kind == "plain" else f"  {us / plain:.2f} × plain{target}"
        print(f"  {kind:<13} {us:8.1f} µs{ratio}")


if __name__ == "__main__":
    main()
