"""Content blocks, messages and usage: the transcript's vocabulary (DESIGN §3).

Every block and message is a slotted dataclass with a literal tag (`type` on content blocks,
`role` on messages), so a transcript round-trips through JSON with `messages_to_json` /
`messages_from_json` without losing anything. Timestamps are integer milliseconds since the
epoch (UTC).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cache
from typing import TYPE_CHECKING, Any, Literal, Protocol, TypeAlias, runtime_checkable

from yiemagent.errors import MessageInputError
from yiemagent.types.alias_doc import describe_alias

if TYPE_CHECKING:
    from pydantic import TypeAdapter

__all__ = [
    "AgentMessage",
    "AssistantContent",
    "AssistantMessage",
    "BashExecutionMessage",
    "BranchSummaryMessage",
    "CompactionSummaryMessage",
    "Cost",
    "CustomMessage",
    "DocumentContent",
    "ImageContent",
    "Message",
    "StopReason",
    "TextContent",
    "ThinkingContent",
    "ToolCall",
    "ToolResultContent",
    "ToolResultMessage",
    "Usage",
    "UserContent",
    "UserMessage",
    "ensure_unique_tool_call_ids",
    "message_from_dict",
    "message_to_dict",
    "messages_from_json",
    "messages_to_json",
    "now_ms",
    "text_of",
    "to_messages",
    "trailing_tool_turn",
    "transcript_usage",
]


def _text_blocks(content: Any) -> Any:
    """`content` with each text given as a `str` (the whole content, or an item of the list)
    as a `TextContent`, as a `UserMessage` takes it: kept as a `str`, a provider would read
    no block in it and send nothing. Anything else is returned as it is."""
    if isinstance(content, str):
        return [TextContent(content)]
    if type(content) is list:
        for block in content:
            if isinstance(block, str):
                return [TextContent(b) if isinstance(b, str) else b for b in content]
    return content


def now_ms() -> int:
    """Milliseconds since the epoch (UTC): the timestamp unit of every message."""
    return time.time_ns() // 1_000_000


# ── content blocks ──────────────────────────────────────────────────────────


@dataclass(slots=True)
class TextContent:
    """Plain text."""

    text: str
    type: Literal["text"] = "text"


@dataclass(slots=True)
class ImageContent:
    """An image, base64-encoded."""

    data: str
    """Base64 of the image bytes, without a `data:` prefix."""
    mime_type: str
    """For example `image/png`."""
    type: Literal["image"] = "image"


@dataclass(slots=True)
class DocumentContent:
    """A document (a PDF), base64-encoded; read by models whose `Model.input` has "pdf"."""

    data: str
    """Base64 of the file's bytes, without a `data:` prefix."""
    mime_type: str = "application/pdf"
    name: str | None = None
    """The file name it came from, when known (some APIs want one with the data)."""
    type: Literal["document"] = "document"


@dataclass(slots=True)
class ThinkingContent:
    """Reasoning the model showed before answering."""

    thinking: str
    signature: str | None = None
    """Provider signature (Anthropic); only sent back to the model that produced it."""
    redacted: bool = False
    """The provider withheld the text (Anthropic's redacted thinking): `thinking` is empty
    and `signature` holds the opaque data, sent back as it came."""
    type: Literal["thinking"] = "thinking"


@dataclass(slots=True)
class ToolCall:
    """A tool call requested by the model, inside an `AssistantMessage`."""

    id: str
    name: str
    arguments: dict[str, Any] = field(default_factory=dict)
    """Parsed arguments; always a dict, also while streaming (parsed from partial JSON)."""
    partial_json: str | None = None
    """The raw argument text as streamed, while the call is still arriving."""
    thought_signature: str | None = None
    """Gemini's opaque signature of the thinking behind the call (pi's `thoughtSignature`),
    sent back with the call to the model that made it, which refuses the call without it;
    through OpenRouter, the JSON of its `reasoning_details` entry for the call."""
    type: Literal["toolCall"] = "toolCall"


