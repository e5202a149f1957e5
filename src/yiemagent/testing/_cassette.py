"""Recorded model calls: `record(model, path)` wraps a model and appends each request with
its streamed answer to a JSONL cassette; `replay(path, model=None)` answers from the
cassette, offline, each request with the first unused recording of an equal request (so
concurrent runs replay in any order; without `model`, the recording of whichever model),
and raises `CassetteMismatch` when no recording is left for a request.

A cassette line is `{"format", "request", "events", "message"}`:
- `format`: 2; a line of a later format is refused; a line without it was recorded before
  the options held since (the thinking budget, cache retention and metadata), and its
  request is matched without them;
- `request`: what the provider was asked, normalised so that the same conversation gives
  the same request on every run: the model (provider/id), system prompt, messages without
  timestamps, durations, usage or tool details, tool-call ids renumbered `call_1`,
  `call_2`, … in order of appearance, the tools (name, description, input schema), and
  every call option that changes what a provider is sent (`REQUEST_OPTIONS`). Never the
  API key or the HTTP headers, nor the session id (a prompt-cache key, random per session,
  that changes no answer); `on_payload` is code, so a body it rewrites is recorded as it
  was built.
- `events`: the answer's stream events without their partial message (deltas, block ends,
  the final `done` / `error`), replayed through a `MessageBuilder` into the same events;
- `message`: the final assistant message (its usage and cost included).
Before a line is written, every secret it might carry — the call's API key, the values of
authorization-like headers, and the environment's `*_API_KEY` / `*_TOKEN` / `*_SECRET`
values — is replaced by `<redacted>`. A recording cut off by a crash (a last line without
its newline) is skipped by `replay` and removed by the next recording's append.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import difflib
import json
import logging
import os
import threading
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, fields
from os import PathLike
from pathlib import Path
from typing import Any

from yiemagent.ai import get_stream_fn, register_api
from yiemagent.ai.builder import MessageBuilder
from yiemagent.errors import ConfigError, YiemAgentError, exception_summary
from yiemagent.types.callbacks import maybe_await
from yiemagent.types.messages import (
    AssistantMessage,
    TextContent,
    ThinkingContent,
    ToolCall,
    Usage,
    message_from_dict,
    message_to_dict,
)
from yiemagent.types.model import (
    AssistantMessageEvent,
    AssistantMessageEventStream,
    Context,
    DoneEvent,
    ErrorEvent,
    FallbackEvent,
    Model,
    StreamOptions,
    TextDeltaEvent,
    TextEndEvent,
    TextStartEvent,
    ThinkingDeltaEvent,
    ThinkingEndEvent,
    ThinkingStartEvent,
    ToolCallDeltaEvent,
    ToolCallEndEvent,
    ToolCallStartEvent,
)

__all__ = [
    "RECORD_API",
    "REPLAY_API",
    "CassetteMismatch",
    "RecordingModel",
    "ReplayModel",
    "normalise_request",
    "record",
    "replay",
]

logger = logging.getLogger(__name__)

RECORD_API = "cassette-record"
REPLAY_API = "cassette-replay"
REDACTED = "<redacted>"

FORMAT = 2
"""The cassette line format `record` writes (the `format` key)."""
REQUEST_OPTIONS = (
    "temperature",
    "max_tokens",
    "reasoning",
    "thinking_budget",
    "cache_retention",
    "metadata",
    "output_schema",
)
"""The keys of a recorded request's `options`: each call option that changes what a
provider is sent, present when it is not the provider's default."""
_OPTIONS_SINCE_FORMAT_2 = ("thinking_budget", "cache_retention", "metadata")

_DROPPED_KEYS = frozenset({"timestamp", "duration_ms", "usage", "details", "executed_arguments"})
_SECRET_HEADERS = ("authorization", "api-key", "apikey", "token", "secret", "cookie")
_SECRET_ENV_SUFFIXES = ("_API_KEY", "_TOKEN", "_SECRET", "_ACCESS_KEY")
_MIN_SECRET_CHARS = 8


