"""The child side of `isolation="process"` tools (DESIGN R-4.5; docs/tools.md "Timeouts,
and stopping a tool"): a small loop in its own Python process that runs one tool call at a
time.

Protocol (pickle frames, 4-byte big-endian length first) on two private file descriptors
(the process's stdin/stdout at start; fd 0 becomes /dev/null and fd 1 a copy of stderr, so
a tool that prints cannot corrupt the frames):
  parent → child: `(target, tool_call_id, args)`, `target = (module, file, qualname)`;
  child → parent: `("update", AgentToolResult)`* then `("ok", value)`, `("error", text)` (the
  tool's `Exception`) or `("raised", "Class: text")` (a `BaseException` such as `SystemExit`).
The process ends when its input closes, or when its parent is gone (checked every 0.5 s), so
a killed agent leaves no worker behind.
"""

from __future__ import annotations

import asyncio
import importlib
import inspect
import os
import pickle
import struct
import threading
import time
from pathlib import Path
from typing import IO, Any

from yiemagent.errors import exception_summary, exception_text
from yiemagent.files import import_file

__all__ = ["main", "read_frame", "write_frame"]

_HEADER = struct.Struct(">I")


def write_frame(stream: IO[bytes], value: object) -> None:
    """Send one pickled frame and flush."""
    data = pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL)
    stream.write(_HEADER.pack(len(data)) + data)
    stream.flush()


def read_frame(stream: IO[bytes]) -> Any:
    """Receive one frame; `EOFError` when the other side closed."""
    header = stream.read(_HEADER.size)
    if len(header) < _HEADER.size:
        raise EOFError("the other side closed the pipe")
    (size,) = _HEADER.unpack(header)
    data = stream.read(size)
    if len(data) < size:
        raise EOFError("the other side closed the pipe mid-frame")
    return pickle.loads(data)


_modules: dict[tuple[str, str], tuple[int, Any]] = {}


def _resolve(target: tuple[str, str | None, str]) -> Any:
    module_name, file, qualname = target
    if file is None:
        module: Any = importlib.import_module(module_name)
    else:
        module = _load(module_name, file)
    value = module
    for part in qualname.split("."):
        value = getattr(value, part)
    return value


def _load(module_name: str, file: str) -> Any:
    """The module of tool file `file`, imported again when it changed since the last call.

    Raises:
        RuntimeError: the file is gone or fails to import (`SystemExit` included: the
            file's failure, not the call's); the text says it is the file.
    """
    try:
        mtime = os.stat(file).st_mtime_ns
        cached = _modules.get((module_name, file))
        if cached is not None and cached[0] == mtime:
            return cached[1]
        module = import_file(Path(file), module_name)
    except BaseException as exc:
        if isinstance(exc, KeyboardInterrupt):
            raise
        raise RuntimeError(
            f"the tool file {file} failed to load in the tool's process (was it changed "
            f"after it was loaded?): {exception_summary(exc)}"
        ) from None
    _modules[(module_name, file)] = (mtime, module)
    return module


def _watch_parent(parent: int) -> None:
    while True:
        time.sleep(0.5)
        if os.getppid() != parent:
            os._exit(1)


def main() -> None:
    """Serve calls until the input closes."""
    parent = os.getppid()
    threading.Thread(target=_watch_parent, args=(parent,), daemon=True).start()
    inp = os.fdopen(os.dup(0), "rb")
    out = os.fdopen(os.dup(1), "wb")
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.dup2(2, 1)
    from yiemagent.types.signal import AbortSignal
    from yiemagent.types.tools import AgentToolResult

    lock = threading.Lock()

    def send(frame: tuple[str, Any]) -> None:
        with lock:
            write_frame(out, frame)

    def on_update(partial: AgentToolResult) -> None:
        send(("update", partial))

    while True:
        try:
            target, call_id, args = read_frame(inp)
        except EOFError:
            return
        try:
            value = _resolve(target)(call_id, args, AbortSignal(), on_update)
            if inspect.isawaitable(value):
                value = asyncio.run(_await(value))
            frame: tuple[str, Any] = ("ok", value)
            pickle.dumps(value)
        except Exception as exc:  # the tool's failure, reported as its result
            frame = ("error", exception_text(exc))
        except BaseException as exc:  # SystemExit, KeyboardInterrupt: still the tool's
            frame = ("raised", exception_summary(exc))
        send(frame)


async def _await(value: Any) -> Any:
    return await value


if __name__ == "__main__":
    main()
