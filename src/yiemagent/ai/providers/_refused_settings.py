"""Settings of a request that a server refuses for a model, and what is sent instead.

Both OpenAI providers open their stream through `open_adapting`: a refusal (HTTP 400) of
one of these settings is answered by sending the request once more without it, or with
what the server takes, remembered for that server and model for the rest of the process
and told once as a warning of this module's logger.

- The reasoning effort: OpenAI's models each take their own ("minimal" is refused from
  GPT-5.1 on, "xhigh" by most), and so do compatible servers (Ollama, vLLM and sglang take
  low, medium and high; Kimi refuses "none", DeepSeek "minimal"); OpenAI lists the ones it
  takes: "Unsupported value: 'minimal' is not supported with the 'gpt-5.1' model.
  Supported values are: 'none', 'low', 'medium', and 'high'." The nearest listed effort
  is sent (`nearest_effort`).
- `prompt_cache_retention` (`cache_retention="long"`): only some OpenAI models keep a
  prompt cache for 24 hours, and the others (and GPT-5.6 on, which replaced the field)
  refuse the field: it is left out, and the server keeps its cache as long as it does.
- `temperature` and `max_tokens` to OpenAI's reasoning models behind another server (Azure
  OpenAI, GitHub Models, a proxy; a deployment's name does not tell the model): they take
  only the default temperature ("Only the default (1) value is supported"), which is then
  left out, and their output limit only as `max_completion_tokens` ("Use
  'max_completion_tokens' instead"), which is then sent in its place.
- A model's reasoning sent back on its assistant messages (`reasoning`,
  `reasoning_content`: DeepSeek and Kimi require it): Groq and Cerebras stream it so but
  refuse the field there ("'messages.2' : … property 'reasoning' is unsupported"); it is
  then left off every message (the transcript keeps it). The other way round, DeepSeek
  (thinking) and Kimi require `reasoning_content` on every assistant message ("The
  `reasoning_content` in the thinking mode must be passed back to the API."), which a
  proxy in front of them (OpenRouter, LiteLLM) does not make up: an empty one then goes
  on each assistant message that has no reasoning.

A refusal is read from the API's error object and, behind a router, from the error of the
provider behind it (OpenRouter's "Provider returned error" holds it in `metadata.raw`).

Without this, the request of a run's reasoning level or retention failed every call.
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any, Final, TypeVar

from yiemagent.ai.providers._sdk_failures import api_error, upstream_error

__all__ = [
    "DROPPABLE",
    "EFFORT_ORDER",
    "MESSAGE_FIELDS",
    "RENAMED",
    "fill_reasoning",
    "nearest_effort",
    "open_adapting",
    "reasoning_required",
    "refused_field",
    "refused_message_field",
    "renamed_field",
    "request_effort",
    "supported_efforts",
]

logger = logging.getLogger(__name__)

T = TypeVar("T")

EFFORT_ORDER: Final = ("none", "minimal", "low", "medium", "high", "xhigh", "max")
"""The OpenAI APIs' reasoning efforts, least first."""

_LISTED = re.compile(
    r"(?:supported values are|input should be|must be(?: one of)?)\W{0,3}"
    r"""((?:(?:\s*(?:,|\band\b|\bor\b))*\s*["']\w+["'])+)""",
    re.IGNORECASE,
)
"""The list of values in a refusal: OpenAI's "Supported values are: 'none', 'low', …",
pydantic's "Input should be 'low', 'medium' or 'high'" (vLLM, sglang), "must be …"."""

_OLLAMA_EFFORTS: Final = ("low", "medium", "high")
"""What Ollama's "invalid reasoning value: 'minimal'" means, when it lists nothing."""

DROPPABLE: Final = ("prompt_cache_retention", "temperature")
"""Fields a request goes on without when the server refuses them for the model."""

MESSAGE_FIELDS: Final = (
    "reasoning_content",
    "reasoning",
    "reasoning_text",
    "reasoning_details",
    "thinking_blocks",
)
"""Fields of an assistant message that a request goes on without when the server refuses
them (the reasoning a model gets back)."""

_UNSUPPORTED_PROPERTY = re.compile(r"property '(?:[\w\[\]]+\.)*(\w+)' is unsupported")
"""Groq's and Cerebras' refusal of a property, by its name or its path (`messages.2.x`)."""

_REQUIRED_REASONING = re.compile(
    r"reasoning_content.{0,80}?(?:must be passed back|is missing)", re.IGNORECASE | re.DOTALL
)
"""DeepSeek's and Kimi's refusal of an assistant message without `reasoning_content`,
also as a proxy's error passes it on (OpenRouter: in `metadata.raw`)."""

RENAMED: Final = {"max_tokens": "max_completion_tokens"}
"""A field → the name it goes under when the server refuses it for the model, naming that
one."""

