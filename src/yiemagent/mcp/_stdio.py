"""The stdio transport of `MCPServerStdio`: the server as a subprocess, one JSON-RPC
message per line each way, read in time linear in a line's length.

The SDK's `stdio_client` joins each chunk it reads (64 KiB at most) to the unfinished
line before it and splits the whole again, so a line of n bytes costs time in n² / 64 KiB:
a tool result of tens of MB (a file, a page, a base64 image) took a minute of CPU.
`MessageReader` finds each line's end once, in the bytes it has not searched yet (anyio's
`BufferedByteReceiveStream.receive_until`). Everything else is the SDK's, with its public
pieces: the process starts in a session of its own with the SDK's safe default
environment plus the caller's, its stderr goes to `errlog`; a line is UTF-8 with the
caller's error handler, a CR before the LF is JSON whitespace, a line that is no JSON-RPC
message reaches the session as the pydantic error that refused it and the session goes on,
an unfinished last line is dropped; a line longer than the caller's bound reaches the
session as `LineTooLong`, and its rest is dropped as it is read. Closing closes stdin,
waits out the SDK's grace period, then stops the process group (SIGTERM, then SIGKILL),
each wait bounded. On Windows the SDK's own transport is used.
"""

from __future__ import annotations

import contextlib
import logging
import sys
from collections.abc import AsyncIterator, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, TextIO

if TYPE_CHECKING:
    from anyio.abc import AnyByteReceiveStream, ByteReceiveStream, Process
    from mcp.shared.message import SessionMessage

__all__ = ["LineTooLong", "MessageReader", "parse_line", "stdio_transport"]

logger = logging.getLogger(__name__)

ErrorHandler = Literal["strict", "ignore", "replace"]

_KILL_REAP_S = 2.0
"""How long the event loop gets to see a killed process die, s; only an unkillable one
runs it out."""

_WRITER_FLUSH_S = 0.5
"""How long the writer gets to send the messages it accepted before stdin closes, s."""

_EXIT_POLL_S = 0.01
"""How often the exit code is read while waiting for the process to end, s."""

_HEAD_BYTES = 4096
"""How much of a line that is too long is kept (its id is near the start), bytes."""

_SKIP_BYTES = 65536
"""The most read at once while skipping the rest of a line that is too long, bytes."""


class LineTooLong(ValueError):
    """A line of the server's output longer than the reader's bound.

    Attributes:
        head: the line's first bytes (up to 4 KiB), where a message's id is.
        limit: the bound it passed, bytes.
    """

    def __init__(self, head: bytes, limit: int) -> None:
        self.head = head
        self.limit = limit
        super().__init__(f"a line longer than {limit} bytes")


def parse_line(line: bytes, errors: ErrorHandler = "strict") -> SessionMessage | Exception:
    """One line of the server's output (without its LF) as a message, or the error that
    refused it, returned for the session to see as the SDK's transport hands it over.

    Args:
        line: the bytes of the line, UTF-8.
        errors: the decoding error handler ("replace": a byte that is not UTF-8 becomes
            U+FFFD).

    Returns:
        The `SessionMessage`, or the `UnicodeDecodeError` or pydantic `ValidationError`
        (JSON that does not parse, or is no JSON-RPC message).
    """
    import mcp_types
    from mcp.shared.message import SessionMessage

    try:
        text = line.decode("utf-8", errors)
        message = mcp_types.jsonrpc_message_adapter.validate_json(text, by_name=False)
    except ValueError as exc:
        return exc
    return SessionMessage(message)