# Plain unions: pydantic (imported lazily, only to (de)serialise) tells them apart by the tag.
UserContent: TypeAlias = TextContent | ImageContent | DocumentContent
describe_alias(__name__, "UserContent", "A part of a user message: text, an image or a document.")
ToolResultContent: TypeAlias = TextContent | ImageContent
describe_alias(__name__, "ToolResultContent", "A part of a tool result: text or an image.")
AssistantContent: TypeAlias = TextContent | ThinkingContent | ToolCall
describe_alias(
    __name__, "AssistantContent", "A part of an assistant message: text, thinking or a tool call."
)

# ── usage ───────────────────────────────────────────────────────────────────


@dataclass(slots=True)
class Cost:
    """Cost of a call in USD, from the model's price per million tokens."""

    input: float = 0.0
    output: float = 0.0
    cache_read: float = 0.0
    cache_write: float = 0.0
    total: float = 0.0


@dataclass(slots=True)
class Usage:
    """Token counts (tokens) and cost (USD) of one model call."""

    input: int = 0
    """Prompt tokens not read from the cache."""
    output: int = 0
    cache_read: int = 0
    """Prompt tokens read from the provider's prompt cache."""
    cache_write: int = 0
    """Prompt tokens written to the cache (Anthropic; OpenAI reports none)."""
    total_tokens: int = 0
    """`input + output + cache_read + cache_write`, as the providers fill it."""
    cost: Cost = field(default_factory=Cost)
    reasoning: int = 0
    """Output tokens the model spent reasoning, counted in `output` too (OpenAI's
    `reasoning_tokens`, both APIs; 0 where the provider does not count them apart, as
    Anthropic, whose thinking is in `output_tokens` only)."""

    @property
    def prompt_tokens(self) -> int:
        """Every prompt token: `input + cache_read + cache_write` (tokens), whether the
        provider's cache served it, stored it or neither."""
        return self.input + self.cache_read + self.cache_write

    def add(self, other: Usage) -> None:
        """Add `other`'s token counts and costs (USD) to this one, in place: the one way
        usages are summed (over a transcript, a session, a batch task)."""
        self.input += other.input
        self.output += other.output
        self.cache_read += other.cache_read
        self.cache_write += other.cache_write
        self.total_tokens += other.total_tokens
        self.reasoning += other.reasoning
        cost, more = self.cost, other.cost
        cost.input += more.input
        cost.output += more.output
        cost.cache_read += more.cache_read
        cost.cache_write += more.cache_write
        cost.total += more.total


# ── messages ────────────────────────────────────────────────────────────────

StopReason: TypeAlias = Literal[
    "stop", "length", "toolUse", "error", "aborted", "tool_use_terminated"
]
describe_alias(
    __name__,
    "StopReason",
    """Why an assistant message ended. `tool_use_terminated` only appears in the message an Agent
returns when a batch terminated the run; it is never sent to a model.""",
)


@dataclass(slots=True, init=False)
class UserMessage:
    """A user turn. `content` given as a `str` is stored as one `TextContent` (so is a `str`
    in the list)."""

    content: list[UserContent]
    timestamp: int
    role: Literal["user"]

    def __init__(
        self,
        content: str | list[UserContent],
        timestamp: int | None = None,
        role: Literal["user"] = "user",
    ) -> None:
        self.content = _text_blocks(content if isinstance(content, str) else list(content))
        self.timestamp = now_ms() if timestamp is None else timestamp
        self.role = role


