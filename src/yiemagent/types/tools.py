"""Tool definitions, tool results and the per-call pipeline's outcomes (DESIGN §4)."""

from __future__ import annotations

import inspect
import json
import re
import sys
import unicodedata
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass, field
from typing import Any, Literal, TypeAlias, TypeGuard

from yiemagent.errors import ConfigError, YiemAgentError
from yiemagent.types.alias_doc import describe_alias
from yiemagent.types.messages import (
    AssistantMessage,
    ImageContent,
    TextContent,
    ToolCall,
    ToolResultContent,
    ToolResultMessage,
    Usage,
)
from yiemagent.types.signal import AbortSignal
from yiemagent.types.text import cut_middle, kept_length

__all__ = [
    "NOTE_ROOM",
    "TOOL_NAME_PATTERN",
    "TOOL_RESULT_LEFT_OUT",
    "AfterToolCallResult",
    "AgentTool",
    "AgentToolResult",
    "BeforeToolCallResult",
    "ExecutedOutcome",
    "FinalizedOutcome",
    "HeldOutcome",
    "HeldToolResult",
    "ImmediateOutcome",
    "OnUpdate",
    "PendingApproval",
    "PrepareArguments",
    "PreparedToolCall",
    "RequiresApproval",
    "ToolApproval",
    "ToolCallBatch",
    "ToolCallFailed",
    "ToolExecute",
    "ValidateArguments",
    "binds",
    "check_tool_name",
    "cut_tool_result",
    "is_json_of",
    "is_seconds",
    "is_whole_number",
    "provider_property_names",
]

TOOL_NAME_PATTERN = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
"""What every provider accepts as a tool name."""

PROPERTY_NAME_PATTERN = re.compile(r"^[A-Za-z0-9_.-]{1,64}$")
"""What Anthropic's API accepts as the name of a tool schema's top-level property."""


def provider_property_names(names: Iterable[str]) -> dict[str, str]:
    """New names for the property names (of a tool schema's top level) that Anthropic's API
    refuses: it takes only `PROPERTY_NAME_PATTERN` ("Property keys should match pattern"),
    and refuses every request that offers a tool with another one (`filter[id]` of an MCP
    server, a Python parameter named `größe`). Accents are dropped (`café` → `cafe`), each
    other character becomes `_`, the name is cut to 64 characters and numbered when it
    meets a name already taken. The provider
    sends the new names; the tool pipeline reads a call's arguments under them back to
    the old ones (`tools.schema`), so the same map must come from the same names.

    Returns:
        `{old: new}` for the names that need one; empty when all are accepted.
    """
    given = list(names)
    taken = {name for name in given if PROPERTY_NAME_PATTERN.fullmatch(name)}
    renamed: dict[str, str] = {}
    for name in given:
        if name in taken:
            continue
        plain = "".join(c for c in unicodedata.normalize("NFKD", name) if c.isascii())
        base = re.sub(r"[^A-Za-z0-9_.-]", "_", plain or name)[:64] or "_"
        new, number = base, 1
        while new in taken:
            number += 1
            new = f"{base[: 64 - len(str(number)) - 1]}_{number}"
        taken.add(new)
        renamed[name] = new
    return renamed


def check_tool_name(name: object) -> str:
    """Return `name` if it is a valid tool name.

    Raises:
        ConfigError: not a string of 1-64 characters from `[A-Za-z0-9_-]`.
    """
    if not isinstance(name, str) or not TOOL_NAME_PATTERN.fullmatch(name):
        raise ConfigError(
            f"invalid tool name {name!r}: use 1 to 64 characters from A-Z, a-z, 0-9, '_' and '-'"
        )
    return name


def _check_execute(name: str, execute: Callable[..., Any]) -> None:
    """Refuse, when the tool is made, an `execute` that cannot be called with the four
    arguments every call passes (a JavaScript tool may declare fewer; a Python one fails
    each call). One without a readable signature is let through.

    Raises:
        ConfigError: naming the tool and the signature it has.
    """
    try:
        signature = inspect.signature(execute, follow_wrapped=False)  # what is called
    except (TypeError, ValueError):
        return
    if not binds(signature, 4):
        raise ConfigError(
            f"tool {name!r}: execute must take (tool_call_id, args, signal, on_update); it "
            f"takes {signature} (add the missing parameters, or use @tool)"
        )


def binds(signature: inspect.Signature, count: int) -> bool:
    """Whether a function of `signature` can be called with `count` positional arguments:
    the check of a tool's `execute` (four) and of a hook or listener that may leave out
    the run's signal (`types.callbacks.signal_optional`: two, else one)."""
    try:
        signature.bind(*(None,) * count)
    except TypeError:
        return False
    return True


