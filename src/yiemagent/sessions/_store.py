"""The session store contract and the message codec: sessions persisted message by message,
whole after a crash at any moment and resumed from there (DESIGN §8).

A `SessionStore` keeps transcripts keyed by session id, one message at a time, in the order
they entered the transcript; a rewrite of a whole transcript (`replace`) is one transaction;
one writer holds a session at a time (`acquire` / `release`, see `yiemagent.sessions.lease`).
`encode_message` / `decode_message` are the one JSON codec every
store uses (`yiemagent.types.message_to_dict` / `message_from_dict`): a message that cannot
be encoded is skipped with a logged warning rather than failing a run; a stored row that
does not decode fails the `load` with `SessionCorruptError` (`decode_rows`).
"""

from __future__ import annotations

import dataclasses
import json
import logging
import threading
import unicodedata
from collections.abc import Iterable, Sequence
from typing import Any, Protocol, runtime_checkable

import pydantic

from yiemagent.errors import ConfigError, SessionCorruptError, SessionStoreClosedError
from yiemagent.sessions import lease
from yiemagent.types import (
    AgentMessage,
    AssistantMessage,
    BashExecutionMessage,
    BranchSummaryMessage,
    CompactionSummaryMessage,
    TextContent,
    ToolResultMessage,
    UserMessage,
    message_from_dict,
    message_to_dict,
    now_ms,
)

__all__ = [
    "PERSISTED_TYPES",
    "InMemorySessionStore",
    "SessionStateStore",
    "SessionStore",
    "check_session_id",
    "decode_message",
    "decode_rows",
    "encode_message",
    "message_row",
]

logger = logging.getLogger(__name__)

PERSISTED_TYPES: tuple[type[Any], ...] = (
    UserMessage,
    AssistantMessage,
    ToolResultMessage,
    BashExecutionMessage,
    CompactionSummaryMessage,
    BranchSummaryMessage,
)
"""The message classes a store can persist: the ones `message_to_dict` knows.
An application's own custom message types are skipped (with a warning)."""

_MAX_DETAILS_REPR = 2000


def check_session_id(session_id: str) -> str:
    """`session_id` checked before any store sees it: non-empty text without control
    characters or lone surrogates. Some stores cannot hold every character (PostgreSQL text
    holds no NUL; SQLite and PostgreSQL take only UTF-8, which a lone surrogate, as
    `--session` gets from a name in another encoding, is not), an id goes back to an HTTP
    client in a header and is printed on a terminal, and an empty one is no name at all.
    Every entry point that takes a session name checks it here: an
    `Agent(session_store=...)`, `yiem chat --session`, `yiem serve`'s routes, batch tasks.

    Returns:
        `session_id`, unchanged.

    Raises:
        ConfigError: the id is not a str, is empty, or holds a control character (NUL, a
            line break, an escape, ...) or a lone surrogate.
    """
    if (
        not isinstance(session_id, str)
        or not session_id
        or any(unicodedata.category(c) in ("Cc", "Cs") for c in session_id)
    ):
        raise ConfigError(
            "a session id must be non-empty text without control characters or lone "
            f"surrogates, not {session_id!r}"
        )
    return session_id


@runtime_checkable
class SessionStore(Protocol):
    """Where an `Agent` persists its transcript, message by message.

    Contract: `append` makes the message durable before it returns (a crash of the process
    afterwards does not lose it) and keeps the order of appends within a session; `replace`
    swaps the whole transcript in one transaction (old or new after a crash, never a part);
    `load` returns new message objects in that order; sessions never see each other's
    messages. One writer holds a session at a time: `acquire` takes the session's lease
    (taking over one whose holder is gone) or raises `SessionBusyError`, and every write
    raises `SessionBusyError` while another live holder has the lease. Implementations may
    be called from the agent's event loop thread, so each call should be short. Methods may
    raise on I/O failure; the `Agent` logs failures during a run and goes on (see
    `docs/sessions.md`).
    """

    def load(self, session_id: str) -> list[AgentMessage]:
        """The session's messages in the order they were appended (`[]` for an unknown id)."""
        ...

    def append(self, session_id: str, message: AgentMessage) -> None:
        """Persist one message at the end of the session (durably, before returning). A
        message type the codec cannot serialise is skipped with a logged warning."""
        ...

    def replace(self, session_id: str, messages: Sequence[AgentMessage]) -> None:
        """Make `messages` the session's whole transcript, atomically (all or nothing)."""
        ...

    def clear(self, session_id: str) -> None:
        """Delete every message of the session (no-op for an unknown id)."""
        ...

    def acquire(self, session_id: str) -> str:
        """Become the session's one writer; return the lease token. Raises
        `SessionBusyError` while a live holder has it."""
        ...

    def release(self, session_id: str, token: str) -> None:
        """Give the lease back (no-op unless `token` holds it)."""
        ...

    def list_sessions(self) -> list[str]:
        """The ids of the sessions that hold at least one message, oldest first."""
        ...

    def close(self) -> None:
        """Release the store's resources; idempotent. Afterwards every other call raises
        `SessionStoreClosedError` (`release` is a no-op)."""
        ...