class CassetteMismatch(YiemAgentError, AssertionError):
    """A request sent to a `replay` model differs from the one recorded at its place in the
    cassette (or the cassette has no more requests); the text names the request's number,
    its first difference (`"old" → "new" at path`), the cassette, and shows the difference
    as a unified diff (recorded, then sent), or says which equal recording already
    answered an earlier request."""


# ── the request, normalised ──────────────────────────────────────────────────


def _renumber(value: Any, ids: dict[str, str]) -> Any:
    if isinstance(value, dict):
        out: dict[str, Any] = {}
        for key, item in value.items():
            if key in _DROPPED_KEYS or (key == "thought_signature" and item is None):
                continue  # (no signature: recorded as before ToolCall had the field)
            if key in ("tool_call_id",) or (key == "id" and value.get("type") == "toolCall"):
                item = ids.setdefault(str(item), f"call_{len(ids) + 1}")
            out[key] = _renumber(item, ids)
        return out
    if isinstance(value, list):
        return [_renumber(item, ids) for item in value]
    return value


def normalise_request(
    model: Model, context: Context, options: StreamOptions | None
) -> dict[str, Any]:
    """What a cassette records of one model call: the same conversation gives the same
    request on every run (no timestamps, durations or usage; tool-call ids renumbered in
    order of appearance); its `options` (`REQUEST_OPTIONS`) hold each call option that
    changes what a provider is sent: `thinking_budget` is `thinking_budgets`' entry for the
    `reasoning` level asked for, `cache_retention` is left out when it is the default
    ("short"), `metadata` is recorded as strings, as OpenAI is sent it. No API key, no
    headers and no session id."""
    ids: dict[str, str] = {}
    messages = [_renumber(message_to_dict(m), ids) for m in context.messages]
    tools = [
        {"name": t.name, "description": t.description, "input_schema": t.input_schema}
        for t in context.tools or ()
    ]
    opts = options or StreamOptions()
    budgets = opts.thinking_budgets or {}
    generation = {
        "temperature": opts.temperature,
        "max_tokens": opts.max_tokens,
        "reasoning": opts.reasoning,
        "thinking_budget": budgets.get(opts.reasoning) if opts.reasoning else None,
        "cache_retention": None if opts.cache_retention == "short" else opts.cache_retention,
        "metadata": {str(k): str(v) for k, v in (opts.metadata or {}).items()} or None,
        "output_schema": dict(opts.output_schema) if opts.output_schema else None,
    }
    return {
        "model": f"{model.provider}/{model.id}",
        "system_prompt": context.system_prompt,
        "messages": messages,
        "tools": tools,
        "options": {k: v for k, v in generation.items() if v is not None},
    }


def _secrets(options: StreamOptions | None, model: Model) -> list[str]:
    found: list[str] = []
    if options is not None and options.api_key:
        found.append(options.api_key)
    for headers in (model.headers, options.headers if options else None):
        for name, value in (headers or {}).items():
            if any(word in name.lower() for word in _SECRET_HEADERS):
                found.append(str(value))
                found.append(str(value).removeprefix("Bearer ").strip())
    for name, value in os.environ.items():
        if name.upper().endswith(_SECRET_ENV_SUFFIXES):
            found.append(value)
    return sorted({s for s in found if len(s) >= _MIN_SECRET_CHARS}, key=len, reverse=True)


def _redact(line: str, secrets: Iterable[str]) -> str:
    for secret in secrets:
        for form in (secret, json.dumps(secret)[1:-1]):  # as is, and as JSON escapes it
            line = line.replace(form, REDACTED)
    return line


# ── events ↔ JSON ──────────────────────────────────────────────────────────────


def _block_to_dict(block: TextContent | ThinkingContent | ToolCall) -> dict[str, Any]:
    content: dict[str, Any] = message_to_dict(AssistantMessage([block]))["content"][0]
    return content


def _block_from_dict(data: Mapping[str, Any]) -> Any:
    message = message_from_dict({"role": "assistant", "content": [dict(data)]})
    assert isinstance(message, AssistantMessage)
    return message.content[0]


