"""Runs as the server keeps them: one writer per session, each run's events numbered and
kept for the clients that watch it, whether or not anyone does.

A `RunHub` builds the session's `Agent` with the application's `make_agent(session_id)` for
each run (and for each approval read or decision between runs) and closes it when the run
ends, so the session's writer lease is held only while a run is active and another replica
on the same store can take the next one. A one-off session (`ephemeral`, such as a
`/v1/chat/completions` request's that names none) is removed from the store as its run
ends, unless tool calls of it are held for approval. A run is an asyncio task of the
server's loop: a reader of its events that disconnects leaves it going (a protocol route
aborts the run of a client that goes away itself: `_protocols`), and its events stay
readable (`Run.follow`) until the run is evicted, the oldest finished runs first, beyond
`keep_runs`.

How a run ended is in its `agent_end` only, not in the transcript (a run stopped during a
tool ends with that tool's error result, as one that ran out of turns does). So that a
session read later says it as its live events did, each run that ends for another reason
than an answer leaves `{"after": n, "reason"}` in the session's state (`RUN_ENDS_KEY`, a
JSON list; `n` is how many messages the transcript held then), and `run_ends` reads them
back for `GET /v1/sessions/{sid}`. A run whose answer the output limit cut off leaves
`{"after": n, "reason": "length", "note"}`: the note its `message_end` carried
(`cut_off`), which names the agent's `max_tokens`, not in the transcript either. A run whose
answer is an output type's value given through its output tool (no text says it) leaves
`{"after": n, "reason": "stop", "output"}`, the value as JSON text (`output_text`).
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import inspect
import json
import logging
import time
import uuid
from collections import OrderedDict
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import TYPE_CHECKING, Any, TypeAlias, TypeGuard

from pydantic_core import PydanticSerializationError, to_json, to_jsonable_python

from yiemagent.agent import team_output_tools
from yiemagent.errors import ConfigError, SessionBusyError
from yiemagent.types import (
    AgentEvent,
    AssistantMessage,
    AssistantMessageEvent,
    MessageEndEvent,
    MessageUpdateEvent,
    NestedAgentEvent,
    ToolCall,
)
from yiemagent.types.callbacks import maybe_await
from yiemagent.types.text import cut_off_note

if TYPE_CHECKING:
    from yiemagent.agent import Agent
    from yiemagent.sessions import SessionStore

__all__ = [
    "RUN_ENDS_KEY",
    "Busy",
    "MakeAgent",
    "Run",
    "RunHub",
    "busy_text",
    "guarded",
    "output_text",
    "run_ends",
    "wire_json",
]

logger = logging.getLogger(__name__)

MakeAgent: TypeAlias = Callable[[str], "Agent[Any] | Awaitable[Agent[Any]]"]
"""`make_agent(session_id)`: the application's agent for a session, built on the app's
session store (plain or async)."""


RUN_ENDS_KEY = "serve_run_ends"
"""The session-state key of how the session's runs ended (see the module docstring)."""
_RUN_ENDS_KEPT = 200
"""Run ends a session keeps, the oldest dropped first."""


async def _built(make_agent: MakeAgent, session_id: str) -> Agent[Any]:
    """`make_agent(session_id)`'s agent. A plain `make_agent` runs on a worker thread:
    building an `Agent` on a session takes its lease and loads it, store calls that block
    (a locked SQLite file up to its `timeout_s`), which on the event loop would stall every
    other session and `/healthz`. An async one runs on the loop, as it must (it builds the
    agent there: `await asyncio.to_thread(Agent, ...)` keeps the loading off the loop)."""
    if inspect.iscoroutinefunction(make_agent) or inspect.iscoroutinefunction(
        type(make_agent).__call__  # an object whose __call__ is async
    ):
        return await maybe_await(make_agent(session_id))
    return await maybe_await(await asyncio.to_thread(make_agent, session_id))


def busy_text(exc: SessionBusyError) -> str:
    """A session another program holds, said to an HTTP client (the store's text tells a
    Python program to `await agent.close()`, which a client of this server cannot do)."""
    if exc.holder is None:
        return str(exc)
    return (
        f"session {exc.session_id!r} is being written by {exc.holder} (a yiem chat, another "
        "server or a program using the same session store); try again once it has closed "
        "the session, or use another session"
    )