@runtime_checkable
class SessionStateStore(Protocol):
    """A `SessionStore` that also keeps small named values beside a session's messages (the
    tool calls held for approval). Optional: an agent on a store without these
    methods keeps held calls in memory only (logged).

    Contract: `save_state` is durable when it returns; `clear(session_id)` deletes the
    session's values too.
    """

    def load_state(self, session_id: str, key: str) -> str | None:
        """The value saved under `key` for the session, or `None`."""
        ...

    def save_state(self, session_id: str, key: str, value: str | None) -> None:
        """Save `value` under `key` (`None` deletes it), durably before returning."""
        ...


def encode_message(message: AgentMessage) -> str | None:
    """One message as compact JSON text (`message_to_dict`), or `None` when it cannot be
    persisted: an application's own message type (not in `PERSISTED_TYPES`), logged as a
    warning. An assistant message or tool result whose `content` is a text (not the list of
    blocks its type says) is stored with that text as one `TextContent`, so it loads back.
    A tool result whose `details` are not JSON-serialisable is kept, with `details`
    replaced by `{"unserializable": repr(details)}` (truncated), so its tool call stays
    answered after a resume.
    """
    if not isinstance(message, PERSISTED_TYPES):
        logger.warning(
            "session store: skipping a %s message (role %r): only %s are persisted",
            type(message).__name__,
            getattr(message, "role", None),
            ", ".join(t.__name__ for t in PERSISTED_TYPES),
        )
        return None
    if isinstance(message, AssistantMessage | ToolResultMessage) and isinstance(
        message.content, str
    ):  # a text given as content (UserMessage makes it a block itself): read back as one
        message = dataclasses.replace(message, content=[TextContent(message.content)])
    try:
        return _dumps(message_to_dict(message))
    except Exception as exc:
        if not isinstance(message, ToolResultMessage):
            logger.warning("session store: skipping a %s message: %s", message.role, exc)
            return None
        logger.warning(
            "session store: details of the %r tool result are not JSON-serialisable (%s); "
            "stored as their repr",
            message.tool_name,
            exc,
        )
        data = message_to_dict(_with_details(message, repr(message.details)[:_MAX_DETAILS_REPR]))
        return _dumps(data)


def message_row(message: AgentMessage) -> tuple[str, str, int] | None:
    """(role, JSON text, timestamp in ms) of a stored message row, or `None` when the message
    cannot be encoded (`encode_message`). A message without an integer timestamp gets now."""
    data = encode_message(message)
    if data is None:
        return None
    timestamp = getattr(message, "timestamp", None)
    if not isinstance(timestamp, int):
        timestamp = now_ms()
    return str(getattr(message, "role", "")), data, timestamp


def decode_message(text: str) -> AgentMessage | None:
    """The message `encode_message` produced, or `None` (logged) for data that is not a known
    message shape. A store's `load` uses `decode_rows`, which refuses such data instead."""
    try:
        return message_from_dict(json.loads(text))
    except Exception as exc:
        logger.warning("session store: a stored message does not load: %s", _why(exc))
        return None


def decode_rows(
    rows: Iterable[tuple[object, str]], session_id: str, store: str
) -> list[AgentMessage]:
    """The messages of a session's stored rows, `(row, JSON text)` in order (`row`: how the
    store names it, its `seq`).

    A row that does not load is refused, not skipped: left out, the transcript around it
    would look interleaved (a result whose call is gone), and the next rewrite of the
    session (`replace`) would drop the row for good.

    Raises:
        SessionCorruptError: naming `store`, the session and each row that does not load
            (not JSON, or not a message shape) and why.
    """
    messages: list[AgentMessage] = []
    bad: list[str] = []
    for row, text in rows:
        try:
            messages.append(message_from_dict(json.loads(text)))
        except Exception as exc:
            bad.append(f"row seq={row}: {_why(exc)}")
    if bad:
        raise SessionCorruptError(session_id, bad, store=store)
    return messages


