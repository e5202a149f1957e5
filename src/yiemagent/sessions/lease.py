"""Writer leases: one writer per session at a time (DESIGN §10; docs/sessions.md "One writer").

A lease names its holder: a random token, the host, the process id and the process's start
time (Linux: `/proc/<pid>/stat`, so a recycled pid is not taken for the dead holder). Whether
a lease's holder is still there is decided here, the same way for every store:

- held in this process: alive while its token is in this process's live set (it leaves the
  set when the lease is released, its store closes, or the agent holding it is collected);
- held by another process on this host: alive while that pid runs and started when the
  lease says;
- held on another host: assumed alive (a pid there cannot be checked); `force_release` it.

A lease whose holder is gone (a process killed with SIGKILL) is taken over by the next writer.
"""

from __future__ import annotations

import os
import socket
import threading
import uuid
from dataclasses import dataclass

from yiemagent.errors import SessionBusyError

__all__ = [
    "LeaseHolder",
    "busy_error",
    "drop",
    "forget",
    "holder_is_alive",
    "new_holder",
    "this_host",
]

_LIVE: set[str] = set()
_LIVE_LOCK = threading.RLock()  # re-entrant: see `drop`


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

    def describe(self) -> str:
        """For error messages: "another Agent in this process", "process 1234 on host h"."""
        if self.pid == os.getpid() and self.host == this_host():
            return f"another Agent in this process (pid {self.pid})"
        return f"process {self.pid} on host {self.host}"


def busy_error(session_id: str, holder: LeaseHolder) -> SessionBusyError:
    """The error for a write or an `acquire` refused because `holder` has the session."""
    remedy = (
        "the holder on another host cannot be checked from here; if it is gone, call "
        "store.force_release(session_id)"
        if holder.host != this_host()
        else "close that Agent (await agent.close()) or let its process end, or use another "
        "session_id"
    )
    return SessionBusyError(
        f"session {session_id!r} is being written by {holder.describe()}; one writer per "
        f"session: {remedy}"
    )


def this_host() -> str:
    """This machine's host name."""
    return socket.gethostname()


def process_start_time(pid: int) -> str:
    """The start time of process `pid` (clock ticks since boot, from `/proc/<pid>/stat`), or
    "" where unknown (not Linux, no such process)."""
    return _proc_stat(pid)[1]


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

    An agent that is collected releases its lease from a `weakref.finalize`, and a
    collection runs on whichever thread allocates: inside a store method holding the
    store's lock, or inside `forget` holding this module's. Those locks are re-entrant
    (`threading.RLock`), so that release does not wait on its own thread forever.
    """
    forget(token)
    holder = held.get(session_id)
    if holder is not None and holder.token == token:
        del held[session_id]


def holder_is_alive(holder: LeaseHolder) -> bool:
    """Whether the lease's holder may still write (see the module docstring)."""
    if holder.host != this_host():
        return True
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
    return not (holder.started and started and started != holder.started)
