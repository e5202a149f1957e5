"""What a failed call of an SDK provider means (DESIGN §8): whether it is retried and
what its error message says. The `openai` and `anthropic` SDKs raise the same family of
errors (`APIStatusError` with `status_code`, `body`, `message` and `response`;
`APIConnectionError`), so both providers read them here, each passing its SDK module.
When and how often a retry happens is `_retry.py`'s business.
"""

from __future__ import annotations

import contextlib
import json
import re
from types import ModuleType
from typing import Any

from yiemagent.ai._retry import (
    RetryDecision,
    is_retryable_status,
    parse_retry_after_ms,
    transport_error_types,
)
from yiemagent.errors import exception_summary, refused_here, refused_text

__all__ = [
    "MAX_DETAIL_CHARS",
    "api_error",
    "body_error_text",
    "connection_error_text",
    "describe_sdk_failure",
    "json_body_text",
    "sdk_retry_decision",
    "stream_error_status",
    "upstream_error",
]


def sdk_retry_decision(exc: BaseException, sdk: ModuleType) -> RetryDecision | None:
    """Whether `sdk`'s failure `exc` is retried: an HTTP status error when
    `is_retryable_status` (after the delay its `retry-after` headers ask for, ms), a lost
    connection (the SDK's `APIConnectionError` or a transport error) always; None (not
    retried) for anything else. A 429 for a spent quota or credit (`insufficient_quota`)
    is not retried: waiting does not refill it. A response's `x-should-retry` header
    ("true" / "false") decides before all that, as in the SDKs whose own retries ours
    replace: the server knows when a request already had its effect. A connection that a
    server on this machine refused (`refused_here`) is not retried: nothing listens at that
    port, and the user should hear so at once. A provider checks its own in-stream errors
    first."""
    if isinstance(exc, sdk.APIStatusError):
        status: int = exc.status_code
        headers = exc.response.headers
        should = str(headers.get("x-should-retry", "")).lower()
        if should == "false" or (
            should != "true" and (not is_retryable_status(status) or _quota_spent(exc.body))
        ):
            return None
        return RetryDecision(f"HTTP {status}", parse_retry_after_ms(headers))
    if isinstance(exc, (sdk.APIConnectionError, *transport_error_types())):
        if refused_here(exc) is not None:
            return None
        return RetryDecision("connection error", connection=True)
    return None


_QUOTA_SPENT = frozenset({"insufficient_quota"})
"""Error `code`s and `type`s that say the account's quota or credit is spent (OpenAI's,
sent with HTTP 429), not that requests came too fast."""


def api_error(body: object) -> dict[str, Any] | None:
    """The API's error object in a failure's `body`: the object under `error`
    (`{"error": {"type", "message", "code"}}`), or the body itself when it has no `error`
    (a stream's `error` event is the object); None when the body is no object or its
    `error` is not one (Ollama's `{"error": "text"}`: `body_error_text`). A list whose first
    item is such an object stands for it: Gemini's OpenAI-compatible endpoint sends
    `[{"error": {"code", "message", "status"}}]`."""
    if isinstance(body, list) and body and isinstance(body[0], dict):
        body = body[0]
    error = body.get("error", body) if isinstance(body, dict) else None
    return error if isinstance(error, dict) else None


_STATUS_OF_ERROR_TYPE: dict[str, int] = {
    "invalid_request_error": 400,
    "authentication_error": 401,
    "permission_error": 403,
    "not_found_error": 404,
    "request_too_large": 413,
    "rate_limit_error": 429,
    "rate_limit_exceeded": 429,
    "api_error": 500,
    "server_error": 500,
    "internal_error": 500,
    "server_overloaded": 503,
    "overloaded_error": 529,
}
"""The HTTP status each API error `type` is sent with when it comes as a status (the
Anthropic and OpenAI error types)."""


def stream_error_status(body: object) -> int | None:
    """The HTTP status that an error sent inside an answer's stream (after an HTTP 200)
    stands for, from its `body`: a `code` that is an HTTP error status (OpenRouter passes
    an upstream's so), else the status its error `type` is sent with
    (`"overloaded_error"` → 529); None when it names neither. A fallback model moves on
    for such an error as for the same status sent as one."""
    error = api_error(body)
    if error is None:
        return None
    code = error.get("code")
    if isinstance(code, int) and not isinstance(code, bool) and 400 <= code <= 599:
        return code
    kind = error.get("type")
    return _STATUS_OF_ERROR_TYPE.get(kind) if isinstance(kind, str) else None


def _quota_spent(body: object) -> bool:
    error = api_error(body)
    if error is None:
        return False
    return any(
        isinstance(value, str) and value in _QUOTA_SPENT
        for value in (error.get("code"), error.get("type"))
    )