def _event_to_dict(event: AssistantMessageEvent) -> dict[str, Any]:
    """The event without its partial message (which the replay grows again)."""
    data: dict[str, Any] = {"type": event.type}
    if isinstance(event, TextStartEvent | ThinkingStartEvent):
        data["content_index"] = event.content_index
    elif isinstance(event, TextDeltaEvent | ThinkingDeltaEvent | ToolCallDeltaEvent):
        data["content_index"] = event.content_index
        data["delta"] = event.delta
    elif isinstance(event, ToolCallStartEvent):
        call = event.partial.content[event.content_index]
        assert isinstance(call, ToolCall)
        data.update(content_index=event.content_index, id=call.id, name=call.name)
    elif isinstance(event, TextEndEvent | ThinkingEndEvent):
        data["content"] = _block_to_dict(event.content)
    elif isinstance(event, ToolCallEndEvent):
        data["content"] = _block_to_dict(event.tool_call)
    elif isinstance(event, DoneEvent):
        data["reason"] = event.reason
    elif isinstance(event, ErrorEvent):
        data.update(reason=event.reason, error_type=event.error_type)
    elif isinstance(event, FallbackEvent):
        data.update(
            failed_provider=event.failed_provider,
            failed_model=event.failed_model,
            error_message=event.error_message,
            error_type=event.error_type,
        )
    return data


# ── recording ──────────────────────────────────────────────────────────────────


@dataclass(slots=True, frozen=True, init=False)
class RecordingModel(Model):
    """`model` with every call appended to the cassette at `path` (api "cassette-record";
    its other fields are the wrapped model's)."""

    inner: Model | None = None
    path: str = ""

    def __init__(self, inner: Model, path: str | PathLike[str]) -> None:
        if not isinstance(inner, Model):
            raise ConfigError(f"record() wraps a Model, not {inner!r}")
        for f in fields(Model):
            object.__setattr__(self, f.name, getattr(inner, f.name))
        object.__setattr__(self, "api", RECORD_API)
        object.__setattr__(self, "inner", inner)
        object.__setattr__(self, "path", str(path))


_write_lock = threading.Lock()
_tasks: set[asyncio.Task[None]] = set()


def _append(path: str, line: str) -> None:
    """Append `line` and its newline with one `write` on an `O_APPEND` descriptor, holding
    an exclusive `flock` (writers in other processes too) while the file's end is checked
    and the line written; so a writer killed mid-line leaves only its own torn last line,
    which the next writer drops before it appends. A write that fails part-way (a full
    disk, the file size limit) cuts its part off again: the cassette ends as it did.

    Raises:
        OSError: the cassette cannot be opened or written; its text names the file.
    """
    data = memoryview((line + "\n").encode("utf-8"))
    with _write_lock:
        try:
            fd = os.open(path, os.O_RDWR | os.O_APPEND | os.O_CREAT, 0o644)
        except OSError as exc:
            raise OSError(exc.errno, f"cannot write the cassette {path}: {exc.strerror}") from None
        try:
            with contextlib.suppress(ImportError):  # no flock (Windows): this process only
                import fcntl

                fcntl.flock(fd, fcntl.LOCK_EX)
            _end_at_a_newline(fd, path)
            end = os.fstat(fd).st_size
            try:
                while data:
                    data = data[os.write(fd, data) :]
            except OSError as exc:
                with contextlib.suppress(OSError):
                    os.ftruncate(fd, end)
                raise OSError(
                    exc.errno, f"cannot write the cassette {path}: {exc.strerror}"
                ) from None
        finally:
            os.close(fd)


def _end_at_a_newline(fd: int, path: str) -> None:
    """Make the file end at a newline: a last line without one is a recording whose writer
    died mid-write (cut off: removed) or one a person saved without the newline (whole
    JSON: the newline is added)."""
    size = os.fstat(fd).st_size
    if size == 0 or os.pread(fd, 1, size - 1) == b"\n":
        return
    start = size
    while start > 0:  # back to the byte after the last newline
        chunk = os.pread(fd, min(start, 65536), max(0, start - 65536))
        cut = chunk.rfind(b"\n")
        if cut >= 0:
            start = start - len(chunk) + cut + 1
            break
        start -= len(chunk)
    tail = os.pread(fd, size - start, start)
    try:
        json.loads(tail)
    except ValueError:
        logger.warning("cassette %s: dropping a cut-off last line (%d bytes)", path, len(tail))
        os.ftruncate(fd, start)
    else:
        os.write(fd, b"\n")