_LARGEST_FLOAT = sys.float_info.max


def is_seconds(value: object) -> bool:
    """Whether `value` is a number of seconds a bound can wait: an `int` or `float` above 0
    (not a bool, not NaN; a text such as "30" is no number: a caller passing one gets told
    so, not a `TypeError` from a comparison later; an `int` too large for a float, such as
    `10**400`, is none either: the event loop's timer takes floats, and every call it bounds
    would fail. `math.inf` is a bound that never ends)."""
    if not isinstance(value, int | float) or isinstance(value, bool):
        return False
    return value > 0 and (isinstance(value, float) or value <= _LARGEST_FLOAT)


def is_whole_number(value: object, least: int) -> TypeGuard[int]:
    """Whether `value` is a whole number of at least `least`: an `int` (not a bool, which
    Python counts as one; not a float such as 2.0; not a text such as "3") with
    `value >= least`. The one check behind every "a whole number >= N" option (the loop's
    bounds, an agent file's counts, eval and batch options); each caller words its own
    message, naming the option."""
    return isinstance(value, int) and not isinstance(value, bool) and value >= least


def is_json_of(text: str, value: Any) -> bool:
    """Whether `text` is JSON that parses to `value` (False for a text that is not JSON, or
    nests too deeply for `json.loads`): a tool result's text that already shows its
    structured content, or argument text already sent for a call's parsed arguments."""
    try:
        return bool(json.loads(text) == value)
    except (ValueError, RecursionError):
        return False


@dataclass(slots=True)
class AgentToolResult:
    """What a tool returns (agentToolResult); also a partial result in `on_update`.

    `terminate=True` on every result of a batch skips the automatic next model call.

    """

    content: list[ToolResultContent] = field(default_factory=list)
    """What the model reads (text and images)."""
    details: Any = field(default_factory=dict)
    """Data for the application (events, the transcript); never sent to the model."""
    usage: Usage | None = None
    """Tokens and cost (USD) the tool itself spent (a sub-agent's); run limits count it."""
    terminate: bool = False
    added_tool_names: list[str] | None = None
    """Tools the call registered (writeTool); copied to the `ToolResultMessage`."""

    @classmethod
    def text(cls, text: str, **kwargs: Any) -> AgentToolResult:
        """A result holding one `TextContent`."""
        return cls([TextContent(text)], **kwargs)


NOTE_ROOM = 200
"""Characters past a cap that `cut_tool_result` leaves alone: room for a note a tool put
after its text (the lines of a cut by `cut_tool_result` itself are not counted at all)."""

TOOL_RESULT_LEFT_OUT = "characters of the result"
"""What the line in a cut tool result calls the characters it counts."""


def cut_tool_result(result: AgentToolResult, limit: int) -> AgentToolResult:
    """`result` whole when its texts hold at most `limit` characters together (and
    `NOTE_ROOM` more: a note another cut added; the lines a cut by this rule put in, as an
    MCP tool's result has them, are not counted, so such a result is not cut again); else
    a copy whose every text is cut in its middle (`cut_middle`) to its share of `limit`, in
    proportion to its length, with a line saying how many characters were left out.
    Images and the other fields are kept as they are; `result` is not changed.

    Args:
        result: what a tool returned (after `after_tool_call`).
        limit: most characters of text to keep, the notes not counted (>= 1).

    A tool's result without content is left to the result message (which makes it empty);
    a text given as the whole content is taken as one `TextContent`.
    """
    if result.content is None:
        return result
    if isinstance(result.content, str):
        result = AgentToolResult(
            [TextContent(result.content)],
            result.details,
            result.usage,
            result.terminate,
            result.added_tool_names,
        )
    texts = [block for block in result.content if isinstance(block, TextContent)]
    if (
        sum(kept_length(block.text, left_out=TOOL_RESULT_LEFT_OUT) for block in texts)
        <= limit + NOTE_ROOM
    ):
        return result
    total = sum(len(block.text) for block in texts)
    content: list[ToolResultContent] = [
        TextContent(
            cut_middle(
                block.text,
                len(block.text) * limit // total,
                left_out=TOOL_RESULT_LEFT_OUT,
            )
        )
        if isinstance(block, TextContent)
        else block
        for block in result.content
    ]
    return AgentToolResult(
        content, result.details, result.usage, result.terminate, result.added_tool_names
    )