class Busy(Exception):
    """The session cannot take this now (HTTP 409); the text says why and what to do."""


def wire_json(event: AgentEvent) -> str:
    """`event_to_dict(event)` as JSON text, as the server sends it (one serialisation, in
    pydantic-core), with a `message_update` (also inside a `nested_agent`) in the form of
    `yiem run --json`: its provider event without the partial message, since each update
    of a streamed reply would repeat the whole reply so far (a 20 kB answer was 100 MB of
    events, held in memory and sent to every reader). A `toolcall_start` or
    `toolcall_delta` names its call in `tool_call` (`{"type", "id", "name"}`; a call that
    repeats an earlier call's id goes with an empty one until `message_end` gives its own);
    `message_start` and `message_end` carry the message whole."""
    return _json(_wire(event))


def _json(value: Any, **options: Any) -> str:
    """`value` as JSON text (pydantic-core). A lone surrogate in a text (process output or a
    file name decoded with `surrogateescape`, a character cut in half) cannot be UTF-8, so
    it is sent as U+FFFD, never failing the event; the session keeps the text as it was."""
    try:
        return to_json(value, fallback=str, **options).decode()
    except PydanticSerializationError:
        from yiemagent.ai import sanitize_surrogates

        data = to_jsonable_python(value, fallback=str, **options)
        return to_json(sanitize_surrogates(data), fallback=str).decode()


def _wire(event: AgentEvent) -> Any:
    """`event` as the server sends it: a message update carries only its provider event
    (not the partial message each update would repeat whole), a streamed tool call named by
    id and name; a sub-agent's update the same, inside its `nested_agent`; any other event
    as it is."""
    if isinstance(event, MessageUpdateEvent):
        update = event.assistant_message_event
        inner: dict[str, Any] = to_jsonable_python(update, exclude={"partial"}, fallback=str)
        call = _streaming_call(update)
        if call is not None:
            inner["tool_call"] = {"type": "toolCall", "id": call.id, "name": call.name}
        if isinstance(inner.get("tool_call"), dict) and _repeats_an_id(update):
            # The loop gives it an id of its own at message_end; until then it streams as a
            # call whose id is not known yet, not as more of the call whose id it repeats.
            inner["tool_call"]["id"] = ""
        return {"assistant_message_event": inner, "type": event.type}
    if isinstance(event, NestedAgentEvent) and isinstance(event.event, MessageUpdateEvent):
        return dataclasses.replace(event, event=_wire(event.event))
    return event


def _streaming_call(update: AssistantMessageEvent) -> ToolCall | None:
    """The tool call a `toolcall_start` / `toolcall_delta` is about (its block in the
    partial message)."""
    if update.type not in ("toolcall_start", "toolcall_delta"):
        return None
    content = update.partial.content
    index = update.content_index
    block = content[index] if isinstance(content, list) and 0 <= index < len(content) else None
    return block if isinstance(block, ToolCall) else None


def _repeats_an_id(update: AssistantMessageEvent) -> bool:
    """Whether the tool call of a `toolcall_*` event has the id of an earlier call of its
    message (a model that gives parallel calls one id)."""
    content = getattr(update, "partial", None)
    index = getattr(update, "content_index", -1)
    blocks = content.content if content is not None else []
    if not 0 <= index < len(blocks) or not isinstance(blocks[index], ToolCall):
        return False
    own = blocks[index].id
    return bool(own) and any(isinstance(b, ToolCall) and b.id == own for b in blocks[:index])


def _cut_off(message: object) -> TypeGuard[AssistantMessage]:
    """Whether `message` is an answer the output limit cut off (stop reason "length")."""
    return isinstance(message, AssistantMessage) and message.stop_reason == "length"


def guarded(agent: Agent[Any]) -> bool:
    """Whether `agent`, or an agent its handoffs reach, has output guardrails."""
    seen = [agent]
    for member in seen:
        if getattr(member, "output_guardrails", None):
            return True
        for handoff in getattr(member, "handoffs", ()):
            if all(handoff.agent is not other for other in seen):
                seen.append(handoff.agent)
    return False