def stream_record(
    model: Model, context: Context, options: StreamOptions | None = None
) -> AssistantMessageEventStream:
    """The "cassette-record" provider: relay the wrapped model's stream, then append the
    request, its events and its final message to the cassette."""
    out = AssistantMessageEventStream()
    if not isinstance(model, RecordingModel) or model.inner is None:
        _fail(out, model, f"api {RECORD_API!r} needs a model made by record()")
        return out
    request = normalise_request(model, context, options)  # before the loop appends to it
    task = asyncio.get_running_loop().create_task(_relay(model, context, options, request, out))
    _tasks.add(task)
    task.add_done_callback(_tasks.discard)
    return out


async def _relay(
    model: RecordingModel,
    context: Context,
    options: StreamOptions | None,
    request: dict[str, Any],
    out: AssistantMessageEventStream,
) -> None:
    """Stream the wrapped model's answer to `context` into `out`, event by event, and
    append the recording (`request`, the events, the final message) before `out` ends.
    Never raises: a failure or a cancellation ends `out` with an error saying so."""
    assert model.inner is not None
    events: list[dict[str, Any]] = []
    try:
        inner = await maybe_await(get_stream_fn(model.inner.api)(model.inner, context, options))
        secrets = _secrets(options, model.inner)
        async for event in inner:
            events.append(_event_to_dict(event))
            if isinstance(event, DoneEvent | ErrorEvent):
                # written before the caller sees the end, so a replay right after finds it
                final = event.message if isinstance(event, DoneEvent) else event.error
                await _write(model.path, request, events, final, secrets)
            out.push(event)
        if not out.done:  # the inner stream ended without done/error: its result ends ours
            final = await inner.result()
            end: DoneEvent | ErrorEvent
            if final.stop_reason == "error" or final.stop_reason == "aborted":
                end = ErrorEvent(final.stop_reason, final)
            else:
                end = DoneEvent(final.stop_reason, final)  # type: ignore[arg-type]
            events.append(_event_to_dict(end))
            await _write(model.path, request, events, final, secrets)
            out.push(end)
    except OSError as exc:  # the cassette's: the answer came but cannot be kept
        why = exc.strerror or str(exc)
        logger.warning("recording a call to %s failed: %s", model.id, why)
        _fail(out, model, f"the call was not recorded: {why}", started=bool(events))
    except Exception as exc:  # the stream must end (providers never raise), saying why
        logger.warning("recording a call to %s failed: %r", model.id, exc)
        _fail(out, model, exception_summary(exc), started=bool(events))
    finally:
        if not out.done:  # cancelled: the stream still ends
            _fail(out, model, "the recorded call was cancelled", started=bool(events))


async def _write(
    path: str,
    request: dict[str, Any],
    events: list[dict[str, Any]],
    final: AssistantMessage,
    secrets: list[str],
) -> None:
    entry = {
        "format": FORMAT,
        "request": request,
        "events": events,
        "message": message_to_dict(final),
    }
    line = _redact(json.dumps(entry, ensure_ascii=False), secrets)
    await asyncio.to_thread(_append, path, line)


def record(model: Model, path: str | PathLike[str]) -> Model:
    """`model`, recording: each call's normalised request and streamed answer are appended
    to the JSONL cassette `path` (created; its folder must exist) once the answer ends.

    Raises:
        ConfigError: `model` is not a `Model`; `path` is a folder, or its folder does not
            exist: refused here, before a call is made whose answer could not be kept.
    """
    file = Path(path)
    if file.is_dir():
        raise ConfigError(f"cassette {file}: it is a folder; give a file path")
    folder = file.parent
    if not folder.is_dir():
        raise ConfigError(f"cassette {file}: folder {folder} does not exist; create it first")
    return RecordingModel(model, path)


# ── replaying ──────────────────────────────────────────────────────────────────