@dataclass(slots=True)
class AssistantMessage:
    """A model turn: text, thinking and tool calls, with usage and stop reason. Text in
    `content` given as a `str` (the whole content or an item) is stored as `TextContent`."""

    content: list[AssistantContent] = field(default_factory=list)
    api: str = ""
    provider: str = ""
    model: str = ""
    usage: Usage = field(default_factory=Usage)
    stop_reason: StopReason = "stop"
    error_message: str | None = None
    """What went wrong, with stop reason "error" or "aborted" (and the reply of a terminated
    batch)."""
    timestamp: int = field(default_factory=now_ms)
    """When the model call started (ms since the epoch)."""
    role: Literal["assistant"] = "assistant"
    duration_ms: int | None = None
    """How long the model call took (ms), set by the loop; None when unknown."""
    agent: str | None = None
    """The name of the agent that wrote it (an `Agent` sets it), else None."""
    details: dict[str, Any] = field(default_factory=dict)
    """What the provider or the run did beyond the model's text, for the application and the
    trace; never sent to a model. The keys written:

    - `"local_rules"` (the embedded provider): each step its rules took, a list of
      `{"rule", "action", "what"}`.
    - `"nameless_tool_calls"` (the OpenAI Chat Completions provider): the tool calls the
      model streamed arguments for but never named, a list of `{"id", "arguments"}` (the
      raw argument text); they are not run.
    - `"guardrail"` (an `Agent`'s guardrails): on the message a guardrail stopped,
      `{"kind": "input" | "output", "guardrail": name}`."""
    compaction_usage: Usage | None = None
    """What compacting the context for this call spent before it (a `Compactor`'s summary,
    written by a model call of its own; anything a `transform_context` reports through
    `yiemagent.loop.count_spending`), set by the loop; None when nothing was spent. Not part
    of `usage`, which is this call's alone; `transcript_usage` adds both."""

    def __post_init__(self) -> None:
        self.content = _text_blocks(self.content)

    @property
    def tool_calls(self) -> list[ToolCall]:
        """The tool calls in `content`, in order."""
        return [block for block in self.content if isinstance(block, ToolCall)]

    @property
    def text(self) -> str:
        """The message's text: text blocks next to each other are one text in pieces (an
        Anthropic answer split at its citations, OpenAI's `output_text` parts) and are
        joined as they are; text blocks apart (around a tool call or a thinking block) are
        paragraphs, joined by a blank line so that their words do not run together. As
        pydantic-ai's `ModelResponse.text`; "" when there is no text. The answer of a run
        its tool results terminated ("tool_use_terminated") was written by no model: its
        text blocks (the note, then each result's text) are paragraphs each."""
        if self.stop_reason == "tool_use_terminated":
            texts = (b.text for b in self.content if isinstance(b, TextContent))
            return "\n\n".join(text for text in texts if text)
        pieces: list[str] = []
        last: object = None
        for block in self.content:
            if isinstance(block, TextContent):
                if isinstance(last, TextContent):
                    pieces[-1] += block.text
                else:
                    pieces.append(block.text)
            last = block
        return "\n\n".join(piece for piece in pieces if piece)


@dataclass(slots=True)
class ToolResultMessage:
    """The result of one tool call; role "toolResult". Text in `content` given as a `str`
    (the whole content or an item) is stored as `TextContent`."""

    tool_call_id: str
    tool_name: str
    content: list[ToolResultContent] = field(default_factory=list)
    details: Any = field(default_factory=dict)
    """Tool-specific data for the application; never sent to the model."""
    usage: Usage | None = None
    added_tool_names: list[str] | None = None
    """Tools this call registered (writeTool), offered to the model from the next turn."""
    is_error: bool = False
    timestamp: int = field(default_factory=now_ms)
    """When the call ended (ms since the epoch)."""
    role: Literal["toolResult"] = "toolResult"
    duration_ms: int | None = None
    """How long the call took, from its start event to its end event (ms), set by the
    loop; None when unknown."""
    executed_arguments: dict[str, Any] | None = None
    """The arguments the tool ran with when they differ from the model's (repaired,
    coerced by validation, changed by `before_tool_call`), set by the loop; None when they
    are the model's (`ToolCall.arguments`) or the tool did not run. Never sent to a model."""

    def __post_init__(self) -> None:
        self.content = _text_blocks(self.content)


@dataclass(slots=True)
class BashExecutionMessage:
    """A shell command the user ran, shown to the model as user text."""

    command: str
    output: str
    exit_code: int | None = None
    """None when unknown; the model is told a code other than 0."""
    cancelled: bool = False
    truncated: bool = False
    """`output` was cut short; the model is told so."""
    timestamp: int = field(default_factory=now_ms)
    role: Literal["bashExecution"] = "bashExecution"


@dataclass(slots=True)
class CompactionSummaryMessage:
    """A summary that replaces compacted history, shown to the model as user text."""

    summary: str
    tokens_before: int = 0
    """Estimated tokens of the model's view before this compaction (set by `Compactor`)."""
    timestamp: int = field(default_factory=now_ms)
    role: Literal["compactionSummary"] = "compactionSummary"


@dataclass(slots=True)
class BranchSummaryMessage:
    """A summary of an abandoned branch of the conversation, shown to the model as user text."""

    summary: str
    from_id: str = ""
    timestamp: int = field(default_factory=now_ms)
    role: Literal["branchSummary"] = "branchSummary"