_CHOSEN: dict[tuple[str, str, str], str] = {}
"""(base URL, model id, effort asked for) → the effort sent in its place, in this process."""
_DROPPED: set[tuple[str, str, str]] = set()
"""(base URL, model id, field) of the `DROPPABLE` fields refused, in this process."""
_RENAMED: set[tuple[str, str, str]] = set()
_LEFT_OFF: set[tuple[str, str, str]] = set()
_REQUIRED: set[tuple[str, str]] = set()
"""(base URL, model id) of the servers that required `reasoning_content`, in this process."""
"""(base URL, model id, field) of the `MESSAGE_FIELDS` refused, in this process."""
"""(base URL, model id, field) of the `RENAMED` fields refused, in this process."""


def _refusals(exc: BaseException) -> list[tuple[str, str]]:
    """`(param, message)` of each error a server's HTTP 400 holds: the API's error object,
    then the error of the provider behind a router (`upstream_error`); none for another
    failure."""
    if getattr(exc, "status_code", None) != 400:
        return []
    error = api_error(getattr(exc, "body", None))
    errors = [error, upstream_error(error)] if error is not None else []
    return [
        (str(each.get("param") or ""), str(each.get("message") or ""))
        for each in errors
        if each is not None
    ]


def supported_efforts(exc: BaseException) -> tuple[str, ...] | None:
    """The efforts a server's HTTP 400 refusing the request's reasoning effort says it
    takes, in its order (Ollama's, which lists none: low, medium and high); None for any
    other failure (another status, another parameter, no list of values)."""
    for param, message in _refusals(exc):
        ollama = "invalid reasoning value" in message.lower()
        if "effort" not in param and "effort" not in message and not ollama:
            continue
        listed = _LISTED.search(message)
        values = re.findall(r"""["'](\w+)["']""", listed.group(1)) if listed else []
        if values or ollama:
            return tuple(values) or _OLLAMA_EFFORTS
    return None


def nearest_effort(asked: str, supported: Sequence[str]) -> str | None:
    """The effort of `supported` closest to `asked` in `EFFORT_ORDER` (of two as close, the
    lesser); never "none", which turns reasoning off, unless asked for. None when no effort
    of `supported` is one of `EFFORT_ORDER`, or `asked` is not."""
    if asked not in EFFORT_ORDER:
        return None
    position = EFFORT_ORDER.index(asked)
    known = [
        value
        for value in supported
        if value in EFFORT_ORDER and (value != "none" or asked == "none")
    ]
    if not known:
        return None
    return min(
        known,
        key=lambda value: (abs(EFFORT_ORDER.index(value) - position), EFFORT_ORDER.index(value)),
    )


def request_effort(body: dict[str, Any]) -> str | None:
    """The reasoning effort `body` asks for: `reasoning_effort` (Chat Completions) or
    `reasoning.effort` (the Responses API, OpenRouter); None when it asks for none."""
    effort = body.get("reasoning_effort")
    reasoning = body.get("reasoning")
    if effort is None and isinstance(reasoning, dict):
        effort = reasoning.get("effort")
    return effort if isinstance(effort, str) else None


def _set_effort(body: dict[str, Any], effort: str) -> None:
    if "reasoning_effort" in body:
        body["reasoning_effort"] = effort
    else:
        body["reasoning"] = {**body["reasoning"], "effort": effort}


def refused_field(exc: BaseException) -> str | None:
    """The `DROPPABLE` field a server's HTTP 400 refuses (its `param`, or named in its
    message: "prompt_cache_retention is not supported on this model"), or None."""
    for param, message in _refusals(exc):
        for name in DROPPABLE:
            if name == param or name in message:
                return name
    return None


def renamed_field(exc: BaseException) -> tuple[str, str] | None:
    """`(field, its new name)` of `RENAMED` when a server's HTTP 400 refuses the field (its
    `param`, or it is quoted in the message) and names the other: "Unsupported parameter:
    'max_tokens' is not supported with this model. Use 'max_completion_tokens' instead."."""
    for param, message in _refusals(exc):
        for name, new_name in RENAMED.items():
            refused = param == name or f"'{name}'" in message or f"`{name}`" in message
            if refused and new_name in message:
                return name, new_name
    return None


def refused_message_field(exc: BaseException, body: Mapping[str, Any]) -> str | None:
    """The `MESSAGE_FIELDS` field a server's HTTP 400 refuses ("property 'reasoning' is
    unsupported", "property 'messages.2.assistant.reasoning_content' is unsupported") when
    a message of `body` has it, else None."""
    for _, message in _refusals(exc):
        for name in _UNSUPPORTED_PROPERTY.findall(message):
            if name in MESSAGE_FIELDS and _leave_off(body, name, dry_run=True):
                return str(name)
    return None


