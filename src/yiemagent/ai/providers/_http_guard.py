"""The HTTP transport under both SDK clients: streamed bytes made valid UTF-8, and a cut
stream explained (DESIGN §8).

- **Invalid UTF-8.** The SDKs decode each SSE line strictly, so one bad byte from a server
  (a proxy that cut a character in two, a buggy upstream) would fail the whole message with
  `UnicodeDecodeError`. An event stream's bytes pass through an incremental UTF-8 decoder
  with `errors="replace"` first: a bad byte becomes U+FFFD and the answer is kept; a
  character split across chunks is joined, not replaced (`repair_utf8`).
- **Events without data.** The SSE standard dispatches no event whose data is empty, but
  the SDKs' decoder dispatches one after `retry:` or `id:` lines, after a comment once an
  earlier event had an `id:`, or for an empty `data:` keep-alive, and `json.loads("")`
  then fails the answer (openai/openai-python#2722). Such events are left out of the
  bytes the SDK reads (`events_with_data`).
- **Progress below the events.** Each chunk of an event stream's bytes calls the
  `stream_bytes_arrived` callback of the task reading it (a context variable): a server's
  SSE comment lines (OpenRouter's `: OPENROUTER PROCESSING` while an upstream model thinks)
  never reach the SDK's events, yet they say the stream is alive.
- **The stream's end marker.** Whether an event stream's bytes held `data: [DONE]`, the
  line a Chat Completions server ends its answer with (`ended_with_done`): the SDK reads it
  and stops, and a server that sends no finish reason has said by it that its answer is
  whole, where a stream closed without it was cut off.
- **A connection cut mid-stream** (reset, closed early) raises the HTTP client's bare
  `ReadError: ` or the SDK's `Connection error.`. It is raised again as the same error
  type (so retries classify it as before) with a text that says what happened: "connection
  error: the server closed the connection mid-stream after N bytes (URL)", or "... before
  answering (URL)" when no response had arrived. Whether it was retried is added by the
  retry loop (`_retry.retry_note`). Refused connections and timeouts keep their own texts.

The SDKs use `httpx` (here the `httpx2` distribution); the transport is built for whichever
module the SDK's client class comes from.
"""

from __future__ import annotations

import codecs
import contextlib
import importlib
import re
from collections.abc import AsyncIterable, AsyncIterator, Callable
from contextvars import ContextVar
from typing import Any

__all__ = [
    "DoneScanner",
    "cut_stream_text",
    "ended_with_done",
    "events_with_data",
    "guarded_http_client",
    "repair_utf8",
    "stream_bytes_arrived",
]

stream_bytes_arrived: ContextVar[Callable[[], None] | None] = ContextVar(
    "yiemagent_stream_bytes_arrived", default=None
)
"""Called (no arguments, on the reading task) for each chunk of event-stream bytes that
arrives, whether or not it completes an event; None: nobody is watching."""

_EXPLAINED = "yiemagent_cut_stream"
"""The attribute that carries a cut stream's explanation on the error this transport raised
(an attribute, not a weak mapping: some error types cannot be weakly referenced)."""
_transports: dict[str, Callable[[], Any]] = {}
_DONE_SEEN = "yiemagent_done_seen"
"""The response extension holding the `DoneScanner` of an event stream's bytes."""
_DONE_LINE = re.compile(rb"(?:^|[\r\n])data: ?\[DONE\][ \t]*(?:\r?\n|$)")


class DoneScanner:
    """Watches an event stream's bytes, chunk by chunk, for its `data: [DONE]` line (also
    split across chunks); `seen` once it has passed whole (its line ended, or the
    stream did right after it)."""

    def __init__(self) -> None:
        self.seen = False
        self._tail = b""

    def feed(self, chunk: bytes) -> None:
        """Take the stream's next bytes."""
        if self.seen:
            return
        text = self._tail + chunk
        # a marker at the very end may still be "[DONE]x": decided by the next chunk or `close`
        self.seen = any(
            m.end() < len(text) or m.group().endswith(b"\n") for m in _DONE_LINE.finditer(text)
        )
        self._tail = text[-20:]

    def close(self) -> None:
        """The stream ended: a marker that ended its bytes counts."""
        self.seen = self.seen or _DONE_LINE.search(self._tail) is not None


def ended_with_done(response: Any) -> bool:
    """Whether the event stream of `response` (an SDK's raw `http_response`, read) held its
    `data: [DONE]` line; False for a body this transport did not watch (not an event
    stream, or compressed)."""
    scanner = getattr(response, "extensions", {}).get(_DONE_SEEN)
    return isinstance(scanner, DoneScanner) and scanner.seen


def cut_stream_text(exc: BaseException) -> str | None:
    """The explanation ("the server closed the connection mid-stream after N bytes (URL)") of
    a connection cut this transport raised, None for any other error."""
    text = getattr(exc, _EXPLAINED, None)
    return text if isinstance(text, str) else None


