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
- **A compressed stream.** The SDKs' client asks for `gzip, deflate`, and a server or proxy
  that compresses `text/event-stream` answers so: all of the above reads the bytes as
  sent, so such a stream is decompressed here (`ContentDecoder`) and handed on without its
  `Content-Encoding` (and `Content-Length`) header. A request offers only those two
  encodings (the HTTP client adds `br` and `zstd` when their packages are installed),
  and a stream in another one is handed on as it came, without the guards above.
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
import zlib
from collections.abc import AsyncIterable, AsyncIterator, Callable
from contextvars import ContextVar
from typing import Any

__all__ = [
    "ContentDecoder",
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


class ContentDecoder:
    """Decompresses a body sent with `Content-Encoding: gzip` or `deflate`, chunk by chunk.
    "deflate" is zlib-wrapped by the standard, but some servers send it raw: its first two
    bytes tell which."""

    ENCODINGS = ("gzip", "x-gzip", "deflate")
    """What it decodes, and so all a request of this transport offers."""

    def __init__(self, gzip: bool) -> None:
        self._inflater: Any = zlib.decompressobj(16 + zlib.MAX_WBITS) if gzip else None
        self._head = b""

    @classmethod
    def of(cls, encoding: str) -> ContentDecoder | None:
        """The decoder of a `Content-Encoding` value; None for another encoding, or none."""
        name = encoding.strip().lower()
        return cls(name != "deflate") if name in cls.ENCODINGS else None

    def decode(self, data: bytes) -> bytes:
        """The decompressed bytes `data` completes (maybe none yet).

        Raises:
            zlib.error: the bytes are not of the encoding.
        """
        if self._inflater is None:  # deflate: which kind, once two bytes are known
            self._head += data
            if len(self._head) < 2:
                return b""
            data, self._head = self._head, b""
            wrapped = data[0] & 0x0F == 8 and (data[0] << 8 | data[1]) % 31 == 0
            self._inflater = zlib.decompressobj(zlib.MAX_WBITS if wrapped else -zlib.MAX_WBITS)
        out: bytes = self._inflater.decompress(data)
        return out

    def flush(self) -> bytes:
        """What is left once the body has ended."""
        if self._inflater is None:
            head, self._head = self._head, b""
            return zlib.decompress(head, -zlib.MAX_WBITS) if head else b""
        rest: bytes = self._inflater.flush()
        return rest


def _decodable(offered: str) -> str:
    """The `Accept-Encoding` value `offered` without the encodings `ContentDecoder` does not
    decode ("identity" when none is left)."""
    known = (*ContentDecoder.ENCODINGS, "identity")
    kept = [part.strip() for part in offered.split(",")]
    return ", ".join(p for p in kept if p.split(";")[0].strip().lower() in known) or "identity"


def ended_with_done(response: Any) -> bool:
    """Whether the event stream of `response` (an SDK's raw `http_response`, read) held its
    `data: [DONE]` line; False for a body this transport did not watch (not an event
    stream, or in an encoding it does not decode)."""
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
        def __init__(self, inner: Any, url: str, encoding: str) -> None:
            self._inner = inner
            self._url = url
            self._encoding = encoding.strip().lower()
            identity = self._encoding in ("", "identity")
            self._decoder = None if identity else ContentDecoder.of(encoding)
            self.readable = identity or self._decoder is not None
            """Whether the events are read here (the bytes not in another encoding)."""
            self.received = 0
            self.done = DoneScanner()

        async def __aiter__(self) -> AsyncIterator[bytes]:
            source = self._counted()
            if self.readable:
                source = events_with_data(repair_utf8(self._scanned(self._decoded(source))))
            async for chunk in source:
                yield chunk

        async def _counted(self) -> AsyncIterator[bytes]:
            try:
                async for chunk in self._inner:
                    self.received += len(chunk)
                    arrived = stream_bytes_arrived.get()
                    if arrived is not None:
                        arrived()
                    yield chunk
            except closed_errors as exc:
                text = (
                    "connection error: the server closed the connection mid-stream after "
                    f"{self.received} bytes ({self._url})"
                )
                raise _explained(type(exc), text, exc) from exc

        async def _decoded(self, chunks: AsyncIterable[bytes]) -> AsyncIterator[bytes]:
            decoder = self._decoder
            if decoder is None:
                async for chunk in chunks:
                    yield chunk
                return
            try:
                async for chunk in chunks:
                    if data := decoder.decode(chunk):
                        yield data
                if rest := decoder.flush():
                    yield rest
            except zlib.error as exc:
                text = f"the server's event stream is not in the {self._encoding} it says: {exc}"
                raise httpx.DecodingError(text) from exc

        async def _scanned(self, chunks: AsyncIterable[bytes]) -> AsyncIterator[bytes]:
            async for chunk in chunks:
                self.done.feed(chunk)
                yield chunk
            self.done.close()

        async def aclose(self) -> None:
            await self._inner.aclose()

    class GuardedTransport(httpx.AsyncBaseTransport):  # type: ignore[misc]
        def __init__(self) -> None:
            # The SDKs' own default limits (a client given a transport ignores `limits=`).
            limits = httpx.Limits(max_connections=1000, max_keepalive_connections=100)
            self._inner = httpx.AsyncHTTPTransport(limits=limits)

        async def handle_async_request(self, request: Any) -> Any:
            url = str(request.url)
            offered = request.headers.get("accept-encoding")
            if offered is not None:
                request.headers["accept-encoding"] = _decodable(offered)
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
            encoding = response.headers.get("content-encoding", "identity")
            stream = _GuardedStream(response.stream, url, encoding)
            headers = response.headers.copy()
            if stream.readable:  # decoded here: the client must not decode it again
                headers.pop("content-encoding", None)
                # Filtered, the bytes may change length; an empty body stays empty, and its
                # length says so to the reader (`_sdk_call`: "an empty body").
                if headers.get("content-length", "").strip() != "0":
                    headers.pop("content-length", None)
            return httpx.Response(
                status_code=response.status_code,
                headers=headers,
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