def reasoning_required(exc: BaseException, body: Mapping[str, Any]) -> bool:
    """Whether a server's HTTP 400 requires `reasoning_content` on assistant messages that
    `body` sends without any reasoning (`fill_reasoning` would change it)."""
    if getattr(exc, "status_code", None) != 400:
        return False
    error = api_error(getattr(exc, "body", None))
    said = json.dumps(error, ensure_ascii=False) if error is not None else ""
    return _REQUIRED_REASONING.search(said) is not None and fill_reasoning(body, dry_run=True)


def fill_reasoning(body: Mapping[str, Any], *, dry_run: bool = False) -> bool:
    """Give each assistant message of `body` that has no reasoning field an empty
    `reasoning_content` (with `dry_run`, only look); whether one had none."""
    found = False
    for message in body.get("messages") or ():
        if not (isinstance(message, dict) and message.get("role") == "assistant"):
            continue
        if not any(name in message for name in MESSAGE_FIELDS):
            found = True
            if not dry_run:
                message["reasoning_content"] = ""
    return found


def _leave_off(body: Mapping[str, Any], name: str, *, dry_run: bool = False) -> bool:
    """Take the field `name` off every message of `body` (with `dry_run`, only look);
    whether a message had it."""
    found = False
    for message in body.get("messages") or ():
        if isinstance(message, dict) and name in message:
            found = True
            if not dry_run:
                del message[name]
    return found


async def open_adapting(
    open_once: Callable[[], Awaitable[T]], base_url: str, body: dict[str, Any]
) -> T:
    """`open_once()`, one attempt at opening the stream of `body`, adapted to what the
    server refuses for the model: a refused reasoning effort becomes the nearest the server
    lists, a refused `DROPPABLE` field is left out, a refused `RENAMED` field goes under
    its new name, a refused `MESSAGE_FIELDS` field is taken off the messages, a required
    `reasoning_content` is given to those without reasoning, and
    `open_once()` runs again (once per refusal). `body` keeps the change, so a retry of
    the call does not ask again, and so does every later request of the process to that
    server and model.

    Raises:
        Exception: what `open_once` raised, when it is no such refusal (or an effort
            refusal that lists none to send instead).
    """
    model = str(body.get("model"))
    for name in DROPPABLE:
        if name in body and (base_url, model, name) in _DROPPED:
            del body[name]
    for name, new_name in RENAMED.items():
        if name in body and (base_url, model, name) in _RENAMED:
            body[new_name] = body.pop(name)
    for name in MESSAGE_FIELDS:
        if (base_url, model, name) in _LEFT_OFF:
            _leave_off(body, name)
    if (base_url, model) in _REQUIRED:
        fill_reasoning(body)
    asked = request_effort(body)
    known = _CHOSEN.get((base_url, model, asked)) if asked is not None else None
    if known is not None:
        _set_effort(body, known)
    for _ in range(len(DROPPABLE) + len(RENAMED) + len(MESSAGE_FIELDS) + 2):
        try:
            return await open_once()
        except Exception as exc:
            if not _adapt(exc, base_url, body):
                raise
    return await open_once()


def _adapt(exc: BaseException, base_url: str, body: dict[str, Any]) -> bool:
    """Change `body` for the refusal `exc`, remembered and told once; whether it changed."""
    model = str(body.get("model"))
    renamed = renamed_field(exc)
    if renamed is not None and renamed[0] in body:
        name, new_name = renamed
        body[new_name] = body.pop(name)
        _RENAMED.add((base_url, model, name))
        logger.warning("%s refuses %s: %s is sent in its place", model, name, new_name)
        return True
    if reasoning_required(exc, body):
        fill_reasoning(body)
        _REQUIRED.add((base_url, model))
        logger.warning(
            "%s requires reasoning_content on every assistant message:"
            " an empty one is sent where none is known",
            model,
        )
        return True
    on_messages = refused_message_field(exc, body)
    if on_messages is not None:
        _leave_off(body, on_messages)
        _LEFT_OFF.add((base_url, model, on_messages))
        logger.warning(
            "%s refuses %s on its messages: earlier turns' reasoning is not sent",
            model,
            on_messages,
        )
        return True
    field = refused_field(exc)
    if field is not None and field in body:
        del body[field]
        _DROPPED.add((base_url, model, field))
        logger.warning("%s refuses %s: it is not sent", model, field)
        return True
    asked = request_effort(body)
    supported = supported_efforts(exc) if asked is not None else None
    chosen = nearest_effort(asked, supported) if asked is not None and supported else None
    if asked is None or chosen is None or chosen == asked:
        return False
    _CHOSEN[(base_url, model, asked)] = chosen
    logger.warning(
        "%s takes no reasoning effort %r (only %s): %r is sent instead",
        model,
        asked,
        ", ".join(supported or ()),
        chosen,
    )
    _set_effort(body, chosen)
    return True
