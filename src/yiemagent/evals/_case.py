"""A `Case` (what to ask, and the checks its answer must pass), what a check looks at
(`EvalRun`, one run of one case) and what it says (`CheckResult`). Plain data: the runs come
back from the batch engine as result lines."""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeAlias

from yiemagent.errors import ConfigError
from yiemagent.types.messages import (
    AgentMessage,
    AssistantMessage,
    ToolCall,
    ToolResultMessage,
    message_from_dict,
)

if TYPE_CHECKING:
    from yiemagent.batch import TaskResult

__all__ = ["Case", "Check", "CheckResult", "DatasetError", "EvalRun", "check_name"]


CheckReturn: TypeAlias = "bool | CheckResult"
Check: TypeAlias = "Callable[[EvalRun], CheckReturn | Awaitable[CheckReturn]]"
"""A check: any function of an `EvalRun` returning a bool or a `CheckResult` (plain or
async). Its name in the report is its `name` attribute, else its `__name__`."""


class DatasetError(ConfigError):
    """A dataset is not usable: a file that cannot be read or parsed, a case without a
    required field, an unknown check or bad check arguments. The text names the file, the
    case and the field."""


@dataclass(slots=True)
class Case:
    """One thing to ask the agent, and the checks its answer must pass."""

    name: str
    """Unique in its dataset; names the case in reports and comparisons."""
    input: str
    """The prompt."""
    checks: Sequence[Check] = ()
    expected: Any = None
    """The reference answer: `contains()`, `equals()` and `output_is()` without an
    argument compare with it, and `judge` shows it to the grader."""
    metadata: dict[str, Any] = field(default_factory=dict)
    """Free data; `make_agent(task)` sees it in `task.metadata`."""

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name.strip():
            raise DatasetError(f"a case needs a name, not {self.name!r}")
        if not isinstance(self.input, str) or not self.input.strip():
            raise DatasetError(f"case {self.name!r}: input must be a non-empty text")
        self.checks = tuple(self.checks)
        for check in self.checks:
            if not callable(check):
                raise DatasetError(f"case {self.name!r}: {check!r} is not a check")
        try:  # it goes into the batch's results file: refused now, not after the run
            json.dumps(self.metadata)
        except (TypeError, ValueError) as exc:
            raise DatasetError(
                f"case {self.name!r}: metadata: must be JSON data ({exc}; quote a date or "
                "a time to make it text)"
            ) from None
        from yiemagent.ai import sanitize_surrogates

        fields = (("name", self.name), ("input", self.input))
        for key, value in (*fields, ("expected", self.expected), ("metadata", self.metadata)):
            # a `\ud800` escape with no pair: no UTF-8 text, which the results file holds
            if isinstance(value, str) and value.isascii():
                continue  # as most texts are: no surrogate, no walk
            if sanitize_surrogates(value) is not value:
                raise DatasetError(
                    f"case {self.name!r}: {key}: holds a lone surrogate (a \\ud800-\\udfff "
                    "escape with no pair), which is no UTF-8 text"
                )


def as_verdict(value: object) -> bool | None:
    """A check's verdict as `True` or `False`, or None when `value` is none.

    A verdict is a `bool`, or an array library's boolean scalar: a value of shape `()`
    whose `dtype` is of kind "b", as numpy's `bool_` (what `(a == b).all()` and
    `np.isclose(a, b)` return) and a 0-d boolean array of numpy or JAX are. Nothing else
    is one: a text ("no" is truthy), a number (1 may be a score or a count, as
    pydantic-evals reads it), None, a list.
    """
    if isinstance(value, bool):
        return value
    try:
        boolean = getattr(getattr(value, "dtype", None), "kind", None) == "b"
        if boolean and getattr(value, "shape", None) == ():
            verdict = bool(value)
            return verdict if isinstance(verdict, bool) else None
    except Exception:  # an object whose attributes raise is no verdict
        return None
    return None


@dataclass(slots=True, frozen=True)
class CheckResult:
    """What a check returns for one run: its verdict, why, and what the check itself spent
    (a check may return a bare bool instead). It carries no name: the eval names it after
    the check (`check_name`) and records it in the report as a `CheckOutcome`."""

    passed: bool
    reason: str = ""
    """Why it failed (or what it saw), one line; may be empty when it passed."""
    tokens: int = 0
    """Tokens the check itself spent (a `judge`'s model calls), apart from the run's."""
    cost_usd: float = 0.0
    """USD the check itself spent (a `judge`'s model calls), apart from the run's."""

    def __post_init__(self) -> None:
        # a truthy verdict text ("no") or number would otherwise count as a pass
        verdict = as_verdict(self.passed)
        if verdict is None:
            raise TypeError(
                "CheckResult.passed must be True or False, "
                f"not {type(self.passed).__name__} {self.passed!r}"
            )
        object.__setattr__(self, "passed", verdict)  # numpy's True is stored as True
        if not isinstance(self.reason, str):
            raise TypeError(
                f"CheckResult.reason must be a text, not {type(self.reason).__name__} "
                f"{self.reason!r}"
            )


