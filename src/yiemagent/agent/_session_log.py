"""The `Agent`'s persisted session (DESIGN §10; `Agent(session_store=..., session_id=...)`).

`SessionLog` binds one agent to one session of a store (the `yiemagent.sessions.SessionStore`
contract, used by duck typing: at run time the agent layer imports from the sessions layer
only `check_session_id`, which refuses an empty id or one with control characters). It takes
the session's writer lease when the agent is built (one writer per session: a second one
gets `SessionBusyError`), loads the transcript (refusing an interleaved one with
`SessionCorruptError`, and repairing the tail a crash left: a tool call without a result gets
an error result), appends each message that enters the transcript, rewrites the
session in one transaction (`store.replace`) when the transcript is replaced, clears it
(`store.clear`: the messages and the held-calls record) when it is emptied or reset, and
gives the lease back when the agent is closed (at once) or collected (its finalizer only
queues the release, `yiemagent.sessions.lease.release_soon`: a collection may run inside
the store's own database call, whose locks this thread holds).

Threads: a store call blocks (a locked SQLite file waits up to its `timeout_s`, PostgreSQL up
to `lock_timeout_s`), so none runs on the event loop during a run, where it would stall
every other session of a `yiem serve` and its `/healthz`. After construction (which loads on
the caller's thread: `Agent(...)` is synchronous) each store call of the session runs on the
session's own worker thread, one at a time, in the order it was asked for: the appends of a
run are queued at `message_end` and awaited there (`record`), `close` flushes and releases
there, and the synchronous operations (`rewrite`, `save_held`) wait there for the writes
queued before them. One thread a session keeps the order of its writes without a lock, and a
write, once queued, runs exactly once whatever happens to the task that awaits it.

Failure policy: during a run a store failure is logged and the run goes on (as a failing
listener's does); the messages that failed are retried, in order, before the next message is
written, so the stored transcript heals when the store recovers; what is still waiting when the
agent closes waits in this process for the session's next agent (`carry_over`), which
stores it before anything else when the stored transcript still ends where it was left
(a server builds one agent per request). A write refused with
`SessionBusyError` (the lease is gone: force-released, or taken over while this agent looked
dead) does not heal: it is logged once, nothing more is written, and the agent's next run
raises it (`check_writer`). Operations the user calls outside a run (construction,
`reset()`, assigning `state.messages`) raise, so nothing is lost silently.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import logging
import weakref
from collections.abc import Awaitable, Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from typing import TYPE_CHECKING, ParamSpec, TypeVar

from yiemagent.agent._team import HeldCalls
from yiemagent.errors import ConfigError, SessionBusyError, SessionCorruptError
from yiemagent.types import (
    AgentMessage,
    AssistantMessage,
    TextContent,
    ToolCall,
    ToolResultMessage,
    message_to_dict,
)
from yiemagent.types.messages import trailing_tool_turn

if TYPE_CHECKING:
    from yiemagent.sessions import SessionStore

__all__ = ["HELD_KEY", "INTERRUPTED_CALL_TEXT", "SessionLog", "check_session_store"]

HELD_KEY = "held_tool_calls"
"""The session-state key of the record of tool calls held for approval."""

logger = logging.getLogger(__name__)

_P = ParamSpec("_P")
_T = TypeVar("_T")

INTERRUPTED_CALL_TEXT = (
    "No result: the session was interrupted (the process stopped) before this tool call "
    "finished; run it again if it is still needed"
)
_STORE_METHODS = ("load", "append", "clear", "list_sessions", "close")


def check_session_store(store: object) -> None:
    """Raise `ConfigError` unless `store` has the `SessionStore` methods."""
    missing = [name for name in _STORE_METHODS if not callable(getattr(store, name, None))]
    if missing:
        raise ConfigError(
            f"session_store must be a SessionStore (for example "
            f"yiemagent.sessions.SqliteSessionStore(path)); {type(store).__name__} lacks "
            f"{', '.join(missing)}"
        )


class SessionLog:
    """One agent's session in a store: load once, then append message by message.

    Called from the agent's event loop thread (the event sink at each `message_end`,
    `close`) and from the user's thread (construction, `rewrite`, `save_held`); the store
    calls after construction run on the session's worker thread (see the module docstring).
    """

    __slots__ = (
        "__weakref__",
        "_finalizer",
        "_last_stored",
        "_lease",
        "_pending",
        "_worker",
        "held_record",
        "lost",
        "session_id",
        "store",
    )

    def __init__(self, store: SessionStore, session_id: str) -> None:
        from yiemagent.sessions import check_session_id

        check_session_store(store)
        check_session_id(session_id)
        self.store = store
        self.session_id = session_id
        self._pending: list[AgentMessage] = []
        """Messages whose append failed, retried in order before the next one."""
        self._last_stored: AgentMessage | None = None
        """The last message stored (as stored), which the failed ones follow."""
        self._lease: tuple[Callable[[str, str], object], str] | None = None
        """The store's `release` and the writer lease's token, while the lease is held."""
        self._finalizer: weakref.finalize[..., SessionLog] | None = None
        """Queues the release when the agent is collected without being closed."""
        self.held_record: str | None = None
        """The stored record of tool calls held for approval, read by `open`."""
        self.lost: SessionBusyError | None = None
        """Why this agent writes the session no more: a write refused for its lease."""
        self._worker: ThreadPoolExecutor | None = None
        """The one thread that makes this session's store calls after construction, started
        with the first of them."""

    def _queue(self, call: Callable[_P, _T], *args: _P.args, **kwargs: _P.kwargs) -> Future[_T]:
        """Queue `call` on the session's worker thread, after every call queued before it.

        When the worker thread cannot be started (the process is out of threads or memory)
        `call` runs here, at once: no call is queued before it then, since the worker starts
        with the first call. The executor that failed still holds `call`; it is dropped
        with it, so the call never runs twice, and the next call tries a new one.
        """
        if self._worker is None:
            self._worker = ThreadPoolExecutor(1, thread_name_prefix="yiemagent-session")
        try:
            return self._worker.submit(call, *args, **kwargs)
        except RuntimeError:  # "can't start new thread"
            self._worker.shutdown(wait=False, cancel_futures=True)
            self._worker = None
        done: Future[_T] = Future()
        try:
            done.set_result(call(*args, **kwargs))
        except BaseException as exc:
            done.set_exception(exc)
        return done

    def _in_order(self, call: Callable[_P, _T], *args: _P.args, **kwargs: _P.kwargs) -> _T:
        """`call(...)` after the store calls queued before it, waited for on this thread:
        on the worker once it runs, else (nothing was ever queued) here."""
        if self._worker is None:
            return call(*args, **kwargs)
        return self._queue(call, *args, **kwargs).result()

    async def close(self) -> bool:
        """Store what is still waiting (`flush`), then give the writer lease back
        (`release`), on the worker thread; the worker ends. Never raises (failures are
        logged).

        Returns:
            `flush`'s answer: whether nothing was left unstored.
        """
        done = self._queue(self._flush_and_release)
        try:
            return await _shielded(done)
        finally:
            if self._worker is not None:
                self._worker.shutdown(wait=False)
                self._worker = None

    def _flush_and_release(self) -> bool:
        try:
            return self.flush()
        finally:
            self.release()

    def release(self) -> None:
        """Give the session's writer lease back now (idempotent); the agent writes no more.
        A store call on the calling thread."""
        held, self._lease = self._lease, None
        if held is not None and self._finalizer is not None and self._finalizer.detach():
            release, token = held
            _release_quietly(release, self.session_id, token)

    def _acquire(self) -> None:
        acquire = getattr(self.store, "acquire", None)
        release = getattr(self.store, "release", None)
        if not (callable(acquire) and callable(release)):
            logger.warning(
                "session store %r has no acquire/release: writers of session %r are not "
                "coordinated (docs/sessions.md)",
                self.store,
                self.session_id,
            )
            return
        from yiemagent.sessions import lease

        lease.settle_releases()  # a collected agent's queued release frees its session now
        lease.start_releaser()
        token = acquire(self.session_id)
        self._lease = (release, token)
        self._finalizer = weakref.finalize(
            self, lease.release_soon, release, self.session_id, token
        )

    def open(self, given: Sequence[AgentMessage] | None) -> list[AgentMessage]:
        """The agent's initial transcript.

        `given is None`: the stored transcript, with an error result added (and stored) for each
        tool call of the last assistant message that has none (a crash during the tools), except
        the calls the stored record holds for approval (`held_record`). Otherwise the session
        must be empty and `given` is stored.

        Raises:
            SessionBusyError: another writer (another Agent, here or in another process)
                holds the session.
            SessionCorruptError: a stored row does not load, or the stored transcript is
                interleaved (nothing is changed).
            ConfigError: the store cannot be read or written, or `given` is passed for a
                session that already holds messages.
        """
        try:
            self._acquire()
        except SessionBusyError:
            raise
        except Exception as exc:
            raise ConfigError(f"cannot lock session {self.session_id!r}: {exc}") from exc
        try:
            return self._open(given)
        except BaseException:
            self.release()
            raise

    def _open(self, given: Sequence[AgentMessage] | None) -> list[AgentMessage]:
        from yiemagent.loop import transcript_problems

        try:
            stored = list(self.store.load(self.session_id))
        except SessionCorruptError:  # names the store, the session and the rows
            raise
        except Exception as exc:
            raise ConfigError(
                f"cannot load session {self.session_id!r} from {self.store!r}: {exc}"
            ) from exc
        stored += self._store_carried(stored)
        problems = transcript_problems(stored)
        if problems:
            raise SessionCorruptError(self.session_id, problems)
        if given is not None and stored:
            raise ConfigError(
                f"session {self.session_id!r} already holds {len(stored)} messages; pass "
                "messages=None to resume it, or use another session_id"
            )
        resumed = None
        if given is None:
            self.held_record = self._load_held()
            record = HeldCalls.from_record(self.held_record)
            unanswered = unanswered_tool_results(stored)
            if record.resuming:  # a resume was cut: its decisions answer what it left
                resumed, self.held_record = record, None
                repaired = [record.decided_result(m) for m in unanswered]
            else:
                repaired = [m for m in unanswered if m.tool_call_id not in set(record.ids)]
            messages = [*stored, *repaired]
        else:
            messages = list(given)
        try:
            if len(messages) > len(stored):
                self.rewrite(messages)  # one transaction, as every change of the transcript
        except Exception as exc:
            raise ConfigError(f"cannot write session {self.session_id!r}: {exc}") from exc
        if resumed is not None:  # after the results are stored: a crash here repeats none
            self.save_held(None)
        self._last_stored = persisted_form(messages[-1]) if messages else None
        return messages

    def _store_carried(self, stored: list[AgentMessage]) -> list[AgentMessage]:
        """Store the messages an earlier agent of the session could not (`carry_over`)
        when `stored` still ends where it left them; returns those appended now.

        Raises:
            ConfigError: an append failed (the messages wait on for the next agent).
        """
        carried = _carried.pop((id(self.store), self.session_id), None)
        if carried is None or carried.store() is not self.store:
            return []
        waiting = carried.after(stored)
        if waiting is None:
            logger.error(
                "session %r: %d messages an earlier agent could not store are dropped: the "
                "stored transcript changed since",
                self.session_id,
                len(carried.messages),
            )
            return []
        for index, message in enumerate(waiting):
            try:
                self.store.append(self.session_id, message)
            except Exception as exc:
                last = stored[-1] if stored else carried.last_stored
                carry_over(self.store, self.session_id, last, waiting[index:])
                raise ConfigError(
                    f"cannot write session {self.session_id!r}: {exc} ({len(waiting) - index} "
                    "messages an earlier agent could not store still wait)"
                ) from exc
            stored = [*stored, message]
        return waiting

    def _load_held(self) -> str | None:
        load = getattr(self.store, "load_state", None)
        if not callable(load):
            return None
        try:
            value = load(self.session_id, HELD_KEY)
        except Exception as exc:
            raise ConfigError(
                f"cannot load session {self.session_id!r} from {self.store!r}: {exc}"
            ) from exc
        return value if isinstance(value, str) else None

    def save_held(self, record: str | None) -> None:
        """Store the record of held tool calls (`None` deletes it), after the writes queued
        before it, waiting on this thread; never raises during a run: a store without
        `save_state`, or one that fails, is logged (the calls stay held in this process
        only)."""
        self._in_order(self._save_held, record)

    def _save_held(self, record: str | None) -> None:
        save = getattr(self.store, "save_state", None)
        if not callable(save):
            if record is not None:
                logger.warning(
                    "session %r: %s cannot keep held tool calls (no save_state); they are "
                    "held in this process only",
                    self.session_id,
                    type(self.store).__name__,
                )
            return
        try:
            save(self.session_id, HELD_KEY, record)
        except Exception:
            logger.exception("session %r: storing the held tool calls failed", self.session_id)

    def check_writer(self) -> None:
        """Raise the refusal of a write that found this agent's lease gone, if any.

        Raises:
            SessionBusyError: the store refused a write of this agent (its text says why).
        """
        if self.lost is not None:
            raise SessionBusyError(str(self.lost), session_id=self.session_id)

    def record(self, message: AgentMessage) -> Awaitable[bool]:
        """Queue the append of one message that entered the transcript, on the worker
        thread, and return at once (on the event loop thread: the run's sink).

        Returns:
            What is done once the append is (or failed): await it before anyone is told of
            the message. Awaiting it never raises; cancelling the wait leaves the append
            queued. Its value: whether nothing is left unstored (failures are logged and the
            message is retried before the next one, or by `flush`).
        """
        return _shielded(self._queue(self._record, message))

    def _record(self, message: AgentMessage) -> bool:
        self._write([*self._pending, message])
        return not self._pending

    def flush(self) -> bool:
        """Retry the messages whose append failed (`close` calls it on the worker thread,
        so the last message of a run is not left behind); never raises. Store calls on the
        calling thread.

        Returns:
            Whether nothing is left unstored (failures are logged): false too once a
            write was refused for the lease (`lost`).
        """
        if self._pending:
            self._write(list(self._pending))
            if self._pending and carry_over(
                self.store, self.session_id, self._last_stored, self._pending
            ):
                logger.error(
                    "session %r: %d messages could not be stored; they wait in this process "
                    "for the session's next agent",
                    self.session_id,
                    len(self._pending),
                )
            elif self._pending:
                logger.error(
                    "session %r: %d messages could not be stored and are lost for the session",
                    self.session_id,
                    len(self._pending),
                )
        return not self._pending and self.lost is None

    def _write(self, queue: list[AgentMessage]) -> None:
        """Append `queue` in order. Its head is a failed append when `_pending` is not
        empty: an append can raise after its write committed (a connection that broke
        before the reply), so the head is left out when the store already ends with it;
        appending it again would store it twice (a tool call twice: a session no agent
        opens)."""
        if self.lost is not None:
            return
        retrying = bool(self._pending)
        try:
            if retrying and _same_message(self._stored_tail(), persisted_form(queue[0])):
                self._last_stored, queue = persisted_form(queue[0]), queue[1:]
        except Exception:
            logger.warning(
                "session %r: the store still fails; %d messages wait", self.session_id, len(queue)
            )
            self._pending = queue
            return
        for index, item in enumerate(queue):
            stored = persisted_form(item)
            try:
                self.store.append(self.session_id, stored)
            except SessionBusyError as exc:
                logger.error(
                    "session %r: %s; this agent's transcript is stored no more",
                    self.session_id,
                    exc,
                )
                self.lost, self._pending = exc, []
                return
            except Exception:
                if not retrying:
                    logger.exception(
                        "session %r: storing the %s message failed; the run goes on and the "
                        "message is retried with the next one",
                        self.session_id,
                        getattr(item, "role", "?"),
                    )
                else:
                    logger.warning(
                        "session %r: the store still fails; %d messages wait",
                        self.session_id,
                        len(queue) - index,
                    )
                self._pending = queue[index:]
                return
            self._last_stored = stored
        self._pending = []

    def _stored_tail(self) -> AgentMessage | None:
        stored = self.store.load(self.session_id)
        return stored[-1] if stored else None

    def rewrite(self, messages: Sequence[AgentMessage]) -> None:
        """Replace the stored transcript with `messages` (`reset()`, `state.messages = ...`),
        after the writes queued before it, waiting on this thread.

        One transaction (`store.replace`): a crash at any moment leaves the old transcript or
        the new one. A store without `replace` gets `clear` then appends (not crash-safe).
        No messages: `store.clear`, which also deletes the session's saved values, so no
        record of held tool calls outlives the transcript that held them.

        Raises:
            Exception: whatever the store raises (the caller's state is left unchanged).
        """
        self._in_order(self._rewrite, messages)

    def _rewrite(self, messages: Sequence[AgentMessage]) -> None:
        stored = [persisted_form(message) for message in messages]
        replace = getattr(self.store, "replace", None)
        if not stored:
            self.store.clear(self.session_id)
        elif callable(replace):
            replace(self.session_id, stored)
        else:
            self.store.clear(self.session_id)
            for message in stored:
                self.store.append(self.session_id, message)
        self._pending, self._last_stored = [], stored[-1] if stored else None


@dataclasses.dataclass(slots=True)
class _Carried:
    """Messages an agent could not store, waiting for the session's next agent."""

    store: weakref.ref[SessionStore]
    last_stored: AgentMessage | None
    """The message stored before them (None: the session was empty)."""
    messages: list[AgentMessage]

    def after(self, stored: Sequence[AgentMessage]) -> list[AgentMessage] | None:
        """The messages still to append to `stored`: all of them when `stored` ends with
        `last_stored`, the rest when it ends with the first of them too (its append
        committed before it failed); None when `stored` ends elsewhere (written since)."""
        before = [] if self.last_stored is None else [self.last_stored]
        for done in (0, 1):
            tail = [*before, *self.messages[:done]]
            fits = len(stored) >= len(tail) if before else len(stored) == len(tail)
            ends = stored[len(stored) - len(tail) :]
            if fits and all(map(_same_message, ends, tail)):
                return self.messages[done:]
        return None


_carried: dict[tuple[int, str], _Carried] = {}
"""(id of the store, session id) -> the messages waiting for the session's next agent."""


def carry_over(
    store: SessionStore,
    session_id: str,
    last_stored: AgentMessage | None,
    messages: Sequence[AgentMessage],
) -> bool:
    """Keep `messages` (the session's unstored tail, which follows `last_stored`) for the
    next agent that opens the session on `store` in this process, which stores them first.
    Returns False for a store that cannot be weakly referenced (nothing is kept)."""
    try:
        ref = weakref.ref(store)
    except TypeError:
        return False
    waiting = [persisted_form(message) for message in messages]
    _carried[(id(store), session_id)] = _Carried(ref, last_stored, waiting)
    return True


def _shielded(done: Future[_T]) -> Awaitable[_T]:
    """`done` awaitable on the running loop, which a cancelled awaiter does not cancel (a
    queued store call runs whatever happens to who waits for it)."""
    return asyncio.shield(asyncio.wrap_future(done))


def _same_message(stored: AgentMessage | None, message: AgentMessage) -> bool:
    """Whether `stored` (read back from the store) is `message`, compared as the JSON the
    stores keep (`message_to_dict`)."""
    if stored is None:
        return False
    try:
        return _json(stored) == _json(message)
    except (TypeError, ValueError):
        return False


def _json(message: AgentMessage) -> str:
    return json.dumps(message_to_dict(message), sort_keys=True, ensure_ascii=False, default=repr)


def _release_quietly(release: Callable[[str, str], object], session_id: str, token: str) -> None:
    try:
        release(session_id, token)
    except Exception:  # a closed or broken store: its lease dies with the process anyway
        logger.debug("session %r: releasing the writer lease failed", session_id, exc_info=True)


def persisted_form(message: AgentMessage) -> AgentMessage:
    """The message as it is stored: an assistant message whose tool-call ids are empty or
    repeated is stored with the unique ids the loop gives them right after `message_end`
    (`ensure_unique_tool_call_ids` is deterministic), so its results pair after a
    resume. The live message is not changed."""
    if not isinstance(message, AssistantMessage):
        return message
    return with_unique_call_ids(message)


def with_unique_call_ids(message: AssistantMessage) -> AssistantMessage:
    """`message`, or a copy with the ids `ensure_unique_tool_call_ids` gives."""
    ids = [block.id for block in message.content if isinstance(block, ToolCall)]
    if all(ids) and len(set(ids)) == len(ids):
        return message
    from yiemagent.types.messages import ensure_unique_tool_call_ids

    content = [dataclasses.replace(b) if isinstance(b, ToolCall) else b for b in message.content]
    copy = dataclasses.replace(message, content=content)
    ensure_unique_tool_call_ids(copy)
    return copy


def unanswered_tool_results(messages: Sequence[AgentMessage]) -> list[ToolResultMessage]:
    """Error results for the tool calls of the transcript's last assistant message that have
    no result, in call order: a process that stopped during the tools left them."""
    turn = trailing_tool_turn(messages)
    if turn is None:
        return []
    message, answered = turn
    return [
        ToolResultMessage(call.id, call.name, [TextContent(INTERRUPTED_CALL_TEXT)], is_error=True)
        for call in with_unique_call_ids(message).tool_calls
        if call.id not in answered
    ]