@dataclass(slots=True, eq=False)
class _Tape:
    """A cassette's recordings and which of them have answered (thread-safe).

    A request takes the first recording not used yet whose request equals it: one run
    replays in recorded order, and runs that went concurrently (eval cases, batch tasks)
    find their own recordings whatever order their requests come in now."""

    path: str
    entries: list[dict[str, Any]]
    used: list[bool] = dataclasses.field(default_factory=list)
    served: int = 0
    lock: threading.Lock = dataclasses.field(default_factory=threading.Lock)

    def next(self, request: dict[str, Any], *, any_model: bool = False) -> dict[str, Any]:
        """The recording that answers `request` (`any_model`: whatever model it recorded).

        Raises:
            CassetteMismatch: no recording left whose request equals it; the text names
                the used ones that equal it, else shows the difference from the unused
                recording closest to it.
        """
        with self.lock:
            if not self.used:
                self.used = [False] * len(self.entries)
            number = self.served + 1
            unused = [i for i, done in enumerate(self.used) if not done]
            for index in unused:
                if _same(self.entries[index], request, any_model):
                    self.used[index] = True
                    self.served += 1
                    return self.entries[index]
            spent = [i + 1 for i, e in enumerate(self.entries) if _same(e, request, any_model)]
            if spent:  # the same request again: say so, not "differs" from another one
                numbers = ", ".join(map(str, spent))
                raise CassetteMismatch(
                    f"request {number} is recorded in {self.path} (number {numbers}), but "
                    f"{'that recording has' if len(spent) == 1 else 'each has'} already "
                    "answered an earlier request: a recording answers once, so the code now "
                    "makes this call more often than when the cassette was recorded; record "
                    "it again"
                )
            if not unused:
                raise CassetteMismatch(
                    f"request {number} has no recording: {self.path} holds "
                    f"{len(self.entries)} requests\n" + _diff({}, request)
                )
            if any_model:  # the diff shows the rest
                request = {**request, "model": self.entries[unused[0]]["request"].get("model")}
            closest = max(unused, key=lambda i: _shared_messages(self.entries[i], request))
            entry = self.entries[closest]
            sent = _as_recorded(entry, request)
            raise CassetteMismatch(
                f"request {number} differs: {_first_difference(entry['request'], sent)}; "
                f"the closest unused recording is number {closest + 1} in {self.path} "
                "(- recorded, + sent):\n" + _diff(entry["request"], sent)
            )


def _as_recorded(entry: Mapping[str, Any], request: Mapping[str, Any]) -> Mapping[str, Any]:
    """`request` as a recording of `entry`'s format holds it: a line from before format 2
    held none of the options added since."""
    if entry.get("format", 1) >= FORMAT or not isinstance(request.get("options"), dict):
        return request
    options = {k: v for k, v in request["options"].items() if k not in _OPTIONS_SINCE_FORMAT_2}
    return {**request, "options": options}


def _same(entry: Mapping[str, Any], request: Mapping[str, Any], any_model: bool) -> bool:
    """Whether a recording's request equals `request` (`any_model`: whatever its model)."""
    recorded: Mapping[str, Any] = entry["request"]
    request = _as_recorded(entry, request)
    if not any_model:
        return recorded == request
    return {**recorded, "model": None} == {**request, "model": None}


def _shared_messages(entry: Mapping[str, Any], request: Mapping[str, Any]) -> tuple[bool, int]:
    """How close a recording is to `request`: the same model, system prompt and tools
    first, then the number of leading messages they share."""
    recorded = entry["request"]
    same_frame = all(
        recorded.get(key) == request.get(key) for key in ("model", "system_prompt", "tools")
    )
    shared = 0
    pairs = zip(recorded.get("messages") or (), request.get("messages") or (), strict=False)
    for old, new in pairs:
        if old != new:
            break
        shared += 1
    return same_frame, shared


_ABSENT = object()

_SHOWN = 14
"""Characters of a differing value that `_first_difference` shows, quotes left out."""