async def repair_utf8(chunks: AsyncIterable[bytes]) -> AsyncIterator[bytes]:
    """`chunks` as valid UTF-8: invalid bytes become U+FFFD, characters split across chunks
    are kept whole (the output joined equals `b"".join(chunks).decode("utf-8", "replace")`
    encoded)."""
    decoder = codecs.getincrementaldecoder("utf-8")("replace")
    async for chunk in chunks:
        text = decoder.decode(chunk)
        if text:
            yield text.encode("utf-8")
    tail = decoder.decode(b"", final=True)
    if tail:
        yield tail.encode("utf-8")


async def events_with_data(chunks: AsyncIterable[bytes]) -> AsyncIterator[bytes]:
    """`chunks` of an event stream without its events that hold no data (only comments,
    `id:`, `retry:` or `event:` lines, or `data:` lines that are all blank): each event
    is given out whole once its blank line arrives, as sent; bytes after the last blank
    line are given out at the end."""
    pending = b""  # the last line, not ended yet
    event: list[bytes] = []  # the ended lines of the event being read
    has_data = False
    async for chunk in chunks:
        lines = (pending + chunk).split(b"\n")
        pending = lines.pop()
        out: list[bytes] = []
        for line in lines:
            event.append(line + b"\n")
            if line.rstrip(b"\r"):
                has_data = has_data or (line.startswith(b"data:") and bool(line[5:].strip()))
                continue
            if has_data:
                out.extend(event)
            event, has_data = [], False
        if out:
            yield b"".join(out)
    rest = b"".join(event) + pending
    if rest:
        yield rest


def guarded_http_client(client_class: type[Any]) -> Any:
    """A new `client_class` (an SDK's `DefaultAsyncHttpxClient`, keeping its timeouts and
    redirects) whose transport repairs event-stream bytes and explains a cut connection."""
    module_name = next(
        c.__module__.split(".")[0] for c in client_class.__mro__ if c.__name__ == "AsyncClient"
    )
    make = _transports.get(module_name)
    if make is None:
        make = _transports[module_name] = _transport_class(importlib.import_module(module_name))
    return client_class(transport=make())


def _transport_class(httpx: Any) -> Callable[[], Any]:
    # The server went away; timeouts, refused connections and the like keep their own text.
    closed_errors = (httpx.ReadError, httpx.WriteError, httpx.CloseError, httpx.RemoteProtocolError)

    class _GuardedStream(httpx.AsyncByteStream):  # type: ignore[misc]
        def __init__(self, inner: Any, url: str, plain: bool) -> None:
            self._inner = inner
            self._url = url
            self._plain = plain  # not compressed: the bytes are the events
            self.received = 0
            self.done = DoneScanner()

        async def __aiter__(self) -> AsyncIterator[bytes]:
            source = self._counted()
            stream = events_with_data(repair_utf8(source)) if self._plain else source
            async for chunk in stream:
                yield chunk

        async def _counted(self) -> AsyncIterator[bytes]:
            try:
                async for chunk in self._inner:
                    self.received += len(chunk)
                    if self._plain:
                        self.done.feed(chunk)
                    arrived = stream_bytes_arrived.get()
                    if arrived is not None:
                        arrived()
                    yield chunk
                self.done.close()
            except closed_errors as exc:
                text = (
                    "connection error: the server closed the connection mid-stream after "
                    f"{self.received} bytes ({self._url})"
                )
                raise _explained(type(exc), text, exc) from exc

        async def aclose(self) -> None:
            await self._inner.aclose()

    class GuardedTransport(httpx.AsyncBaseTransport):  # type: ignore[misc]
        def __init__(self) -> None:
            # The SDKs' own default limits (a client given a transport ignores `limits=`).
            limits = httpx.Limits(max_connections=1000, max_keepalive_connections=100)
            self._inner = httpx.AsyncHTTPTransport(limits=limits)

        async def handle_async_request(self, request: Any) -> Any:
            url = str(request.url)
            try:
                response = await self._inner.handle_async_request(request)
            except closed_errors as exc:
                text = (
                    f"connection error: the server closed the connection before answering ({url})"
                )
                raise _explained(type(exc), text, exc) from exc
            content_type = response.headers.get("content-type", "")
            if "text/event-stream" not in content_type:
                return response
            encoding = response.headers.get("content-encoding", "identity").lower()
            stream = _GuardedStream(response.stream, url, encoding in ("", "identity"))
            return httpx.Response(
                status_code=response.status_code,
                headers=response.headers,
                stream=stream,
                extensions={**response.extensions, _DONE_SEEN: stream.done},
                request=request,
            )

        async def aclose(self) -> None:
            await self._inner.aclose()

    def _explained(kind: type[BaseException], text: str, cause: BaseException) -> BaseException:
        try:
            request = cause.request  # type: ignore[attr-defined]  # raises when unset
        except Exception:
            request = None
        try:
            error = kind(text, request=request)  # type: ignore[call-arg]
        except Exception:
            error = cause
        with contextlib.suppress(AttributeError, TypeError):
            setattr(error, _EXPLAINED, text)
        return error

    return GuardedTransport