@dataclass(slots=True)
class HeldToolResult(AgentToolResult):
    """What a tool returns when its work waits for a person's decision inside it (a
    sub-agent's call held for approval): the batch holds the call as if it
    were held before running; it gets its result when the run is resumed and the tool,
    run again, finishes. `content` says what waits (never shown to the model)."""


class ToolCallFailed(YiemAgentError):
    """Raised by a tool to fail its call (an error result with this text) while still
    reporting what the call spent: `usage` (a failed sub-agent's tokens, which run limits
    count) and `details` go on the error result.

    A tool cut off by its timeout or an abort (its task cancelled) reports what it spent by
    raising the `asyncio.CancelledError` from a `ToolCallFailed`
    (`raise cancelled from ToolCallFailed(..., usage=...)`): the timeout or abort result
    gets its `usage` and `details`."""

    def __init__(self, text: str, *, usage: Usage | None = None, details: Any = None) -> None:
        super().__init__(text)
        self.usage = usage
        self.details = {} if details is None else details


OnUpdate: TypeAlias = Callable[[AgentToolResult], None]
describe_alias(
    __name__,
    "OnUpdate",
    """Receives a partial result while a tool runs; safe to call from any thread.""",
)

ToolReturn: TypeAlias = AgentToolResult | str
ToolExecute: TypeAlias = Callable[
    [str, dict[str, Any], AbortSignal, OnUpdate], ToolReturn | Awaitable[ToolReturn]
]
describe_alias(
    __name__,
    "ToolExecute",
    """`execute(tool_call_id, args, signal, on_update)`, plain or async.""",
)

PrepareArguments: TypeAlias = Callable[[Any], Any]
describe_alias(
    __name__,
    "PrepareArguments",
    """Turns raw arguments into what the schema expects, before validation.""",
)

ValidateArguments: TypeAlias = Callable[[dict[str, Any]], "str | None"]
describe_alias(
    __name__,
    "ValidateArguments",
    """The tool's own check after JSON-Schema validation: `None` or an error text.""",
)

RequiresApproval: TypeAlias = "bool | Callable[[dict[str, Any]], bool]"
"""`True`, or a function of the validated arguments that says whether a person must approve
this call before it runs."""


@dataclass(slots=True)
class AgentTool:
    """A tool the model can call (agentTool).

    `input_schema` is a JSON Schema (2020-12) for the arguments object. `parallel=True`
    lets the tool run beside others in a parallel batch. `timeout_s` bounds
    one call (seconds). `requires_approval` (`True`, or a function of the validated
    arguments returning a bool) holds each call until a person approves or rejects it
    (`docs/approvals.md`).

    `isolation`: where `execute` runs. "thread" (default): an async function in the run's
    task (cancelled at a timeout or abort), a plain function on a worker thread — **a plain
    function cannot be stopped once it runs**: at a timeout or abort its result is discarded
    but the thread runs on until the function returns. "process": in a reused child process
    that a timeout or abort kills, so the call really stops (about 0.1 ms more per call on a
    warm worker, one process start on the first call; `execute` must be a top-level function
    of a module or tool file, and its arguments, updates and result cross by pickle; see
    docs/tools.md "Timeouts, and stopping a tool"). Tools written by `writeTool` use
    "process".

    Raises:
        ConfigError: an invalid name, a label or description that is not text, a schema
            that is not a dict, a non-callable execute, an unknown isolation.
    """

    name: str
    label: str
    """A human-readable name (`listTools` shows it beside the name); None: the name."""
    description: str
    """What the model reads to decide when and how to call the tool; None: empty."""
    input_schema: dict[str, Any]
    execute: ToolExecute
    prepare_arguments: PrepareArguments | None = None
    validate_arguments: ValidateArguments | None = None
    parallel: bool = False
    timeout_s: float | None = None
    isolation: Literal["thread", "process"] = "thread"
    requires_approval: RequiresApproval = False

    def __post_init__(self) -> None:
        check_tool_name(self.name)
        if self.label is None:  # none given: the name, as `@tool` does
            self.label = self.name
        if self.description is None:  # none given: empty, never null on the wire
            self.description = ""
        for field_name in ("label", "description"):
            value = getattr(self, field_name)
            if not isinstance(value, str):
                raise ConfigError(
                    f"tool {self.name!r}: {field_name} must be a str (or None), not "
                    f"{type(value).__name__}"
                )
        if not isinstance(self.input_schema, dict):
            raise ConfigError(f"tool {self.name!r}: input_schema must be a dict (a JSON Schema)")
        if not callable(self.execute):
            raise ConfigError(f"tool {self.name!r}: execute must be callable")
        _check_execute(self.name, self.execute)
        if self.timeout_s is not None and not is_seconds(self.timeout_s):
            raise ConfigError(
                f"tool {self.name!r}: timeout_s must be > 0 seconds or None, not {self.timeout_s!r}"
            )
        if self.isolation not in ("thread", "process"):
            raise ConfigError(
                f"tool {self.name!r}: isolation must be 'thread' or 'process', not "
                f"{self.isolation!r}"
            )
        if not isinstance(self.requires_approval, bool) and not callable(self.requires_approval):
            raise ConfigError(
                f"tool {self.name!r}: requires_approval must be True/False or a function of "
                "the arguments returning a bool"
            )