class Run:
    """One run of a session's agent: its events in order, numbered from 1.

    Invariants: events are only added by the run's own agent (its subscriber) on the
    server's loop; the last one is always an `agent_end` (a synthetic one, reason "error",
    when the run failed before its loop could end it); `done` is set once the agent is
    closed and the session free again.
    """

    def __init__(
        self, run_id: str, session_id: str, agent: Agent[Any], *, hold_text: bool = False
    ) -> None:
        self.id = run_id
        self.session_id = session_id
        self.agent: Agent[Any] | None = agent
        """The run's agent until the run is done (steer, follow-up, abort go to it)."""
        self.texts: list[str] = []
        """Each event as JSON text, as it goes on the wire."""
        self._parsed: list[dict[str, Any] | None] = []
        self.ended = False
        """The `agent_end` event is in `events`."""
        self.done = False
        self.hold_text = hold_text
        """The agent has output guardrails: its `message_update` events are not passed on,
        and an assistant `message_start` comes without its content, so no client sees an
        answer before the guardrails passed it; each message arrives whole in
        its `message_end`."""
        self.output_tools = team_output_tools(agent)
        """The output tool of each typed agent of the run's team, by agent name (sub-agents'
        by the last name of their events' `agent_path`): a client shows no card for its
        calls, the answer being the value they hand over."""
        self.output_tool = self.output_tools.get(agent.name)
        """The output tool of the run's agent (its own calls, not a sub-agent's), or None."""
        self.held: list[dict[str, Any]] = []
        """When the run ended "awaiting_approval": the held calls as the agent lists them
        (`pending_approvals`), each `{"id", "name", "arguments", "nested"}` (`nested`: held
        inside a sub-agent); set before the run is done."""
        self.cut_off: str | None = None
        """The note said after the run's latest answer the output limit cut off, as its
        `message_end` carries it (`cut_off_note`, naming the agent's `max_tokens`)."""
        self.created_ms = int(time.time() * 1000)
        self.task: asyncio.Task[None] | None = None
        self._tick = asyncio.Event()

    @property
    def end_reason(self) -> str | None:
        """`agent_end`'s reason once the run has ended."""
        return self.event(len(self.texts)).get("reason") if self.ended else None

    def event(self, number: int) -> dict[str, Any]:
        """Event `number` (from 1) as JSON-ready data (parsed from its text on first use)."""
        data = self._parsed[number - 1]
        if data is None:
            data = self._parsed[number - 1] = json.loads(self.texts[number - 1])
        return data

    @property
    def events(self) -> list[dict[str, Any]]:
        """Every event so far, as JSON-ready data."""
        return [self.event(n) for n in range(1, len(self.texts) + 1)]

    def add(self, data: dict[str, Any]) -> None:
        """Append one event given as JSON-ready data (the server's own `agent_end`)."""
        self._append(json.dumps(data, ensure_ascii=False, separators=(",", ":")), data)

    def _append(self, text: str, data: dict[str, Any] | None, ended: bool = False) -> None:
        if self.ended:
            return
        self.texts.append(text)
        self._parsed.append(data)
        self.ended = ended or (data is not None and data.get("type") == "agent_end")
        self._wake()

    def _wake(self) -> None:
        tick, self._tick = self._tick, asyncio.Event()
        tick.set()

    async def listen(self, event: AgentEvent, _signal: object = None) -> None:
        """The agent subscriber: every event of the run, in order (but see `hold_text`)."""
        if self.hold_text and event.type == "message_update":
            return
        if self.hold_text and event.type == "message_start" and event.message.role == "assistant":
            held = _json(event, exclude={"message": {"content"}})
            self._append(held, None)
            return
        text = wire_json(event)
        if isinstance(event, MessageEndEvent) and _cut_off(event.message):
            limit = None if self.agent is None else self.agent.max_tokens
            self.cut_off = cut_off_note(event.message, limit, named="max_tokens")
            text = _json({**json.loads(text), "cut_off": self.cut_off})
        self._append(text, None, event.type == "agent_end")

    async def follow(self, after: int = 0) -> AsyncIterator[range]:
        """The numbers of the events after `after` (1-based) through the `agent_end`, in
        batches: each batch is every event there is when the reader comes back (so a
        stream sends them in one write); waits for new ones. Read each as `event(n)` or
        `texts[n - 1]`."""
        seen = max(0, after)
        while True:
            tick = self._tick
            if seen < len(self.texts):
                batch = range(seen + 1, len(self.texts) + 1)
                seen = len(self.texts)
                yield batch
            if self.ended and seen >= len(self.texts):
                return
            if seen >= len(self.texts):
                await tick.wait()

    async def finished(self) -> None:
        """Wait until the run is done (its agent closed)."""
        if self.task is not None and not self.done:
            await asyncio.shield(self.task)

    def summary(self) -> dict[str, Any]:
        """What `GET /v1/sessions/{sid}` says about the run."""
        return {
            "run_id": self.id,
            "session_id": self.session_id,
            "events": len(self.texts),
            "ended": self.ended,
            "end_reason": self.end_reason,
            "hold_text": self.hold_text,
            "output_tool": self.output_tool,
            "output_tools": self.output_tools,
            "created_ms": self.created_ms,
        }