def _why(exc: Exception) -> str:
    """One line on why stored text is not a message."""
    if isinstance(exc, json.JSONDecodeError):
        return f"not valid JSON ({exc})"
    if isinstance(exc, pydantic.ValidationError):
        found = [
            f"{'.'.join(map(str, error['loc'])) or 'message'}: {error['msg']}"
            for error in exc.errors()[:3]
        ]
        return "not a message (" + "; ".join(found) + ")"
    return f"not a message ({exc})"


def _dumps(data: dict[str, Any]) -> str:
    text = json.dumps(data, ensure_ascii=False, separators=(",", ":"))
    if not text.isascii():
        try:
            text.encode("utf-8")
        except UnicodeEncodeError:
            # Lone surrogates (surrogateescape file names, an emoji cut in half): the stores
            # take UTF-8 text, which has none; as \u escapes they load back as they were.
            return json.dumps(data, separators=(",", ":"))
    return text


def _with_details(message: ToolResultMessage, text: str) -> ToolResultMessage:
    return dataclasses.replace(message, details={"unserializable": text})


class InMemorySessionStore:
    """A `SessionStore` in a dict, for tests and ephemeral agents (nothing survives the
    process). Messages are stored encoded, exactly as `SqliteSessionStore` stores them, so
    `load` returns new objects and `append` skips what SQLite would skip. Thread-safe (one lock).
    """

    def __init__(self) -> None:
        self._sessions: dict[str, list[str]] = {}
        self._leases: dict[str, lease.LeaseHolder] = {}
        self._state: dict[tuple[str, str], str] = {}
        self._lock = threading.Lock()  # a collected agent only queues its release
        self._closed = False

    def load(self, session_id: str) -> list[AgentMessage]:
        """The session's messages, in append order (`[]` for an unknown id).

        Raises:
            SessionCorruptError: a stored row does not load (only if changed behind the store).
        """
        with self._lock:
            self._check_open()
            rows = list(self._sessions.get(session_id, ()))
        return decode_rows(enumerate(rows, start=1), session_id, "InMemorySessionStore")

    def append(self, session_id: str, message: AgentMessage) -> None:
        """Add one message at the end of the session (skipped, logged, if not encodable)."""
        text = encode_message(message)
        if text is None:
            return
        with self._lock:
            self._check_open()
            self._sessions.setdefault(session_id, []).append(text)

    def replace(self, session_id: str, messages: Sequence[AgentMessage]) -> None:
        """Make `messages` the session's transcript in one swap (unencodable ones skipped)."""
        rows = [text for text in map(encode_message, messages) if text is not None]
        with self._lock:
            self._check_open()
            if rows:
                self._sessions[session_id] = rows
            else:
                self._sessions.pop(session_id, None)

    def clear(self, session_id: str) -> None:
        """Forget the session's messages and saved values."""
        self.replace(session_id, ())
        with self._lock:
            for key in [k for k in self._state if k[0] == session_id]:
                del self._state[key]

    def acquire(self, session_id: str) -> str:
        """Become the session's one writer (see `SessionStore`); returns the lease token.

        Raises:
            SessionBusyError: another live holder (another `Agent`) has the session.
        """
        lease.settle_releases()  # a collected agent's queued release frees its session now
        with self._lock:
            self._check_open()
            held = self._leases.get(session_id)
            if held is not None and lease.holder_is_alive(held):
                raise lease.busy_error(session_id, held)
            holder = lease.new_holder()
            self._leases[session_id] = holder
        return holder.token

    def release(self, session_id: str, token: str) -> None:
        """Give the lease back (no-op unless `token` holds it)."""
        with self._lock:
            lease.drop(self._leases, session_id, token)

    def load_state(self, session_id: str, key: str) -> str | None:
        """The value saved under `key` for the session, or `None` (`SessionStateStore`)."""
        with self._lock:
            self._check_open()
            return self._state.get((session_id, key))

    def save_state(self, session_id: str, key: str, value: str | None) -> None:
        """Save `value` under `key`; `None` deletes it (`SessionStateStore`)."""
        with self._lock:
            self._check_open()
            if value is None:
                self._state.pop((session_id, key), None)
            else:
                self._state[(session_id, key)] = value

    def list_sessions(self) -> list[str]:
        """Sessions holding at least one message, in the order they were first written."""
        with self._lock:
            self._check_open()
            return [sid for sid, rows in self._sessions.items() if rows]

    def close(self) -> None:
        """Drop everything; the store is unusable afterwards."""
        with self._lock:
            self._closed = True
            self._sessions.clear()
            for holder in self._leases.values():
                lease.forget(holder.token)
            self._leases.clear()
            self._state.clear()

    def _check_open(self) -> None:
        if self._closed:
            raise SessionStoreClosedError(
                "the in-memory session store is closed and its sessions are gone; "
                "start again on a new InMemorySessionStore()"
            )