@dataclass(slots=True)
class EvalRun:
    """One run of one case, as the checks see it."""

    case: Case
    repeat: int
    """0 for the first run of the case, 1 for the second, …"""
    status: str
    """The batch status: "ok", "error" (the run failed), "timeout" or "interrupted"."""
    text: str = ""
    """The final answer's text ("" when the run gave none)."""
    output: Any = None
    """The validated output when the agent has an output type (JSON-ready), else the
    answer parsed as JSON when the case asked for a schema (`output_is`), else None."""
    messages: list[AgentMessage] = field(default_factory=list)
    """The run's messages, the prompt first."""
    tokens: int = 0
    """Tokens over every model call of the run (input, output and cache)."""
    cost_usd: float = 0.0
    seconds: float = 0.0
    """Wall-clock seconds of the run."""
    error: str | None = None
    """What went wrong when `status` is not "ok"."""
    end_reason: str | None = None
    """The run's `agent_end` reason ("stop", "max_turns", "error", …)."""
    sub_agent_messages: list[tuple[tuple[str, ...], AgentMessage]] = field(default_factory=list)
    """The assistant and tool result messages of its sub-agents' runs (agents called as
    tools, at any depth), in the order they ended, each with its agent path (the agents'
    names from the outermost down). Not in `messages`, `turns` or `tool_calls`, which are
    the agent's own run."""
    sub_agent_runs: dict[tuple[tuple[str, ...], tuple[str, ...]], list[AgentMessage]] = field(
        default_factory=dict
    )
    """The same messages by sub-agent run: by agent path and call path (the ids of the
    calls that ran each agent of the path after the first; the last call's alone when the
    record predates paths), which places each run under the call that ran it in the
    timeline."""

    @property
    def tool_calls(self) -> list[ToolCall]:
        """Every tool call the agent's own model made, in order."""
        return [
            call
            for message in self.messages
            if isinstance(message, AssistantMessage)
            for call in message.tool_calls
        ]

    @property
    def tool_results(self) -> list[ToolResultMessage]:
        """Every tool result of the run, in order."""
        return [m for m in self.messages if isinstance(m, ToolResultMessage)]

    @property
    def sub_agent_tool_calls(self) -> list[tuple[tuple[str, ...], ToolCall]]:
        """Every tool call its sub-agents' models made, with the agent path of each."""
        return [
            (path, call)
            for path, message in self.sub_agent_messages
            if isinstance(message, AssistantMessage)
            for call in message.tool_calls
        ]

    @property
    def turns(self) -> int:
        """Model calls the run made (one assistant message each)."""
        return sum(isinstance(m, AssistantMessage) for m in self.messages)

    @classmethod
    def from_result(cls, case: Case, repeat: int, result: TaskResult) -> EvalRun:
        """The run a batch result line describes (its `messages` kept by the batch)."""
        messages: list[AgentMessage] = []
        for raw in result.messages or ():
            try:
                messages.append(message_from_dict(raw))
            except ValueError:  # an application's own message type
                continue
        nested: list[tuple[tuple[str, ...], AgentMessage]] = []
        runs: dict[tuple[tuple[str, ...], tuple[str, ...]], list[AgentMessage]] = {}
        for raw in result.sub_agent_messages or ():
            try:
                path, message = tuple(raw["agent_path"]), message_from_dict(raw["message"])
            except (ValueError, TypeError, KeyError):
                continue
            nested.append((path, message))
            calls = raw.get("tool_call_path")
            if not isinstance(calls, list) or not all(isinstance(c, str) for c in calls):
                calls = [raw["tool_call_id"]] if isinstance(raw.get("tool_call_id"), str) else []
            if calls:  # a line written before paths: the last call; before call ids: none
                runs.setdefault((path, tuple(calls)), []).append(message)
        return cls(
            case=case,
            repeat=repeat,
            status=result.status,
            text=result.text or "" if result.status == "ok" else "",
            output=result.output,
            messages=messages,
            tokens=int(result.usage.get("total_tokens") or 0),
            cost_usd=result.cost_usd,
            seconds=result.duration_s,
            error=result.error,
            end_reason=result.end_reason,
            sub_agent_messages=nested,
            sub_agent_runs=runs,
        )


def check_name(check: Check) -> str:
    """The name a check is reported under."""
    name = getattr(check, "name", None)
    if isinstance(name, str) and name:
        return name
    return str(getattr(check, "__name__", type(check).__name__))


def describe_args(args: Sequence[Any], kwargs: Mapping[str, Any]) -> str:
    """`(a, key=value)` as a check's name shows its arguments, cut short."""
    parts = [repr(a) for a in args] + [f"{k}={v!r}" for k, v in kwargs.items()]
    text = ", ".join(parts)
    return text if len(text) <= 60 else text[:59] + "…"