class _Slot:
    """A session's place in the hub: its lock, its latest run, and how many requests hold
    or wait for the lock (a slot nobody uses and no run needs is dropped)."""

    __slots__ = ("lock", "run", "users")

    def __init__(self) -> None:
        self.lock = asyncio.Lock()
        self.run: Run | None = None
        self.users = 0


class RunHub:
    """The server's runs and the one-writer rule for its sessions.

    Args:
        make_agent: builds a session's agent (plain or async); called once per run and per
            approval read or decision outside a run.
        keep_runs: finished runs whose events stay readable (the oldest go first).
        session_store: the app's store, which each agent made must be on (None: any store).
    """

    def __init__(
        self,
        make_agent: MakeAgent,
        *,
        keep_runs: int = 256,
        session_store: SessionStore | None = None,
    ) -> None:
        self._make_agent = make_agent
        self._store = session_store
        self._keep = keep_runs
        self._slots: dict[str, _Slot] = {}
        self._runs: OrderedDict[str, Run] = OrderedDict()

    def run(self, run_id: str) -> Run | None:
        """The run with this id, if this server still keeps it."""
        return self._runs.get(run_id)

    def active(self, session_id: str) -> Run | None:
        """The session's run on this server that is not done yet, if any."""
        slot = self._slots.get(session_id)
        return slot.run if slot is not None and slot.run is not None and not slot.run.done else None

    async def _make(self, session_id: str) -> Agent[Any]:
        """The session's agent from `make_agent`.

        Raises:
            Busy: another writer holds the session.
            ConfigError: the agent made is not that session's on the app's store (its runs
                would be lost, or land in another session); it is closed first.
        """
        try:
            agent: Agent[Any] = await _built(self._make_agent, session_id)
        except SessionBusyError as exc:
            raise Busy(busy_text(exc)) from exc
        wrong = self._not_the_sessions(agent, session_id)
        if wrong:
            await agent.close()
            fix = (
                "build it with Agent(session_store=<the app's session_store>, "
                "session_id=session_id, ...)"
            )
            raise ConfigError(f"make_agent({session_id!r}) returned {wrong}; {fix}")
        return agent

    def _not_the_sessions(self, agent: Agent[Any], session_id: str) -> str:
        """What is wrong with `agent` as the agent of `session_id` ("" when nothing)."""
        if agent.session_store is None:
            return "an agent without a session store, so its runs would not be kept"
        if self._store is not None and agent.session_store is not self._store:
            return (
                "an agent on another session store than the app's, which the app would "
                "not list or read"
            )
        if agent.session_id != session_id:
            return (
                f"the agent of session {agent.session_id!r}, so sessions would share one transcript"
            )
        return ""

    async def _wait_free(self, slot: _Slot, session_id: str) -> None:
        """Return once the session has no run on this server, waiting for one that has
        ended but is still closing its agent.

        Raises:
            Busy: a run of the session is still going.
        """
        current = slot.run
        if current is None or current.done:
            return
        if not current.ended:
            raise Busy(
                f"session {session_id!r} already has a run ({current.id}); steer it, "
                f"follow up, abort it, or wait for its agent_end"
            )
        await current.finished()  # ended: its agent is closing, the session is free at once

    async def start(
        self,
        session_id: str,
        call: Callable[[Agent[Any]], Awaitable[Any]],
        *,
        prepare: Callable[[Agent[Any]], None] | None = None,
        ephemeral: bool = False,
    ) -> Run:
        """Start a run: build the session's agent, `prepare(agent)` (checks, approval
        decisions, a history to seed; raise `Busy` or `BadRequest` to refuse, and the agent
        is closed), then run `call(agent)` as a task. With `ephemeral`, the session exists
        for this run only: its stored messages are removed when the run ends (before the run
        is done, so a next request on the session finds it empty), unless the run ended
        with tool calls held for approval, which wait in the session for a decision.

        Raises:
            Busy: the session has a run here, or another writer holds it.
        """
        async with self._hold(session_id) as slot:
            await self._wait_free(slot, session_id)
            agent = await self._make(session_id)
            try:
                if prepare is not None:
                    prepare(agent)
            except BaseException:
                await agent.close()
                raise
            run = Run(uuid.uuid4().hex, session_id, agent, hold_text=guarded(agent))
            agent.subscribe(run.listen)
            drive = self._drive(run, agent, call, ephemeral)
            run.task = asyncio.create_task(drive, name=f"run-{run.id}")
            slot.run = run
            self._remember(run)
            return run

    async def with_agent(self, session_id: str, use: Callable[[Agent[Any]], Any]) -> Any:
        """`use(agent)` on the session's agent between runs (approvals), then close it.

        Raises:
            Busy: a run is active on the session, or another writer holds it.
        """
        async with self._hold(session_id) as slot:
            await self._wait_free(slot, session_id)
            agent = await self._make(session_id)
            try:
                return use(agent)
            finally:
                await agent.close()

    @contextlib.asynccontextmanager
    async def _hold(self, session_id: str) -> AsyncIterator[_Slot]:
        """The session's slot, its lock held; the slot is dropped afterwards when nobody
        else uses it and no run of it is still going (so one-off sessions, such as each
        `/v1/chat/completions` request's own, do not pile up for the server's lifetime)."""
        slot = self._slots.setdefault(session_id, _Slot())
        slot.users += 1
        try:
            async with slot.lock:
                yield slot
        finally:
            slot.users -= 1
            self._drop_idle(session_id)

    def _drop_idle(self, session_id: str) -> None:
        slot = self._slots.get(session_id)
        if slot is not None and slot.users == 0 and (slot.run is None or slot.run.done):
            del self._slots[session_id]

    async def _drive(
        self,
        run: Run,
        agent: Agent[Any],
        call: Callable[[Agent[Any]], Awaitable[Any]],
        ephemeral: bool,
    ) -> None:
        """The run's task: `call(agent)` to its end (an exception it raises is logged, the
        events say it already; a cancellation, the server shutting down, aborts the agent),
        then, whatever happened: an ephemeral session forgotten (unless calls are held), or
        the run's end kept in the session (`RUN_ENDS_KEY`); the agent closed, freeing the
        session; an `agent_end` "error" added when the run gave none; its readers woken."""
        error: BaseException | None = None
        try:
            await call(agent)
        except Exception as exc:  # AgentRunError and its kin: the events already say it
            error = exc
            logger.debug("run %s ended with %s: %s", run.id, type(exc).__name__, exc)
        except asyncio.CancelledError as exc:  # the server is shutting down
            error = exc
            agent.abort("the server is shutting down")
        finally:
            if run.end_reason == "awaiting_approval":
                run.held = _held_calls(agent)
            if ephemeral and run.end_reason != "awaiting_approval":
                _forget(run, agent)
            elif run.ended:
                await _keep_run_end(run, agent)
            try:
                await agent.close()
            except Exception:
                logger.exception("closing the agent of run %s failed", run.id)
            if not run.ended:
                text = str(error) if error is not None else "the run ended without agent_end"
                run.add({"type": "agent_end", "reason": "error", "messages": [], "error": text})
            run.agent = None
            run.done = True
            run._wake()
            self._evict()
            self._drop_idle(run.session_id)

    def _remember(self, run: Run) -> None:
        self._runs[run.id] = run
        self._evict()

    def _evict(self) -> None:
        """Forget the oldest finished runs beyond `keep_runs` (a run still going stays)."""
        finished = [rid for rid, run in self._runs.items() if run.done]
        for rid in finished[: max(0, len(self._runs) - self._keep)]:
            del self._runs[rid]

    async def close(self, grace_s: float = 5.0) -> None:
        """Abort every active run and wait up to `grace_s` seconds for them to end."""
        tasks = []
        for run in self._runs.values():
            if run.agent is not None:
                run.agent.abort("the server is shutting down")
            if run.task is not None and not run.task.done():
                tasks.append(run.task)
        if tasks:
            _, pending = await asyncio.wait(tasks, timeout=grace_s)
            for task in pending:
                task.cancel()