@runtime_checkable
class CustomMessage(Protocol):
    """An application's own message type: any object with a `role`; `convert_to_llm` decides
    what the model sees of it (the default drops unknown roles)."""

    @property
    def role(self) -> str:
        """Its tag: a name of the application's own, not a built-in role."""
        ...


Message: TypeAlias = UserMessage | AssistantMessage | ToolResultMessage
describe_alias(
    __name__,
    "Message",
    """What a provider understands.""",
)

AgentMessage: TypeAlias = (
    UserMessage
    | AssistantMessage
    | ToolResultMessage
    | BashExecutionMessage
    | CompactionSummaryMessage
    | BranchSummaryMessage
    | CustomMessage
)
describe_alias(
    __name__,
    "AgentMessage",
    """What the transcript holds: LLM messages plus custom ones.""",
)


@cache
def _adapters() -> tuple[TypeAdapter[Any], TypeAdapter[Any]]:
    # Built on first use: pydantic costs ~150 ms to import and compile, `import yiemagent`
    # must not pay it.
    from typing import Annotated

    from pydantic import Field, TypeAdapter

    known = Annotated[
        UserMessage
        | AssistantMessage
        | ToolResultMessage
        | BashExecutionMessage
        | CompactionSummaryMessage
        | BranchSummaryMessage,
        Field(discriminator="role"),
    ]
    return TypeAdapter(known), TypeAdapter(list[known])


def transcript_usage(messages: Iterable[AgentMessage]) -> Usage:
    """What `messages` spent, summed: each assistant message's `usage` and
    `compaction_usage`, and each tool result's `usage` (a sub-agent's run). The one total of
    a run or a session that every report uses (the CLI, the chat, traces, batches, serve)."""
    total = Usage()
    for message in messages:
        if isinstance(message, AssistantMessage):
            total.add(message.usage)
            if message.compaction_usage is not None:
                total.add(message.compaction_usage)
        elif isinstance(message, ToolResultMessage) and message.usage is not None:
            total.add(message.usage)
    return total


def message_to_dict(message: AgentMessage) -> dict[str, Any]:
    """One message as JSON-ready data (camel-free snake_case keys, tags kept).

    Raises:
        pydantic.PydanticSerializationError: for a custom message type it does not know.
    """
    data: dict[str, Any] = _adapters()[0].dump_python(message, mode="json")
    return data


def message_from_dict(data: Mapping[str, Any]) -> AgentMessage:
    """The message `message_to_dict` produced, or a shorter form of it that the message's
    constructor takes: `content` as a text, or a list holding texts (each a `TextContent`),
    and a user message without `timestamp` (now, in ms), e.g.
    `{"role": "user", "content": "hi"}`.

    Raises:
        MessageInputError: (a `ValueError`) `data` is no known message shape; one line
            naming the role, the field and what is wrong with it.
    """
    from pydantic import ValidationError

    if not isinstance(data, Mapping):
        raise MessageInputError(f"a message is a dict, not {type(data).__name__}")
    if not isinstance(data.get("role"), str):
        raise MessageInputError("not a message: no 'role' (user, assistant, toolResult, ...)")
    given = dict(data)
    content = given.get("content")
    if isinstance(content, str):
        given["content"] = [{"type": "text", "text": content}]
    elif isinstance(content, list):
        given["content"] = [
            {"type": "text", "text": c} if isinstance(c, str) else c for c in content
        ]
    if given.get("role") == "user" and "timestamp" not in given:
        given["timestamp"] = now_ms()
    try:
        message: AgentMessage = _adapters()[0].validate_python(given)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(part) for part in first["loc"])
        problem = f"{where}: {first['msg']}" if where else first["msg"]
        more = exc.error_count() - 1
        also = f" (and {more} more)" if more else ""
        raise MessageInputError(f"not a message: {problem}{also}") from None
    return message


def messages_to_json(messages: list[AgentMessage]) -> bytes:
    """A transcript as a JSON array (UTF-8 bytes)."""
    return _adapters()[1].dump_json(messages)


def messages_from_json(data: str | bytes) -> list[AgentMessage]:
    """The transcript `messages_to_json` produced, losslessly."""
    messages: list[AgentMessage] = _adapters()[1].validate_json(data)
    return messages