# ── pipeline outcomes ──────────────────────────────────────────


@dataclass(slots=True)
class PreparedToolCall:
    """A call ready to execute: the tool, the call and its validated arguments."""

    tool: AgentTool
    tool_call: ToolCall
    args: dict[str, Any]
    """Validated, then as `before_tool_call` left them (it may change them)."""
    kind: Literal["prepared"] = "prepared"


@dataclass(slots=True)
class ImmediateOutcome:
    """A call answered without executing (unknown tool, invalid args, blocked, aborted)."""

    result: AgentToolResult
    is_error: bool
    kind: Literal["immediate"] = "immediate"


@dataclass(slots=True)
class HeldOutcome:
    """A call held for a person's approval: it does not run, and has no result yet.
    `args` are the validated arguments."""

    tool_call: ToolCall
    args: dict[str, Any]
    kind: Literal["held"] = "held"


@dataclass(slots=True)
class ExecutedOutcome:
    """What `execute` produced (or the error it raised, as a result)."""

    result: AgentToolResult
    is_error: bool


@dataclass(slots=True)
class FinalizedOutcome:
    """The final result of one call, after `after_tool_call`."""

    tool_call: ToolCall
    result: AgentToolResult
    is_error: bool


@dataclass(slots=True)
class ToolCallBatch:
    """The results of one assistant message's tool calls, in source order.

    `held` lists the calls held for approval: they have no result in
    `messages`; each gets one when it is approved and run, or rejected.
    """

    messages: list[ToolResultMessage]
    terminate: bool
    """Every result asked to terminate and no call is held (`should_terminate`)."""
    held: list[ToolCall] = field(default_factory=list)


@dataclass(slots=True)
class BeforeToolCallResult:
    """What `before_tool_call` may return: block the call, with a reason, and terminate;
    or `defer=True`: hold the call for a person's approval without running it (ignored for a call
    that has been approved, `BeforeToolCallContext.approved`)."""

    block: bool = False
    reason: str | None = None
    """The blocked call's error text for the model; default "Tool execution was blocked"."""
    terminate: bool = False
    """With `block`: the blocked call's result asks to terminate."""
    defer: bool = False


@dataclass(slots=True)
class AfterToolCallResult:
    """What `after_tool_call` may return: each non-`None` field replaces the result's."""

    content: list[TextContent | ImageContent] | None = None
    details: Any = None
    is_error: bool | None = None
    usage: Usage | None = None
    terminate: bool | None = None


# ── approvals ───────────────────────────────────────────────


@dataclass(slots=True)
class ToolApproval:
    """A decision on a held tool call: approved, or not, with a reason the model reads.

    `by_user` is False when no person decided: the application answered for want of one
    (`yiem run` with no terminal to ask). The call's result then reads "Tool call not
    run: <reason>", not "Tool call rejected by the user: <reason>", so the model is not
    told that someone refused what nobody was asked about."""

    approved: bool
    reason: str | None = None
    by_user: bool = True


@dataclass(slots=True)
class PendingApproval:
    """A tool call held for approval: its id, tool, arguments as the model
    sent them, the assistant message it came from, and the decision taken so far (`None`:
    none yet)."""

    tool_call_id: str
    tool_name: str
    arguments: dict[str, Any]
    assistant_message: AssistantMessage
    decision: ToolApproval | None = None
    agent_path: tuple[str, ...] = ()
    """For a call held inside a sub-agent (`Agent.as_tool`): the agents' names
    from the outermost down to the one that made the call; empty for the agent's own."""
    tool_call_path: tuple[str, ...] = ()
    """The ids of the calls from the outermost run's down: those that run the sub-agents
    the call is held in, then `tool_call_id` itself (a `NestedAgentEvent`'s
    `tool_call_path` and its event's call id, as the call runs): models number their
    calls, so two invocations of one sub-agent can make calls of one id. `(tool_call_id,)`
    for the agent's own call; empty only in one made by hand."""
