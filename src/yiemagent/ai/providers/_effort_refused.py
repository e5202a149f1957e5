"""A reasoning effort the server does not take for a model, and the one sent in its place.

OpenAI's models each take their own efforts ("minimal" is refused from GPT-5.1 on, "xhigh"
by most), and so do compatible servers (Ollama, vLLM and sglang take low, medium and high;
Kimi refuses "none", DeepSeek "minimal"); the server answers HTTP 400, OpenAI listing the
ones it takes: "Unsupported value: 'minimal' is not supported
with the 'gpt-5.1' model. Supported values are: 'none', 'low', 'medium', and 'high'." The
request of a run's reasoning level then failed every call. Both OpenAI providers open their
stream through `open_choosing_effort`: such a refusal is answered by sending the request
once more with the nearest effort the server listed (`nearest_effort`), which is
remembered for that server and model for the rest of the process and told once as a
warning of this module's logger.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, Final, TypeVar

from yiemagent.ai.providers._sdk_failures import api_error

__all__ = [
    "EFFORT_ORDER",
    "nearest_effort",
    "open_choosing_effort",
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

_CHOSEN: dict[tuple[str, str, str], str] = {}
"""(base URL, model id, effort asked for) → the effort sent in its place, in this process."""


def supported_efforts(exc: BaseException) -> tuple[str, ...] | None:
    """The efforts a server's HTTP 400 refusing the request's reasoning effort says it
    takes, in its order (Ollama's, which lists none: low, medium and high); None for any
    other failure (another status, another parameter, no list of values)."""
    if getattr(exc, "status_code", None) != 400:
        return None
    error = api_error(getattr(exc, "body", None))
    message = error.get("message") if error is not None else None
    if not isinstance(message, str):
        return None
    param = str(error.get("param") or "") if error is not None else ""
    ollama = "invalid reasoning value" in message.lower()
    if "effort" not in param and "effort" not in message and not ollama:
        return None
    listed = _LISTED.search(message)
    values = re.findall(r"""["'](\w+)["']""", listed.group(1)) if listed else []
    return tuple(values) or (_OLLAMA_EFFORTS if ollama else None)


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


async def open_choosing_effort(
    open_once: Callable[[], Awaitable[T]], base_url: str, body: dict[str, Any]
) -> T:
    """`open_once()`, one attempt at opening the stream of `body`; when the server refuses
    its reasoning effort with HTTP 400 listing those it takes, `body` gets the nearest of
    them and `open_once()` runs once more. `body` keeps that effort, so a retry of the call
    does not ask for the refused one, and so does every later request of the process to
    that server and model.

    Raises:
        Exception: what `open_once` raised, when it is no such refusal or lists no effort
            to send instead.
    """
    asked = request_effort(body)
    if asked is None:
        return await open_once()
    key = (base_url, str(body.get("model")), asked)
    known = _CHOSEN.get(key)
    if known is not None:
        _set_effort(body, known)
        return await open_once()
    try:
        return await open_once()
    except Exception as exc:
        supported = supported_efforts(exc)
        chosen = nearest_effort(asked, supported) if supported else None
        if chosen is None or chosen == asked:
            raise
        _CHOSEN[key] = chosen
        logger.warning(
            "%s takes no reasoning effort %r (only %s): %r is sent instead",
            body.get("model"),
            asked,
            ", ".join(supported or ()),
            chosen,
        )
        _set_effort(body, chosen)
    return await open_once()