async def _keep_run_end(run: Run, agent: Agent[Any]) -> None:
    """Record in the session how `run` ended (see the module docstring), through its agent,
    which still holds the session's writer lease. Ends past the run's start are dropped:
    the transcript was rewound (a regenerate, an undo) before them. A store without
    session state, or one that fails, is logged and changes nothing."""
    store = agent.session_store
    load = getattr(store, "load_state", None)
    save = getattr(store, "save_state", None)
    if load is None or save is None:
        return
    end = run.event(len(run.texts))
    messages = agent.state.messages
    total = len(messages)
    start = total - len(end.get("messages") or [])
    cut_off = run.cut_off if messages and _cut_off(messages[-1]) else None
    output = output_text(end)

    def keep() -> None:
        ends = _decode_ends(load(run.session_id, RUN_ENDS_KEY))
        kept = [e for e in ends if e["after"] <= start]
        if end.get("reason") != "stop":
            kept.append({"after": total, "reason": end.get("reason")})
        elif cut_off is not None:  # its note names the limit, which the transcript lacks
            kept.append({"after": total, "reason": "length", "note": cut_off})
        elif output is not None:  # no text of the transcript holds the answer
            kept.append({"after": total, "reason": "stop", "output": output})
        if kept != ends:
            value = json.dumps(kept[-_RUN_ENDS_KEPT:]) if kept else None
            save(run.session_id, RUN_ENDS_KEY, value)

    try:
        await asyncio.to_thread(keep)
    except Exception as exc:
        logger.warning("run %s: how it ended is not kept in its session: %s", run.id, exc)


