"""A tool call's path: which yiemagent modules and functions one tool call goes through
(issue 24).

An `Agent` on the scripted faux model with one tool: a first `Agent.prompt` warms it up
(lazy imports, caches), then the second `Agent.prompt` (the model calls the tool once, then
answers in text) runs under `sys.setprofile` (and `threading.setprofile`, so tool code run
on a worker thread is seen too). Prints the yiemagent modules entered (the count outside
`types/` and in all, then the list) and the number of distinct yiemagent functions entered.

Usage: `.venv/bin/python bench/tool_call_path.py [--tool plain|async] [--functions]`
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import threading
from pathlib import Path
from types import FrameType
from typing import Any

import yiemagent
from yiemagent import Agent, tool
from yiemagent.ai.providers.faux import FauxModel, faux_message, faux_tool_call

ROOT = Path(yiemagent.__file__).resolve().parent


@tool
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@tool
async def add_async(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


def module_of(filename: str) -> str | None:
    """The dotted yiemagent module a code object's file belongs to, or None outside it."""
    try:
        rel = Path(filename).resolve().relative_to(ROOT)
    except ValueError:
        return None
    parts = list(rel.with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(["yiemagent", *parts])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tool", choices=("plain", "async"), default="plain")
    parser.add_argument("--functions", action="store_true", help="list the functions too")
    ns = parser.parse_args()
    fn = add if ns.tool == "plain" else add_async
    fm = FauxModel(
        [
            faux_message(faux_tool_call(fn.name, {"a": 1, "b": 2})),
            "3",
            faux_message(faux_tool_call(fn.name, {"a": 2, "b": 3})),
            "5",
        ]
    )
    agent = Agent(model=fm.model, stream_fn=fm.stream_fn, tools=[fn])
    asyncio.run(agent.prompt("What is 1 + 2?"))  # warm up

    files: dict[str, str | None] = {}
    functions: set[tuple[str, int, str]] = set()

    def profile(frame: FrameType, event: str, arg: Any) -> None:
        if event != "call":
            return
        code = frame.f_code
        if code.co_filename not in files:
            files[code.co_filename] = module_of(code.co_filename)
        if files[code.co_filename] is not None:
            functions.add((code.co_filename, code.co_firstlineno, code.co_qualname))

    async def second() -> None:
        sys.setprofile(profile)
        threading.setprofile(profile)
        try:
            await agent.prompt("What is 2 + 3?")
        finally:
            sys.setprofile(None)
            threading.setprofile(None)

    asyncio.run(second())
    answer = agent.state.messages[-1]
    modules = sorted({m for f, _, _ in functions if (m := files[f]) is not None})
    outside = [m for m in modules if not m.startswith("yiemagent.types")]
    print(f"tool: {ns.tool}; last message: {type(answer).__name__}")
    print(f"yiemagent modules entered: {len(outside)} outside types/, {len(modules)} in all")
    print(f"distinct yiemagent functions entered: {len(functions)}")
    for m in modules:
        names = sorted(q for f, _, q in functions if files[f] == m)
        print(f"  {m} ({len(names)})")
        if ns.functions:
            for q in names:
                print(f"      {q}")


if __name__ == "__main__":
    main()