def text_of(content: list[Any]) -> str:
    """The text blocks of a content list joined with newlines (images and calls left out)."""
    return "\n".join(block.text for block in content if isinstance(block, TextContent))


def ensure_unique_tool_call_ids(message: AssistantMessage, earlier: Iterable[str] = ()) -> None:
    """Rewrite empty or repeated tool-call ids of `message` in place.

    An empty id becomes `call_<n>` (n = the call's 1-based position); a repeated id becomes
    `<id>_2`, `<id>_3`, …; each new id is checked against every id in the message and in
    `earlier`, the ids of the transcript's earlier calls, which count as repeated too (a
    model that numbers its calls, `call_0` in every reply, gets `call_0_2` in its second),
    so each call of a transcript has an id of its own. The loop applies it once per model
    answer, before `message_end`, so the events, the transcript and the tool results all
    carry the same ids; deterministic, so a stored transcript repaired later gets the same
    ids.
    """
    before = set(earlier)
    calls = [block for block in message.content if isinstance(block, ToolCall)]
    ids = [call.id for call in calls]
    if all(ids) and len(set(ids)) == len(ids) and before.isdisjoint(ids):
        return
    taken = set(ids) | before
    seen: set[str] = set(before)
    for n, call in enumerate(calls, start=1):
        if call.id and call.id not in seen:
            seen.add(call.id)
            continue
        base = call.id or f"call_{n}"
        candidate = None if call.id else base
        k = 1
        while candidate is None or candidate in taken:
            k += 1
            candidate = f"{base}_{k}"
        call.id = candidate
        taken.add(candidate)
        seen.add(candidate)


def trailing_tool_turn(
    messages: Sequence[AgentMessage],
) -> tuple[AssistantMessage, set[str]] | None:
    """The transcript's last assistant message when only tool results follow it, and the
    tool-call ids those results answer; None when another message follows it or
    there is none. What the session repair and the held calls both read."""
    answered: set[str] = set()
    for message in reversed(messages):
        if isinstance(message, ToolResultMessage):
            answered.add(message.tool_call_id)
            continue
        if isinstance(message, AssistantMessage):
            return message, answered
        return None
    return None


def _user_text_dict(item: Mapping[str, Any]) -> AgentMessage:
    if item.get("role", "user") == "user" and isinstance(item.get("content"), str):
        return UserMessage(item["content"])
    raise MessageInputError(
        f"{dict(item)!r:.80} is not a message; a dict must be {{'role': 'user', 'content': str}}"
    )


def to_messages(
    value: Any,
    *,
    what: str = "messages",
    from_dict: Callable[[Mapping[str, Any]], AgentMessage] | None = None,
) -> list[AgentMessage]:
    """A new list of messages: the one coercion of messages given by a user.

    Args:
        value: an iterable whose items are messages (any object with a `str` `role`, custom
            messages included), texts (each a `UserMessage`) or dicts (see `from_dict`).
            Never a text itself: a text is never iterated into characters.
        what: how the error text names `value` ("prompt", "state.messages", ...).
        from_dict: turns a dict item into a message (the `Agent` passes its OpenAI chat
            reader); default: `{"role": "user", "content": "text"}` as a `UserMessage`.

    Raises:
        MessageInputError: `value` is not an iterable of these (also a `TypeError` and a
            `ValueError`); the text names `what` and the item.
    """
    if isinstance(value, str | bytes | Mapping) or not isinstance(value, Iterable):
        raise MessageInputError(f"{what} must be a list of messages, not {type(value).__name__}")
    convert = _user_text_dict if from_dict is None else from_dict
    messages: list[AgentMessage] = []
    for item in value:
        if isinstance(getattr(item, "role", None), str):
            messages.append(item)
        elif isinstance(item, str):
            messages.append(UserMessage(item))
        elif isinstance(item, Mapping):
            try:
                messages.append(convert(item))
            except MessageInputError:
                raise
            except (TypeError, ValueError) as exc:
                raise MessageInputError(f"{what}: {exc}") from exc
        else:
            raise MessageInputError(
                f"{what}: {item!r:.80} is not a message; pass UserMessage/AssistantMessage/... "
                "objects, texts or OpenAI user dicts"
            )
    return messages