def _first_difference(recorded: Any, sent: Any) -> str:
    """The first place two requests differ, as `"old" → "new" at path` (recorded, then
    sent; keys in sorted order, as `_diff` shows them): short enough that a one-line view
    of the error (an eval table's cell) shows what changed before the cassette's path."""
    where: list[str] = []
    while True:
        if isinstance(recorded, dict) and isinstance(sent, dict):
            key = next(
                (
                    k
                    for k in sorted(recorded.keys() | sent.keys(), key=str)
                    if recorded.get(k, _ABSENT) != sent.get(k, _ABSENT)
                ),
                None,
            )
            if key is None:
                break
            where.append(f".{key}" if where else str(key))
            recorded, sent = recorded.get(key, _ABSENT), sent.get(key, _ABSENT)
        elif isinstance(recorded, list) and isinstance(sent, list):
            size = max(len(recorded), len(sent))
            index = next((i for i in range(size) if _item(recorded, i) != _item(sent, i)), None)
            if index is None:
                break
            where.append(f"[{index}]")
            recorded, sent = _item(recorded, index), _item(sent, index)
        else:
            break
    old, new = _values_shown(recorded, sent)
    return f"{old} → {new} at {''.join(where) or 'the top'}"


def _item(values: list[Any], index: int) -> Any:
    return values[index] if index < len(values) else _ABSENT


def _values_shown(recorded: Any, sent: Any) -> tuple[str, str]:
    """Two differing values as JSON, each at most about `_SHOWN` characters: two texts
    from a little before where they first differ, so the change is in view."""
    if isinstance(recorded, str) and isinstance(sent, str):
        same = next(
            (i for i, (a, b) in enumerate(zip(recorded, sent, strict=False)) if a != b),
            min(len(recorded), len(sent)),
        )
        start = max(0, same - 6) if max(len(recorded), len(sent)) > _SHOWN else 0
        return _window(recorded, start), _window(sent, start)
    return _window(recorded, 0), _window(sent, 0)


def _window(value: Any, start: int) -> str:
    if value is _ABSENT:
        return "(none)"
    if not isinstance(value, str):
        text = json.dumps(value, sort_keys=True, ensure_ascii=False)
        return text if len(text) <= _SHOWN else text[: _SHOWN - 1] + "…"
    part = value[start : start + _SHOWN]
    shown = json.dumps(part, ensure_ascii=False)[1:-1]
    before = "…" if start > 0 else ""
    after = "…" if start + _SHOWN < len(value) else ""
    return f'"{before}{shown}{after}"'


def _diff(recorded: Any, sent: Any) -> str:
    """A unified diff of two requests as indented JSON, cut after its first 60 lines."""
    limit = 60
    old = json.dumps(recorded, indent=1, sort_keys=True, ensure_ascii=False).splitlines()
    new = json.dumps(sent, indent=1, sort_keys=True, ensure_ascii=False).splitlines()
    lines = list(difflib.unified_diff(old, new, "recorded", "sent", n=2, lineterm=""))
    if len(lines) > limit:
        lines = [*lines[:limit], f"… {len(lines) - limit} more diff lines"]
    return "\n".join(lines)


@dataclass(slots=True, frozen=True, init=False)
class ReplayModel(Model):
    """Answers from a cassette (api "cassette-replay"). Made for the model the calls were
    recorded from (`replay(path, model)`), it is that model (its id, provider, window,
    inputs and prices) and answers that model's recordings; made without one, its id and
    provider are the first recorded request's model and it answers any model's."""

    tape: _Tape | None = None
    inner: Model | None = None

    def __init__(self, tape: _Tape, inner: Model | None = None) -> None:
        if inner is not None:
            for f in fields(Model):
                object.__setattr__(self, f.name, getattr(inner, f.name))
            object.__setattr__(self, "api", REPLAY_API)
        else:
            first = tape.entries[0]["request"]["model"] if tape.entries else "replay/none"
            provider, _, model_id = str(first).partition("/")
            Model.__init__(self, id=model_id, provider=provider, api=REPLAY_API)
        object.__setattr__(self, "tape", tape)
        object.__setattr__(self, "inner", inner)

    def with_model(self, model: Model) -> ReplayModel:
        """A replay of the same cassette, sharing which recordings have answered, for the
        calls recorded from `model`."""
        assert self.tape is not None
        return ReplayModel(self.tape, _recorded(model))

    def __reduce__(self) -> Any:  # the tape's lock does not pickle: a worker reads the file
        return (replay, (self.tape.path if self.tape else "", self.inner))