def output_text(end: dict[str, Any]) -> str | None:
    """The run's validated output (`agent_end.output`) as JSON text when the answer came
    through the output tool, so no assistant text holds it (also a resumed run that wrote
    no message: its output tool call was in the batch held for approval); None otherwise
    (no output type, or the final text is the JSON already)."""
    if end.get("output") is None:
        return None
    for message in reversed(end.get("messages", [])):
        if message.get("role") == "assistant":
            calls = [b for b in message.get("content", []) if b.get("type") == "toolCall"]
            return json.dumps(end["output"], ensure_ascii=False) if calls else None
    return json.dumps(end["output"], ensure_ascii=False)


def run_ends(store: object, session_id: str, messages: int) -> list[dict[str, Any]]:
    """How the session's runs ended, as `_keep_run_end` kept them: `{"after": n, "reason"}`
    for each run that ended after the nth message without an answer (or with an answer no
    text holds: `"output"`), up to `messages` (the transcript's length now); [] for a store
    without session state."""
    load = getattr(store, "load_state", None)
    if load is None:
        return []
    return [e for e in _decode_ends(load(session_id, RUN_ENDS_KEY)) if e["after"] <= messages]


def _decode_ends(text: str | None) -> list[dict[str, Any]]:
    """The run ends kept in a session's state (`RUN_ENDS_KEY`), each `{"after": int,
    "reason": str, ...}`; what is not JSON, or not such an entry, is left out."""
    try:
        ends = json.loads(text) if text else []
    except ValueError:
        return []
    if not isinstance(ends, list):
        return []
    return [
        e
        for e in ends
        if isinstance(e, dict)
        and isinstance(e.get("after"), int)
        and isinstance(e.get("reason"), str)
    ]


def _forget(run: Run, agent: Agent[Any]) -> None:
    """Remove the one-off session of `run` from the store, through its agent (which still
    holds the session's writer lease); a failure is logged and leaves the session stored."""
    try:
        agent.reset()
    except Exception as exc:  # a busy agent (the server stopping), a store that failed
        logger.warning(
            "run %s: its one-off session %s stays stored: %s", run.id, run.session_id, exc
        )


def _held_calls(agent: Agent[Any]) -> list[dict[str, Any]]:
    """The calls `agent` holds for approval, as a run's `held` lists them: the ids are
    the ones `approve()` takes (a sub-agent's call, too, even where its model reused an id
    the parent's calls have)."""
    return [
        {
            "id": p.tool_call_id,
            "name": p.tool_name,
            "arguments": p.arguments,
            "nested": bool(p.agent_path),
        }
        for p in agent.pending_approvals
    ]
