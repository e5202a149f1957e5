"""Transcript repair before a provider call (DESIGN R-5.10).

`transform_messages(messages, model, normalize_tool_call_id=...)` returns the messages a
provider can accept:

- assistant messages that ended in "error" or "aborted" are dropped (with them, the results
  of their tool calls become orphans and are dropped too);
- tool-call ids that are empty, or repeat an id used earlier in the transcript, are made
  unique; `normalize_tool_call_id` (e.g. `anthropic_tool_call_id`) is applied to every call
  id, collisions after normalising are made unique too, and every result follows its call
  (results are matched to the calls of the assistant message they answer, in order, so
  duplicate ids are remapped consistently);
- a tool-call name that no API takes back in a transcript (a made-up `multi_tool_use.parallel`,
  `get weather`, an empty one) is sent as `wire_tool_name` makes it, in the call and in its
  result: OpenAI, Anthropic and Bedrock refuse the whole request otherwise, and every later
  turn of the conversation with it (the not-found result still names the original). The
  name it is sent as is never that of a tool offered (`tool_names`): `get.time` sent as a
  real `get_time` would show that tool failing "not found";
- each tool call gets exactly one result, placed right after its assistant message in call
  order: a missing one becomes a synthetic error result "No result provided", user messages
  that came between a call and its result are moved after the results;
- a tool result that answers no call of the preceding assistant message is dropped;
- thinking from another model (provider, api or model id differ) becomes plain text (its
  signature dropped; redacted or empty thinking is dropped); thinking of the same model is
  kept with its signature;
- an assistant message left with no content at all is dropped (providers reject it);
- text and tool calls of one assistant message stay one message.

The input is never mutated; unchanged messages are passed through as the same objects and only
changed ones are rebuilt (no deep copy). Cost is linear in the number of messages and blocks.
"""

from __future__ import annotations

import dataclasses
import logging
import re
from collections import deque
from collections.abc import Callable, Collection, Sequence

from yiemagent.types.messages import (
    AssistantContent,
    AssistantMessage,
    Message,
    TextContent,
    ThinkingContent,
    ToolCall,
    ToolResultMessage,
)
from yiemagent.types.model import Model

__all__ = ["NO_RESULT_TEXT", "anthropic_tool_call_id", "transform_messages", "wire_tool_name"]

logger = logging.getLogger(__name__)

NO_RESULT_TEXT = "No result provided"
"""Text of the synthetic error result given to a tool call that has none."""

_NOT_ANTHROPIC_ID = re.compile(r"[^A-Za-z0-9_-]")
_TOOL_NAME = re.compile(r"[A-Za-z0-9_-]{1,64}")


def _wire_word(text: str) -> str:
    """`text` with each character outside `[A-Za-z0-9_-]` as `_`, cut to 64 characters: the
    shape the APIs take for a tool call's id (Anthropic) and a tool's name (all of them)."""
    return _NOT_ANTHROPIC_ID.sub("_", text)[:64]


def anthropic_tool_call_id(id: str) -> str:
    """`id` made acceptable to the Anthropic API: characters outside `[A-Za-z0-9_-]` become
    `_`, at most 64 characters. (An empty id stays empty; `transform_messages` replaces it.)"""
    return _wire_word(id)


def wire_tool_name(name: str, tool_names: Collection[str] = ()) -> str:
    """`name` as every tool-calling API accepts it in a transcript (`[A-Za-z0-9_-]{1,64}`):
    a name that is so already as is, else its other characters as `_`, at most 64
    characters, and an empty one as `unnamed_tool`.

    A rewritten name that is one of `tool_names` (the tools offered) gets `_1`, `_2`, ...
    in its last characters until it is none of them: a made-up name must not read as a
    call of a real tool. The same arguments give the same name.
    """
    if _TOOL_NAME.fullmatch(name):
        return name
    base = _wire_word(name) or "unnamed_tool"
    wire, number = base, 0
    while wire in tool_names:
        number += 1
        suffix = f"_{number}"
        wire = base[: 64 - len(suffix)] + suffix
    return wire


class _Ids:
    """Unique, normalised tool-call ids across one transcript."""

    __slots__ = ("_count", "_normalize", "_used")

    def __init__(self, normalize: Callable[[str], str] | None) -> None:
        self._normalize = normalize
        self._used: set[str] = set()
        self._count = 0

    def new(self, original: str) -> str:
        """A unique id for a call whose id was `original` (normalised when it can be)."""
        normalize = self._normalize
        base = normalize(original) if normalize is not None and original else original
        if base and base not in self._used:
            self._used.add(base)
            return base
        base = base or "call"
        for _ in range(1000):  # a normaliser that cannot make ids unique ends the search
            self._count += 1
            number = str(self._count)
            # `base_N`; when the normaliser changes that (a length limit, no "_"), the base
            # shortened to make room for N.
            for candidate in (f"{base}_{number}", base[: max(0, len(base) - len(number))] + number):
                if normalize is not None:
                    candidate = normalize(candidate)
                if candidate and candidate not in self._used:
                    self._used.add(candidate)
                    return candidate
        candidate = f"{base}_{self._count}"
        self._used.add(candidate)
        return candidate


