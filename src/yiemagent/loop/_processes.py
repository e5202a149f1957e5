"""Worker processes for `isolation="process"` tools (DESIGN R-4.5; docs/tools.md "Stoppable
tools").

A plain function on a thread cannot be stopped once it runs; a function in a child process
can: a timeout or an abort kills the process. Workers are reused while idle (up to
`IDLE_WORKERS`), so a call costs a round trip over two pipes, not a process start; a killed or
broken worker is replaced by a new one on the next call. The calling side of one call runs on
a tool worker thread (it blocks on the pipe); killing the process ends that read at once.

The tool's `execute` must be a plain or async function defined at the top level of a module
or a tool file (the child imports it by module name, or loads the file); its arguments,
updates and result cross the process boundary by pickle.
"""

from __future__ import annotations

import contextlib
import inspect
import os
import subprocess
import sys
import threading
from collections.abc import Callable
from typing import Any

from yiemagent.errors import ConfigError
from yiemagent.loop._process_worker import read_frame, write_frame

__all__ = ["IDLE_WORKERS", "ProcessCall", "process_target"]

IDLE_WORKERS = 8
"""Idle worker processes kept for reuse."""

_idle: list[subprocess.Popen[bytes]] = []
_idle_lock = threading.Lock()
_BOOT = "from yiemagent.loop._process_worker import main; main()"


def process_target(execute: Callable[..., Any]) -> tuple[str, str | None, str]:
    """How a child process finds `execute`: (module name, file to load or None, qualname).

    Raises:
        ConfigError: `execute` is not a function defined at the top level of a module.
    """
    qualname = getattr(execute, "__qualname__", "")
    module_name = getattr(execute, "__module__", None)
    if not inspect.isfunction(execute) or "<" in qualname or not module_name:
        raise ConfigError(
            f'isolation="process" needs execute to be a function defined at the top level of '
            f"a module or tool file, not {execute!r}"
        )
    if module_name == "__main__":  # loading the script again in the child would re-run it
        raise ConfigError(
            f'isolation="process": {qualname} is defined in the main script; define it in a '
            "module (or a tool file) the child process can import"
        )
    module = sys.modules.get(module_name)
    spec = getattr(module, "__spec__", None)
    if not module_name.startswith("_yiemagent_") and spec is not None and spec.name == module_name:
        return module_name, None, qualname  # importable by name in the child
    file = getattr(module, "__file__", None) or execute.__code__.co_filename
    if not file or not os.path.isfile(file):
        raise ConfigError(f'isolation="process": cannot find the file that defines {qualname}')
    return module_name, os.path.abspath(file), qualname


def _spawn() -> subprocess.Popen[bytes]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p or os.getcwd() for p in sys.path)
    return subprocess.Popen(
        [sys.executable, "-c", _BOOT],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        env=env,
    )


class ProcessCall:
    """One call of a tool in a worker process; `run` blocks (call it on a worker thread),
    `kill` (any thread) stops the process and makes `run` raise."""

    __slots__ = ("_killed", "_lock", "_proc", "pid")

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._proc: subprocess.Popen[bytes] | None = None
        self._killed: str | None = None
        self.pid: int | None = None
        """The worker's process id while the call runs."""

    def run(
        self,
        target: tuple[str, str | None, str],
        tool_call_id: str,
        args: dict[str, Any],
        on_update: Callable[[Any], None],
    ) -> Any:
        """Send the call to a worker and wait for its result.

        Raises:
            RuntimeError: the tool raised (its text), the process was killed (`kill`), or it
                died.
        """
        proc = self._checkout()
        try:
            assert proc.stdin is not None and proc.stdout is not None
            write_frame(proc.stdin, (target, tool_call_id, args))
            while True:
                kind, value = read_frame(proc.stdout)
                if kind != "update":
                    break
                on_update(value)
        except (EOFError, OSError) as exc:
            _stop(proc)
            reason = self._killed or f"the tool process {proc.pid} died ({exc})"
            raise RuntimeError(reason) from None
        except BaseException:
            _stop(proc)
            raise
        _checkin(proc)
        if kind == "error":
            raise RuntimeError(value)
        return value

    def kill(self, reason: str) -> None:
        """Kill the worker (the call's `run` raises `RuntimeError(reason)`); idempotent."""
        with self._lock:
            if self._killed is None:
                self._killed = reason
            proc = self._proc
        if proc is not None:  # the reading thread sees EOF, then reaps the process
            with contextlib.suppress(OSError):
                proc.kill()

    def _checkout(self) -> subprocess.Popen[bytes]:
        with _idle_lock:
            proc = _idle.pop() if _idle else None
        if proc is None:
            proc = _spawn()
        with self._lock:
            self._proc = proc
            self.pid = proc.pid
            killed = self._killed
        if killed is not None:
            _stop(proc)
            raise RuntimeError(killed)
        return proc


def _checkin(proc: subprocess.Popen[bytes]) -> None:
    with _idle_lock:
        if len(_idle) < IDLE_WORKERS and proc.poll() is None:
            _idle.append(proc)
            return
    _stop(proc)


def _stop(proc: subprocess.Popen[bytes]) -> None:
    with contextlib.suppress(OSError):
        proc.kill()
    for stream in (proc.stdin, proc.stdout):
        with contextlib.suppress(OSError):
            if stream is not None:
                stream.close()
    with contextlib.suppress(subprocess.TimeoutExpired, OSError):
        proc.wait(timeout=5)
