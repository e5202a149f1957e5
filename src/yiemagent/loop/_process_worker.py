"""The child side of `isolation="process"` tools (DESIGN R-4.5; docs/tools.md "Timeouts,
and stopping a tool"): a small loop in its own Python process that runs one tool call at a
time.

Protocol (pickle frames, 4-byte big-endian length first) on two private file descriptors
(the process's stdin/stdout at start; fd 0 becomes /dev/null and fd 1 a copy of stderr, so
a tool that prints cannot corrupt the frames):
  parent → child: `(target, tool_call_id, args)`, `target = (module, file, qualname,
  digest)`; a tool file's module (a digest) the child has not run yet it asks for with
  `("code", None)`, and the parent sends its marshalled code: the code the parent's module
  ran, whatever the file holds now;
  child → parent: `("update", AgentToolResult)`* then `("ok", value)`, `("error", text)` (the
  tool's `Exception`) or `("raised", "Class: text")` (a `BaseException` such as `SystemExit`).
The process ends when its input closes, or when its parent is gone (checked every 0.5 s), so
a killed agent leaves no worker behind.
"""

from __future__ import annotations

import asyncio
import importlib
import inspect
import marshal
import os
import pickle
import struct
import sys
import threading
import time
from collections.abc import Callable
from types import ModuleType
from typing import IO, Any

from yiemagent.errors import exception_summary, exception_text

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


_modules: dict[tuple[str, str], Any] = {}
"""The tool file modules run so far, by (module name, digest of their code)."""


def _resolve(target: tuple[str, str | None, str, str | None], fetch: Callable[[], bytes]) -> Any:
    module_name, file, qualname, digest = target
    if file is None or digest is None:
        module: Any = importlib.import_module(module_name)
    else:
        module = _modules.get((module_name, digest))
        if module is None:
            module = _modules[(module_name, digest)] = _run(module_name, file, fetch())
    value = module
    for part in qualname.split("."):
        value = getattr(value, part)
    return value


def _run(module_name: str, file: str, code: bytes) -> ModuleType:
    """Tool file `file`'s module, made by running `code` (marshalled), the code it ran in
    the parent.

    Raises:
        RuntimeError: the code fails here (`SystemExit` included: the file's failure, not
            the call's); the text says it is the file.
    """
    module = ModuleType(module_name)
    module.__file__ = file
    sys.modules[module_name] = module  # dataclasses and pickle look modules up by name
    try:
        exec(marshal.loads(code), module.__dict__)
    except BaseException as exc:
        sys.modules.pop(module_name, None)
        if isinstance(exc, KeyboardInterrupt):
            raise
        raise RuntimeError(
            f"the tool file {file} failed to load in the tool's process: {exception_summary(exc)}"
        ) from None
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

    def fetch() -> bytes:
        send(("code", None))
        code: bytes = read_frame(inp)
        return code

    while True:
        try:
            target, call_id, args = read_frame(inp)
        except EOFError:
            return
        try:
            value = _resolve(target, fetch)(call_id, args, AbortSignal(), on_update)
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