def _recorded(model: Model) -> Model:
    """The model a recording was made from: `model`, or the one a `record()` wraps."""
    if isinstance(model, RecordingModel | ReplayModel) and model.inner is not None:
        return model.inner
    return model


def stream_replay(
    model: Model, context: Context, options: StreamOptions | None = None
) -> AssistantMessageEventStream:
    """The "cassette-replay" provider: the first unused recorded answer to an equal request.

    Raises:
        CassetteMismatch: no unused recording of an equal request is left (the loop ends
            the run in error with this text).
    """
    if not isinstance(model, ReplayModel) or model.tape is None:
        out = AssistantMessageEventStream()
        _fail(out, model, f"api {REPLAY_API!r} needs a model made by replay()")
        return out
    request = normalise_request(model, context, options)
    entry = model.tape.next(request, any_model=model.inner is None)
    return _play(entry, options)


def _play(entry: Mapping[str, Any], options: StreamOptions | None) -> AssistantMessageEventStream:
    """The recorded answer of `entry` as a new stream, its events rebuilt by a
    `MessageBuilder`; an aborted signal, or a recording that cannot be replayed to its end,
    ends it with an error."""
    out = AssistantMessageEventStream()
    final = message_from_dict(entry["message"])
    assert isinstance(final, AssistantMessage)
    builder = MessageBuilder(Model(final.model, final.provider, final.api), out)
    if options is not None and options.signal is not None and options.signal.aborted:
        builder.start()
        builder.fail("aborted", "The run was aborted")
        return out
    try:
        for event in entry["events"]:
            _apply(builder, out, event, final)
    except (KeyError, TypeError, ValueError, RuntimeError) as exc:  # an edited cassette line
        if not out.done:
            builder.fail("error", f"the recorded answer cannot be replayed: {exc!r}")
    if not out.done:
        builder.fail("error", "the recorded answer has no end (a cut or edited cassette line)")
    return out


def _apply(
    builder: MessageBuilder,
    out: AssistantMessageEventStream,
    event: Mapping[str, Any],
    final: AssistantMessage,
) -> None:
    """Replay one recorded event through `builder` (or, a `fallback`, onto `out`); at the
    end (`done` / `error`) the message takes `final`'s usage, arguments and fields, so the
    replay ends as the recording did.

    Raises:
        KeyError, TypeError, ValueError, RuntimeError: an edited or damaged event.
    """
    kind = event["type"]
    if kind == "start":
        builder.start()
    elif kind == "text_start":
        builder.text_delta("")
    elif kind == "thinking_start":
        builder.thinking_delta("")
    elif kind == "text_delta":
        builder.text_delta(event["delta"])
    elif kind == "thinking_delta":
        builder.thinking_delta(event["delta"])
    elif kind == "toolcall_start":
        builder.tool_call_start(event["id"], event["name"])
    elif kind == "toolcall_delta":
        builder.tool_call_delta(event["delta"])
    elif kind in ("text_end", "thinking_end", "toolcall_end"):
        block = _block_from_dict(event["content"])
        content = builder.message.content
        if content and isinstance(block, ThinkingContent):
            open_block = content[-1]
            if isinstance(open_block, ThinkingContent):
                open_block.signature, open_block.redacted = block.signature, block.redacted
        builder.end_block()
    elif kind == "fallback":
        out.push(
            FallbackEvent(
                event["failed_provider"],
                event["failed_model"],
                event["error_message"],
                event["error_type"],
                builder.message,
            )
        )
    elif kind in ("done", "error"):
        builder.set_usage(final.usage if isinstance(final.usage, Usage) else Usage())
        _complete_calls(builder.message, final)
        if kind == "done":
            builder.done(event["reason"])
        else:
            builder.fail(event["reason"], final.error_message or "", error_type=event["error_type"])
        message = builder.message
        for f in fields(AssistantMessage):
            if f.name not in ("content", "timestamp", "duration_ms", "role"):
                setattr(message, f.name, getattr(final, f.name))


