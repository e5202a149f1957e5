"""Writer leases: one writer per session at a time (docs/sessions.md "One writer").

A lease names its holder: a random token, the host, the process id and the process's start
time (Linux: `/proc/<pid>/stat`, so a recycled pid is not taken for the dead holder) with
the boot id (`/proc/sys/kernel/random/boot_id`: start times count from boot, so after a
reboot a process of the same pid started as many ticks after boot is another one). Whether
a lease's holder is still there is decided here, the same way for every store:

- held in this process: alive while its token is in this process's live set (it leaves the
  set when the lease is released, its store closes, or the agent holding it is collected);
- held by another process on this host: alive while that pid runs and started when the
  lease says;
- held on another host: a pid there cannot be checked. Where the store keeps renewals
  (SQLite: every holder renews its leases every `LEASE_TTL_S` / 4 seconds from the
  background thread below), alive while renewed within the last `LEASE_TTL_S`, so a dead
  holder is taken over after at most that long; SQLite is shared only within one machine (its
  WAL needs shared memory), so the holder's clock is this one's, and "another host" there is
  a container with a host name of its own, or one recreated under a new name. Where the store
  keeps none, assumed alive until `force_release` (`yiem sessions release ID`); PostgreSQL
  judges such holders by their connection instead.

A lease whose holder is gone (a process killed with SIGKILL) is taken over by the next writer.

An agent that is collected gives its lease back from a `weakref.finalize`, and a collection
runs on whichever thread allocates, at any allocation: inside a store method holding the
store's lock, inside the database driver holding its connection's lock (psycopg), inside
this module holding its own. So the finalizer only queues the release (`release_soon`,
which takes no lock); a background thread makes it, and every `acquire` makes the queued
releases first (`settle_releases`), so a collected agent's session is free at once.
"""

from __future__ import annotations

import contextlib
import logging
import os
import queue
import socket
import threading
import time
import uuid
import weakref
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from yiemagent.errors import SessionBusyError

__all__ = [
    "LEASE_TTL_S",
    "LeaseHolder",
    "busy_error",
    "drop",
    "forget",
    "holder_is_alive",
    "new_holder",
    "release_soon",
    "renew_while_held",
    "settle_releases",
    "start_releaser",
    "taken_over_error",
    "this_host",
]

logger = logging.getLogger(__name__)

_LIVE: set[str] = set()
_LIVE_LOCK = threading.Lock()

_Release = tuple[Callable[[str, str], object], str, str]
_queued: queue.SimpleQueue[_Release] = queue.SimpleQueue()
"""Releases queued by finalizers: (a store's `release`, session id, token)."""
_wake: queue.SimpleQueue[None] = queue.SimpleQueue()
"""One item per queued release, for the background thread."""
_settling = threading.Lock()
"""Held while queued releases are made: a release taken from the queue is finished before
another `settle_releases` returns."""
_releaser: threading.Thread | None = None
_releaser_lock = threading.Lock()

LEASE_TTL_S = 60.0
"""How long a lease held on another host lives without being renewed (seconds), where the
store keeps renewals; its holder renews it four times as often."""
_renewing: weakref.WeakSet[Any] = weakref.WeakSet()
"""Stores whose leases the background thread renews (`renew_leases()`)."""


@dataclass(frozen=True, slots=True)
class LeaseHolder:
    """Who holds a session's lease."""

    token: str
    """Random; identifies one acquisition."""
    host: str
    """`socket.gethostname()` of the holder."""
    pid: int
    """The holder's process id."""
    started: str
    """The holder process's start time as the OS reports it ("" where unknown)."""
    renewed_ms: int | None = None
    """When the holder last renewed the lease (ms since the epoch), or None where the store
    keeps no renewals."""

    def describe(self) -> str:
        """For error messages: "another Agent in this process", "process 1234 on host h"."""
        if self.pid == os.getpid() and self.host == this_host():
            return f"another Agent in this process (pid {self.pid})"
        return f"process {self.pid} on host {self.host}"


def taken_over_error(session_id: str) -> SessionBusyError:
    """The error for a write of a holder whose lease is gone: taken over while the holder
    looked dead (unrenewed, or cut off from a shared database) or removed by
    `force_release`. Another writer may have written turns this holder's transcript lacks,
    so it writes the session no more."""
    return SessionBusyError(
        f"session {session_id!r} was taken over by another writer (this one looked gone, or "
        "its lease was released by force) and nothing was written; its transcript may have "
        "changed since: open the session again (a new Agent) to go on",
        session_id=session_id,
    )


def busy_error(session_id: str, holder: LeaseHolder) -> SessionBusyError:
    """The error for a write or an `acquire` refused because `holder` has the session."""
    if holder.host == this_host():
        remedy = (
            "close that Agent (await agent.close()) or let its process end, or use another "
            "session_id"
        )
    elif holder.renewed_ms is not None:
        remedy = (
            f"it renews its lease, and one not renewed for {LEASE_TTL_S:g} s is taken over; "
            "if it is known to be gone, run `yiem sessions release ID` or call "
            "store.force_release(session_id)"
        )
    else:
        remedy = (
            "the holder on another host cannot be checked from here; if it is gone, run "
            "`yiem sessions release ID` or call store.force_release(session_id)"
        )
    return SessionBusyError(
        f"session {session_id!r} is being written by {holder.describe()}; one writer per "
        f"session: {remedy}",
        session_id=session_id,
        holder=holder.describe(),
    )


def this_host() -> str:
    """This machine's host name."""
    return socket.gethostname()