def _is_same_model(message: AssistantMessage, model: Model) -> bool:
    return (
        message.provider == model.provider
        and message.api == model.api
        and message.model == model.id
    )


def _convert_thinking(
    content: list[AssistantContent], same_model: bool
) -> list[AssistantContent] | None:
    """Content with foreign thinking turned into text; `None` when nothing changes."""
    if same_model or not any(isinstance(b, ThinkingContent) for b in content):
        return None
    out: list[AssistantContent] = []
    for block in content:
        if isinstance(block, ThinkingContent):
            if block.redacted or not block.thinking.strip():
                continue
            out.append(TextContent(block.thinking))
        else:
            out.append(block)
    return out


def transform_messages(
    messages: Sequence[Message],
    model: Model,
    *,
    normalize_tool_call_id: Callable[[str], str] | None = None,
    tool_names: Collection[str] = (),
) -> list[Message]:
    """Repair a transcript for `model` (the rules are in the module docstring).

    Args:
        messages: The LLM messages (after `convert_to_llm`), oldest first; not mutated.
        model: The model about to be called; decides which thinking blocks keep signatures.
        normalize_tool_call_id: Maps a call id to one the provider accepts (e.g.
            `anthropic_tool_call_id`); `None` keeps ids as they are (still made unique).
        tool_names: The names of the tools offered with this call; a made-up name is
            never sent as one of them (see `wire_tool_name`).

    Returns:
        A new list; unchanged messages are the input objects.
    """
    ids = _Ids(normalize_tool_call_id)
    offered = frozenset(tool_names)
    out: list[Message] = []
    calls: list[ToolCall] = []  # calls of the open assistant message (new ids)
    by_original: dict[str, deque[str]] = {}  # original id -> new ids, in call order
    results: dict[str, ToolResultMessage] = {}  # new id -> its result
    deferred: list[Message] = []  # messages that came before all calls were answered
    answered_by: AssistantMessage | None = None

    def flush() -> None:
        nonlocal answered_by
        for call in calls:
            result = results.get(call.id)
            if (
                result is not None
                and result.tool_name != call.name
                and wire_tool_name(result.tool_name, offered) == call.name
            ):
                result = dataclasses.replace(result, tool_name=call.name)
            if result is None:
                assert answered_by is not None
                logger.debug("tool call %s (%s) has no result", call.id, call.name)
                result = ToolResultMessage(
                    tool_call_id=call.id,
                    tool_name=call.name,
                    content=[TextContent(NO_RESULT_TEXT)],
                    is_error=True,
                    timestamp=answered_by.timestamp,
                )
            out.append(result)
        out.extend(deferred)
        calls.clear()
        by_original.clear()
        results.clear()
        deferred.clear()
        answered_by = None

    for message in messages:
        if isinstance(message, AssistantMessage):
            flush()
            if message.stop_reason == "error" or message.stop_reason == "aborted":
                logger.debug("dropping assistant message that ended in %s", message.stop_reason)
                continue
            content = message.content
            converted = _convert_thinking(content, _is_same_model(message, model))
            changed = converted is not None
            if converted is not None:
                content = converted
            if not content:
                logger.debug("dropping assistant message with no content")
                continue
            new_content: list[AssistantContent] | None = None
            for index, block in enumerate(content):
                if not isinstance(block, ToolCall):
                    continue
                new_id = ids.new(block.id)
                by_original.setdefault(block.id, deque()).append(new_id)
                new_name = wire_tool_name(block.name, offered)
                if new_id != block.id or new_name != block.name:
                    if new_content is None:
                        new_content = list(content)
                    block = dataclasses.replace(block, id=new_id, name=new_name)
                    new_content[index] = block
                calls.append(block)
            if new_content is not None:
                content, changed = new_content, True
            if changed:
                message = dataclasses.replace(message, content=content)  # every other field kept
            out.append(message)
            if calls:
                answered_by = message
        elif isinstance(message, ToolResultMessage):
            queue = by_original.get(message.tool_call_id)
            if not queue:
                logger.debug("dropping orphan tool result for %s", message.tool_call_id)
                continue
            new_id = queue.popleft()
            if new_id != message.tool_call_id:
                message = dataclasses.replace(message, tool_call_id=new_id)
            results[new_id] = message
        elif calls:
            deferred.append(message)
        else:
            out.append(message)
    flush()
    return out