def describe_sdk_failure(exc: BaseException, sdk: ModuleType, *, error_type: bool = False) -> str:
    """The error message of `sdk`'s failure `exc` (`run_guarded` has already handled our own
    failures, `plain_failure_text`).

    An HTTP status error says "HTTP {status} from the server: {detail}" (a 404 names the
    method and URL it answered; "the server sent an error in the stream: {detail}" for
    status 200, an `error` event of the stream), the
    detail being the API's `{"error": {"message"}}` (prefixed with its `type` when
    `error_type`, followed by the call the model wrote when the API could not parse it:
    Groq's `failed_generation`), else `body_error_text`, else the SDK's message. A
    connection error says `connection_error_text`; anything else "{class}: {text}".
    """
    if isinstance(exc, sdk.APIStatusError):
        body = exc.body
        error = api_error(body)
        if error is not None and error.get("message"):
            kind = error.get("type") if error_type else None
            detail = (f"{kind}: " if kind else "") + str(error["message"])
            detail += _upstream_text(error)
            written = error.get("failed_generation")  # Groq: the call it could not parse
            if isinstance(written, str) and written.strip():
                detail += f" The model wrote: {written[:MAX_DETAIL_CHARS]}"
        else:
            detail = body_error_text(body) or str(exc.message)
        if exc.status_code == 200:
            return f"the server sent an error in the stream: {detail}"
        if exc.status_code == 404:  # often a base URL without its API root (/v1): say where
            return f"HTTP 404 from the server{_where(exc)}: {detail}"
        return f"HTTP {exc.status_code} from the server: {detail}"
    if isinstance(exc, sdk.APIConnectionError):
        return connection_error_text(exc)
    upstream = _upstream_text(api_error(getattr(exc, "body", None)) or {})
    return exception_summary(exc) + upstream


def upstream_error(error: dict[str, Any]) -> dict[str, Any] | None:
    """The error of the provider behind a router, as an API error object: OpenRouter
    answers "Provider returned error" and puts the provider's own error in `metadata.raw`
    (its JSON as text, or text: then `{"message": text}`). None when `error` has none."""
    metadata = error.get("metadata")
    raw = metadata.get("raw") if isinstance(metadata, dict) else None
    if isinstance(raw, str):
        with contextlib.suppress(ValueError):
            raw = json.loads(raw)
    inner = api_error(raw)
    if inner is not None and isinstance(inner.get("message"), str):
        return inner
    said = body_error_text(raw)
    return {"message": said} if said else None


def _upstream_text(error: dict[str, Any]) -> str:
    """What the provider behind a router said (`upstream_error`), as " (Provider: text)"
    after the router's message, the provider named by `metadata.provider_name`; "" when
    the error has none."""
    metadata = error.get("metadata")
    inner = upstream_error(error)
    said = inner.get("message") if inner is not None else None
    if not isinstance(said, str) or not said.strip():
        return ""
    said = " ".join(said.split())[:MAX_DETAIL_CHARS]
    name = metadata.get("provider_name") if isinstance(metadata, dict) else None
    return f" ({name}: {said})" if isinstance(name, str) and name else f" ({said})"


def _where(exc: BaseException) -> str:
    """The request a status error answered, as " (POST http://host/v1/chat/completions)"."""
    request = getattr(getattr(exc, "response", None), "request", None)
    url, method = getattr(request, "url", None), getattr(request, "method", "")
    return f" ({method} {url})" if url else ""


_TITLE = re.compile(r"<title[^>]*>(.*?)</title>", re.IGNORECASE | re.DOTALL)
_TAG = re.compile(r"<[^>]+>")
MAX_DETAIL_CHARS = 500
"""Longest server-sent error text kept in an error message."""


def body_error_text(body: object) -> str | None:
    """The error text a server sent as a body that is not the API's JSON error: plain text,
    an HTML page (its title, else its text), `{"error": "..."}` (Ollama), `{"detail": ...}`;
    whitespace collapsed, at most `MAX_DETAIL_CHARS`. None when there is none."""
    if isinstance(body, dict):
        value = body.get("error")
        if not isinstance(value, str):
            value = body.get("detail") or body.get("message")
        if value is None:
            return None
        text = value if isinstance(value, str) else str(value)
    elif isinstance(body, str):
        text = body
        if "<" in text and ">" in text:
            title = _TITLE.search(text)
            text = title.group(1) if title else _TAG.sub(" ", text)
    else:
        return None
    text = " ".join(text.split())
    if len(text) > MAX_DETAIL_CHARS:
        text = text[:MAX_DETAIL_CHARS] + "…"
    return text or None


def json_body_text(body: object) -> str:
    """What a JSON body that is not the answer asked for says, for an error message: the
    API's error message (`{"error": {"message"}}`, as a proxy that answers a stream request
    with 200 and an error puts it), the text of `{"error": "..."}` or `{"detail": ...}`,
    else the JSON itself; whitespace collapsed, at most `MAX_DETAIL_CHARS`."""
    error = api_error(body) if isinstance(body, dict) and "error" in body else None
    message = error.get("message") if error is not None else None
    if isinstance(message, str) and message.strip():
        text = message
    else:
        text = body_error_text(body) or json.dumps(body, ensure_ascii=False, default=str)
    text = " ".join(text.split())
    if len(text) > MAX_DETAIL_CHARS:
        text = text[:MAX_DETAIL_CHARS] + "…"
    return text


def connection_error_text(exc: BaseException) -> str:
    """What a failed connection says: where it went, the SDK's text and the cause; for a
    connection this machine refused (`refused_here`), that nothing listens there."""
    cause = exc.__cause__
    url = getattr(getattr(exc, "request", None), "url", None)
    where = f" reaching {url}" if url else ""
    if (address := refused_here(exc)) is not None:
        return f"connection error{where}: {refused_text(address)}"
    return f"connection error{where}: {exc}" + (f" ({cause})" if cause else "")