def process_start_time(pid: int) -> str:
    """The start time of process `pid` as a lease records it: clock ticks since boot (from
    `/proc/<pid>/stat`), then "@" and the boot id; "" where unknown (not Linux, no such
    process)."""
    ticks = _proc_stat(pid)[1]
    boot = _boot_id()
    return f"{ticks}@{boot}" if ticks and boot else ticks


def _boot_id() -> str:
    """This boot's id (Linux), or "" where unknown."""
    try:
        with open("/proc/sys/kernel/random/boot_id", encoding="ascii") as handle:
            return handle.read().strip()
    except OSError:
        return ""


def _proc_stat(pid: int) -> tuple[str, str]:
    """(state, start time) of `pid` from `/proc/<pid>/stat`; ("", "") where unknown."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as handle:
            stat = handle.read()
    except OSError:
        return "", ""
    fields = stat.rsplit(")", 1)[-1].split()  # the command name may hold spaces and ")"
    return (fields[0], fields[19]) if len(fields) > 19 else ("", "")


def new_holder() -> LeaseHolder:
    """A fresh holder for this process; its token is live until `forget(token)`."""
    pid = os.getpid()
    holder = LeaseHolder(uuid.uuid4().hex, this_host(), pid, process_start_time(pid))
    with _LIVE_LOCK:
        _LIVE.add(holder.token)
    return holder


def forget(token: str) -> None:
    """Mark a token of this process as released (no longer alive)."""
    with _LIVE_LOCK:
        _LIVE.discard(token)


def drop(held: dict[str, LeaseHolder], session_id: str, token: str) -> None:
    """Release `token`: forget it, and remove `held[session_id]` when `token` holds it.

    `held` is a store's table of the leases taken through it (session id → holder); call
    this under the store's lock. A token that no longer holds the session changes nothing
    in `held`.
    """
    forget(token)
    holder = held.get(session_id)
    if holder is not None and holder.token == token:
        del held[session_id]


def release_soon(release: Callable[[str, str], object], session_id: str, token: str) -> None:
    """Queue `release(session_id, token)` without waiting for anything: what a finalizer calls.

    `queue.SimpleQueue.put` takes no lock that this thread may already hold, so this never
    blocks, whatever the thread was doing when the collection ran. The background thread
    (`start_releaser`) or the next `settle_releases` makes the release.
    """
    _queued.put((release, session_id, token))
    _wake.put(None)


def settle_releases() -> None:
    """Make the queued releases now, on this thread; call it holding no store's lock.

    A failing release (a closed or broken store) is logged: its lease ends with the process.
    """
    with _settling:
        while True:
            try:
                release, session_id, token = _queued.get_nowait()
            except queue.Empty:
                return
            try:
                release(session_id, token)
            except Exception:
                logger.debug(
                    "session %r: releasing the writer lease failed", session_id, exc_info=True
                )


def start_releaser() -> None:
    """Start this process's background thread that makes queued releases (once; again in a
    forked child). Call it where a lease is taken, never from a finalizer."""
    global _releaser
    with _releaser_lock:
        if _releaser is not None and _releaser.is_alive():
            return
        _releaser = threading.Thread(
            target=_release_forever, name="yiemagent-lease-release", daemon=True
        )
        _releaser.start()


def renew_while_held(store: Any) -> None:
    """Have the background thread call `store.renew_leases()` every `LEASE_TTL_S` / 4
    seconds while the store exists (it renews the leases it holds); starts the thread."""
    _renewing.add(store)
    start_releaser()


def _release_forever() -> None:
    renewed = time.monotonic()
    while True:
        every = LEASE_TTL_S / 4
        with contextlib.suppress(queue.Empty):
            _wake.get(timeout=max(0.0, renewed + every - time.monotonic()))
        settle_releases()
        if time.monotonic() - renewed >= every:
            renewed = time.monotonic()
            for store in list(_renewing):
                try:
                    store.renew_leases()
                except Exception:
                    logger.debug("renewing the writer leases of %r failed", store, exc_info=True)


def _after_fork_in_child() -> None:
    """A forked child starts with fresh locks and queues: a parent's thread may have held a
    lock at the fork, and the parent's queued releases are the parent's to make."""
    global _LIVE_LOCK, _queued, _wake, _settling, _releaser, _releaser_lock, _renewing
    _LIVE_LOCK = threading.Lock()
    _renewing = weakref.WeakSet()  # the parent's leases are the parent's to renew
    _queued, _wake = queue.SimpleQueue(), queue.SimpleQueue()
    _settling, _releaser_lock = threading.Lock(), threading.Lock()
    _releaser = None


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)


def holder_is_alive(holder: LeaseHolder) -> bool:
    """Whether the lease's holder may still write (see the module docstring)."""
    if holder.host != this_host():
        if holder.renewed_ms is None:
            return True
        return time.time() * 1000 - holder.renewed_ms < LEASE_TTL_S * 1000
    if holder.pid == os.getpid():
        with _LIVE_LOCK:
            return holder.token in _LIVE
    try:
        os.kill(holder.pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass  # another user's process: it exists
    state, started = _proc_stat(holder.pid)
    if state in ("Z", "X"):  # killed, not yet reaped by its parent
        return False
    ticks, _, boot = holder.started.partition("@")  # a lease from before has no boot id
    current_boot = _boot_id()
    if boot and current_boot and boot != current_boot:
        return False  # it ran before a reboot
    return not (ticks and started and started != ticks)