def _complete_calls(message: AssistantMessage, final: AssistantMessage) -> None:
    """Give the replayed tool calls the recorded final arguments: a provider completes a
    call in place when a server streams several at once and a fragment of one comes after
    the next has started, with no event for it, so the events alone leave it cut off."""
    for block, recorded in zip(message.content, final.content, strict=False):
        if not (isinstance(block, ToolCall) and isinstance(recorded, ToolCall)):
            continue
        if block.id == recorded.id:
            block.arguments = recorded.arguments
            block.partial_json = recorded.partial_json


def replay(path: str | PathLike[str], model: Model | None = None) -> ReplayModel:
    """A model that answers each call from the cassette at `path`, offline: with the first
    recording not used yet whose request equals the call's normalised request (else
    `CassetteMismatch`, showing the difference from the closest unused recording).

    Args:
        path: the cassette.
        model: the model the calls were recorded from (or its `record()`): the replay is
            that model (id, provider, context window, inputs, prices) and answers only its
            recordings. None: a model named as the first recording's that answers the
            recordings of every model (a cassette may hold an agent's and its judge's).

    Raises:
        ConfigError: the cassette cannot be read, a line is not a recording, or its
            format is one this build does not read (a newer one's).
    """
    file = Path(path)
    try:
        # Records end at "\n" only: JSON keeps U+2028, U+2029 and NEL raw inside strings.
        lines = file.read_text(encoding="utf-8").split("\n")
    except (OSError, UnicodeDecodeError) as exc:
        reason = getattr(exc, "strerror", None) or exc
        raise ConfigError(f"cassette {file}: cannot read it: {reason}") from None
    entries: list[dict[str, Any]] = []
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            entry = json.loads(line)
        except json.JSONDecodeError as exc:
            if number == len(lines):  # no newline after it: a recording cut off mid-write
                logger.warning("cassette %s: skipping a cut-off last line %d", file, number)
                continue
            raise ConfigError(f"cassette {file}: line {number} is not JSON ({exc.msg})") from None
        why = _not_a_recording(entry)
        if why:
            raise ConfigError(f"cassette {file}: line {number} is not a recorded call ({why})")
        version = entry.get("format", 1)
        if not 1 <= version <= FORMAT:  # its request may hold what this build would not match
            raise ConfigError(
                f"cassette {file}: line {number} has format {version}; this build of "
                f"yiemagent reads formats 1 to {FORMAT} (a newer version may have recorded it)"
            )
        entries.append(entry)
    return ReplayModel(_Tape(str(file), entries), None if model is None else _recorded(model))


def _not_a_recording(entry: Any) -> str:
    """Why a cassette line's JSON is not a recording ("" when it is one): checked when the
    cassette is read, so a line edited by hand is one clear error there, not an exception
    out of a model call (a provider never raises) in the middle of a replayed run."""
    if not isinstance(entry, dict) or not {"request", "events", "message"} <= set(entry):
        return "it needs the keys request, events and message"
    if type(entry.get("format", 1)) is not int:
        return "its format is not a whole number"
    if not isinstance(entry["request"], dict) or not isinstance(entry["request"].get("model"), str):
        return "its request is not an object naming its model"
    if not isinstance(entry["request"].get("messages", []), list):
        return "its request's messages are not a list"
    if not isinstance(entry["events"], list) or not all(
        isinstance(event, dict) and isinstance(event.get("type"), str) for event in entry["events"]
    ):
        return "its events are not a list of objects with a type"
    try:
        message = message_from_dict(entry["message"])
    except (ValueError, TypeError):  # pydantic's ValidationError is a ValueError
        message = None
    if not isinstance(message, AssistantMessage):
        return "its message is not an assistant message"
    return ""


def _fail(
    out: AssistantMessageEventStream, model: Model, text: str, *, started: bool = False
) -> None:
    """End `out` with an error saying `text` (after a `start` event unless `started`)."""
    builder = MessageBuilder(model, out)
    if not started:
        builder.start()
    builder.fail("error", text)


register_api(RECORD_API, stream_record)
register_api(REPLAY_API, stream_replay)
