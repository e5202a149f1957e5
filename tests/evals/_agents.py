"""Module-level (so picklable) `make_agent` factories for the eval tests: a faux-model
Agent with a real `calculator` tool whose script comes from the case's metadata.

`metadata["script"]`:
- "calc": calls `calculator` with `metadata["expression"]`, then answers "The answer is
  <result>." from the tool's result;
- "say": answers `metadata["text"]` without a tool;
- "fail": the model call ends in error;
- "flaky": fails on odd repeats (`metadata["repeat"]` 0, 2, … answer), says `text` otherwise;
- "count": calls `count_to` with `metadata["n"]` as sent (a text "3" is coerced to 3), then
  answers from the tool's result;
- "team": asks a sub-agent (`Agent.as_tool`) that says `text`, then says what it heard;
- "team_calc": asks a sub-agent (`helper`) that calls `calculator` with
  `metadata["expression"]` and answers from its result; then says what it heard.
Every answer costs 10 input and 5 output tokens, $0.001.
"""

from __future__ import annotations

from typing import Any

from yiemagent import Agent
from yiemagent.ai.providers.faux import FauxModel, faux_message, faux_text, faux_tool_call
from yiemagent.batch import BatchTask
from yiemagent.tools import tool
from yiemagent.types import AssistantMessage, Context, Cost, ToolResultMessage, Usage

USAGE = Usage(input=10, output=5, total_tokens=15, cost=Cost(total=0.001))


@tool
def calculator(expression: str) -> str:
    """Evaluate an arithmetic expression.

    Args:
        expression: digits, + - * / and parentheses
    """
    allowed = set("0123456789+-*/(). ")
    if not set(expression) <= allowed:
        raise ValueError(f"not arithmetic: {expression!r}")
    return str(eval(expression))  # only digits and operators reach here


@tool
def count_to(n: int) -> str:
    """Count from 1 to n.

    Args:
        n: the last number
    """
    return " ".join(str(i) for i in range(1, n + 1))


def _from_result(context: Context) -> AssistantMessage:
    results = [m for m in context.messages if isinstance(m, ToolResultMessage)]
    text = results[-1].content[0].text if results else "?"  # type: ignore[union-attr]
    return faux_message(faux_text(f"The answer is {text}."), usage=USAGE)


def make_agent(task: BatchTask) -> Agent:
    """See the module docstring."""
    meta: dict[str, Any] = task.metadata
    script = meta.get("script", "say")
    if script == "calc":
        call = faux_tool_call("calculator", {"expression": meta["expression"]})
        responses: list[Any] = [faux_message(call, usage=USAGE), _from_result]
    elif script == "count":
        call = faux_tool_call("count_to", {"n": meta["n"]})
        responses = [faux_message(call, usage=USAGE), _from_result]
    elif script == "fail" or (script == "flaky" and meta["repeat"] % 2 == 1):
        responses = [faux_message(faux_text(""), stop_reason="error", error_message="boom")]
    elif script == "team":
        sub_fm = FauxModel([faux_message(faux_text(str(meta["text"])), usage=USAGE)])
        helper = Agent(model=sub_fm.model, stream_fn=sub_fm.stream_fn, name="helper")
        ask = faux_message(faux_tool_call("helper", {"input": "say it"}), usage=USAGE)
        fm = FauxModel([ask, _from_result])
        return Agent(model=fm.model, stream_fn=fm.stream_fn, tools=[helper.as_tool()])
    elif script == "team_calc":
        sums = faux_tool_call("calculator", {"expression": meta["expression"]})
        sub_fm = FauxModel([faux_message(sums, usage=USAGE), _from_result])
        helper = Agent(
            model=sub_fm.model, stream_fn=sub_fm.stream_fn, name="helper", tools=[calculator]
        )
        ask = faux_message(faux_tool_call("helper", {"input": "work it out"}), usage=USAGE)
        fm = FauxModel([ask, _from_result])
        return Agent(model=fm.model, stream_fn=fm.stream_fn, tools=[helper.as_tool()])
    else:
        responses = [faux_message(faux_text(str(meta.get("text", ""))), usage=USAGE)]
    fm = FauxModel(responses)
    return Agent(model=fm.model, stream_fn=fm.stream_fn, tools=[calculator, count_to])