class MessageReader:
    """The messages of a server's output stream, one per LF-ended line, in order.

    Reads only as far as the line it returns (no read-ahead while the caller is busy with
    a message); the work per line is linear in its length. A line longer than
    `max_line_bytes` is returned as `LineTooLong` as soon as it passes the bound, and its
    rest is read and dropped a piece at a time, so memory stays within the bound plus one
    read. One consumer.
    """

    def __init__(
        self,
        stream: AnyByteReceiveStream,
        *,
        errors: ErrorHandler = "strict",
        max_line_bytes: int = sys.maxsize,
    ) -> None:
        from anyio.streams.buffered import BufferedByteReceiveStream

        self._buffered = BufferedByteReceiveStream(stream)
        self._errors: ErrorHandler = errors
        self._max_line_bytes = max_line_bytes
        self._skipping = False

    async def receive(self) -> SessionMessage | Exception:
        """The next line's message, or the error that refused it (`parse_line`), or
        `LineTooLong`.

        Raises:
            anyio.EndOfStream: the stream ended; an unfinished last line is dropped, as
                the SDK drops it (a server that died mid-line sent no message).
        """
        import anyio

        limit = self._max_line_bytes
        try:
            if self._skipping:
                await self._skip_line()
            line = await self._buffered.receive_until(b"\n", min(limit + 1, sys.maxsize))
        except anyio.IncompleteRead:
            raise anyio.EndOfStream from None
        except anyio.DelimiterNotFound:  # more than `limit` bytes and no LF yet
            self._skipping = True
            return LineTooLong(await self._buffered.receive(_HEAD_BYTES), limit)
        if len(line) > limit:  # the LF came in the read that passed the bound
            return LineTooLong(line[:_HEAD_BYTES], limit)
        return parse_line(line, self._errors)

    async def _skip_line(self) -> None:
        """Read and drop the rest of a line that is too long, up to its LF.

        The buffer holds no LF when `receive_until` gives up (it searched all of it), so
        the read that finds the LF came from the stream into an empty buffer, and what
        follows the LF goes back into it as the start of the next line.

        Raises:
            anyio.EndOfStream: the stream ended inside the line.
        """
        while True:
            chunk = await self._buffered.receive(_SKIP_BYTES)
            end = chunk.find(b"\n")
            if end >= 0:
                self._buffered.feed_data(chunk[end + 1 :])
                self._skipping = False
                return


@contextlib.asynccontextmanager
async def stdio_transport(
    command: str,
    args: Sequence[str] = (),
    env: Mapping[str, str] | None = None,
    cwd: str | Path | None = None,
    *,
    errlog: TextIO,
    errors: ErrorHandler = "strict",
    max_line_bytes: int = sys.maxsize,
) -> AsyncIterator[tuple[Any, Any]]:
    """Start `command` and yield the session's `(read, write)` streams to it.

    Args:
        command, args: the program and its arguments.
        env: variables added to the SDK's safe default environment.
        cwd: the process's working folder.
        errlog: where its stderr goes (a file with a descriptor).
        errors: the error handler for text that is not UTF-8, both ways.
        max_line_bytes: the longest line read, bytes; a longer one is `LineTooLong` (not
            on Windows: the SDK's transport has no bound).

    Raises:
        OSError: the program cannot start.
    """
    from mcp.client.stdio import StdioServerParameters, get_default_environment, stdio_client

    if sys.platform == "win32":  # pragma: no cover - the SDK's Job Object handling
        params = StdioServerParameters(
            command=command,
            args=list(args),
            env=dict(env) if env is not None else None,
            cwd=cwd,
            encoding_error_handler=errors,
        )
        async with stdio_client(params, errlog=errlog) as streams:
            yield streams
        return

    import anyio
    import anyio.lowlevel
    from mcp.shared.message import SessionMessage

    process = await anyio.open_process(
        [command, *args],
        env=get_default_environment() | dict(env or {}),
        stderr=errlog,
        cwd=cwd,
        start_new_session=True,
    )
    # No await from here until the task group runs, so a cancellation cannot leak the
    # live process.
    to_session, read_stream = anyio.create_memory_object_stream[SessionMessage | Exception](0)
    write_stream, from_session = anyio.create_memory_object_stream[SessionMessage](0)
    shutting_down = False
    writer_done = anyio.Event()
    assert process.stdin is not None and process.stdout is not None
    stdin, stdout = process.stdin, process.stdout

    async def read_stdout() -> None:
        reader = MessageReader(stdout, errors=errors, max_line_bytes=max_line_bytes)
        try:
            async with to_session:
                try:
                    while True:
                        try:
                            item = await reader.receive()
                        except anyio.EndOfStream:
                            return
                        try:
                            await to_session.send(item)
                        except (anyio.ClosedResourceError, anyio.BrokenResourceError):
                            return  # the session is gone
                finally:
                    await _drain(stdout)
        except anyio.ClosedResourceError:
            pass  # our shutdown closed stdout under the read
        except (anyio.BrokenResourceError, ConnectionError):
            # the session sees the connection end either way
            if not shutting_down:
                logger.exception("Reading the MCP server's stdout failed mid-session")

    async def write_stdin() -> None:
        try:
            async with from_session:
                async for outgoing in from_session:
                    line = outgoing.message.model_dump_json(by_alias=True, exclude_unset=True)
                    await stdin.send((line + "\n").encode("utf-8", errors))
        except (anyio.ClosedResourceError, anyio.BrokenResourceError, OSError):
            # The server may live on with its stdin gone: end the session's reading, or a
            # request would wait for ever.
            await to_session.aclose()
        finally:
            writer_done.set()

    async def shutdown() -> None:
        # Reading on into the drain lets a server stuck writing its stdout read its stdin.
        read_stream.close()
        write_stream.close()
        with anyio.move_on_after(_WRITER_FLUSH_S):
            await writer_done.wait()
        await _stop(process)
        for stream in (read_stream, write_stream, to_session, from_session):
            await stream.aclose()
        await anyio.lowlevel.checkpoint()  # the unblocked tasks leave by their except paths

    async with anyio.create_task_group() as tasks:
        tasks.start_soon(read_stdout)
        tasks.start_soon(write_stdin)
        try:
            yield read_stream, write_stream
        finally:
            shutting_down = True
            # every wait inside is bounded; a cancelled caller must not leak the process
            with anyio.CancelScope(shield=True):
                await shutdown()
            tasks.cancel_scope.cancel()  # a survivor holding a pipe end can block a task
    await anyio.lowlevel.cancel_shielded_checkpoint()


async def _drain(stdout: ByteReceiveStream) -> None:
    """Read and drop the rest of the server's output until the pipe closes, so a server
    flushing what it buffered is not blocked on a full pipe and can exit."""
    import anyio

    with (
        anyio.CancelScope(shield=True),
        contextlib.suppress(
            anyio.EndOfStream,
            anyio.ClosedResourceError,
            anyio.BrokenResourceError,
            OSError,
        ),
    ):
        while True:
            await stdout.receive()


async def _stop(process: Process) -> None:
    """Close the server's stdin, give it the SDK's grace period to exit, then stop its
    whole process group (SIGTERM, SIGKILL after the SDK's second period)."""
    from mcp.client.stdio import FORCE_KILL_TIMEOUT, PROCESS_TERMINATION_TIMEOUT
    from mcp.os.posix.utilities import terminate_posix_process_tree

    assert process.stdin is not None and process.stdout is not None
    await _close(process.stdin)
    if not await _exited(process, PROCESS_TERMINATION_TIMEOUT):
        await terminate_posix_process_tree(process, FORCE_KILL_TIMEOUT)
        if not await _exited(process, _KILL_REAP_S):
            logger.warning(
                "MCP server process %d is still alive after SIGKILL; leaving it", process.pid
            )
    await _close(process.stdout)  # a survivor may hold the pipe open: end the reader anyway
    # The subprocess transport stays open (and warns when collected) while a child holds
    # a pipe end; nothing public reaches it.
    transport = getattr(getattr(process, "_process", None), "_transport", None)
    close = getattr(transport, "close", None)
    if callable(close):
        with contextlib.suppress(PermissionError):  # re-killing a setuid child
            close()


async def _close(stream: Any) -> None:
    import anyio

    with contextlib.suppress(OSError, anyio.BrokenResourceError, anyio.ClosedResourceError):
        await stream.aclose()


async def _exited(process: Process, timeout_s: float) -> bool:
    """Whether the process ended within `timeout_s` (s), by its exit code: `wait()` also
    waits for the pipes to close, which a child that inherited them holds open."""
    import anyio

    deadline = anyio.current_time() + timeout_s
    while process.returncode is None:
        if anyio.current_time() >= deadline:
            return False
        await anyio.sleep(_EXIT_POLL_S)
    return True
