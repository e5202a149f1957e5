"""The run timeline: model calls and tool calls as bars on one time axis, turn by turn, as a
self-contained HTML page (`yiem trace … --html out.html`, DESIGN §13).

Timing comes from the messages themselves, so a stored session and a `yiem run --json`
event log give the same page: an assistant message's model call runs from its `timestamp`
for `duration_ms`; a tool result's call ends at its `timestamp` and lasted `duration_ms`
(both ms, set by the loop). A message stored before those fields existed gets a zero-length
bar (at its model call's end for a tool result). A `yiem run --json` log adds the run's end
reason and each `fallback` (a model that failed before another answered), and each
sub-agent run's calls (its `nested_agent` events) in a lane of its own under the call that
ran it, found by the event's `tool_call_path`: models number their calls (`call_0`), so two
invocations of one sub-agent can each make a call of the same id. The log of a run that
was killed ends with a model call or tool calls started and never ended: they are on the
page as failed bars saying so.
"""

from __future__ import annotations

import html
import json
import logging
import os
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any, Literal, TypeAlias

from yiemagent.errors import ConfigError
from yiemagent.types.messages import (
    AgentMessage,
    AssistantMessage,
    TextContent,
    ToolCall,
    ToolResultMessage,
    Usage,
    UserMessage,
    message_from_dict,
    text_of,
    transcript_usage,
)

__all__ = [
    "Bar",
    "Timeline",
    "Turn",
    "build_timeline",
    "load_timeline",
    "timeline_from_event_lines",
    "timeline_html",
]

logger = logging.getLogger(__name__)

_SubRuns: TypeAlias = Mapping[tuple[tuple[str, ...], tuple[str, ...]], Sequence[AgentMessage]]
"""Sub-agent runs' messages by agent path and call path (`build_timeline`'s `nested`)."""

_TEXT_CHARS = 4000
"""Longest text (answer, arguments, result) kept per bar."""
UNFINISHED = "unfinished: the log ends before this call did (the run was stopped)"
"""The error of a call a `yiem run --json` log starts and never ends."""


@dataclass(slots=True)
class Bar:
    """One model call or tool call on the time axis (times in ms since the epoch)."""

    kind: Literal["model", "tool"]
    id: str
    """A tool call's id; `model-<turn index>` for a model call; a sub-agent's bar has its
    run's call path and lane before it (`call_1/call_0/mid › leaf/model-1`)."""
    label: str
    """The model's id, or the tool's name."""
    start_ms: int
    end_ms: int
    is_error: bool = False
    """The model call ended in error or aborted, or the tool result is an error."""
    details: dict[str, Any] = field(default_factory=dict)
    """What a click shows: arguments, result, tokens, cost, error, …"""
    lane: str = ""
    """The sub-agent whose call this is, as its path below the run's agent ("researcher",
    "mid › inner"); empty for the run's own agent."""


@dataclass(slots=True)
class Turn:
    """One model call and the tool calls it asked for."""

    index: int
    """1 for the first turn."""
    prompt: str = ""
    """Text of the user messages that opened it (the prompt, steering, follow-ups)."""
    bars: list[Bar] = field(default_factory=list)


@dataclass(slots=True)
class Timeline:
    """A run (or a whole session) as turns of bars."""

    title: str
    turns: list[Turn]
    start_ms: int
    end_ms: int
    end_reason: str | None = None
    summary: dict[str, Any] = field(default_factory=dict)
    """Totals: model calls, tool calls, input/output tokens, cost (USD)."""


def _cut(text: str) -> str:
    return text if len(text) <= _TEXT_CHARS else text[:_TEXT_CHARS] + "…"


def _json_text(value: object) -> str:
    return _cut(json.dumps(value, ensure_ascii=False, indent=1, default=str))


def build_timeline(
    messages: Iterable[AgentMessage],
    *,
    title: str = "run",
    end_reason: str | None = None,
    fallbacks: Sequence[dict[str, Any]] = (),
    nested: _SubRuns | None = None,
) -> Timeline:
    """The timeline of a transcript.

    Args:
        messages: The run's (or session's) messages in order; other roles are skipped.
        title: The page's heading.
        end_reason: `AgentEndEvent.reason` when known.
        fallbacks: `{"failed_model", "error_message", "error_type"}` of each fallback, in
            order; each is shown on the next model call.
        nested: The messages of its sub-agents' runs (agents called as tools), by their
            agent path and their call path (`NestedAgentEvent.tool_call_path`, the ids of
            the calls from the outermost run's down): each in a lane under the call that
            ran it. A path that names only the last calls (a record kept before paths
            were) goes under the first such call of the agent above it.

    Returns:
        The `Timeline` (no turns for a transcript without assistant messages).
    """
    messages = list(messages)
    turns: list[Turn] = []
    prompts: list[str] = []
    calls: dict[str, ToolCall] = {}
    pending = list(fallbacks)
    current: Turn | None = None
    model_end = 0
    for message in messages:
        if isinstance(message, UserMessage):
            prompts.append(text_of(message.content))
        elif isinstance(message, AssistantMessage):
            current = Turn(len(turns) + 1, prompt="\n".join(prompts))
            prompts = []
            turns.append(current)
            failed = message.stop_reason in ("error", "aborted")
            fallback = pending.pop(0) if pending and not failed else None
            bar = _model_bar(message, current.index, fallback)
            model_end = bar.end_ms
            current.bars.append(bar)
            for call in message.tool_calls:
                calls[call.id] = call
        elif isinstance(message, ToolResultMessage):
            if current is None:
                current = Turn(1, prompt="\n".join(prompts))
                turns.append(current)
            asked = calls.get(message.tool_call_id)
            current.bars.append(_tool_bar(message, asked, model_end))
    bars = [bar for turn in turns for bar in turn.bars]
    start_ms = min((b.start_ms for b in bars), default=0)
    end_ms = max((b.end_ms for b in bars), default=start_ms)
    total = transcript_usage(messages)  # sub-agents' runs and summaries included
    summary = {
        "model calls": sum(b.kind == "model" for b in bars),
        "tool calls": sum(b.kind == "tool" for b in bars),
        "tokens": f"{total.prompt_tokens} in, {total.output} out"
        + (f" ({total.reasoning} reasoning)" if total.reasoning else ""),
        "duration": f"{(end_ms - start_ms) / 1000:.2f} s",
    }
    if total.cost.total:
        summary["cost"] = f"${total.cost.total:.6f}"
    timeline = Timeline(title, turns, start_ms, end_ms, end_reason, summary)
    if nested:
        _add_lanes(timeline, nested)
    return timeline


def _tokens(usage: Usage) -> str:
    reasoning = f" ({usage.reasoning} reasoning)" if usage.reasoning else ""
    return f"{usage.prompt_tokens} in ({usage.cache_read} cached), {usage.output} out{reasoning}"


def _model_bar(message: AssistantMessage, turn: int, fallback: Mapping[str, Any] | None) -> Bar:
    """The bar of turn `turn`'s model call: from the message's `timestamp` for its
    `duration_ms`, with what it answered and spent; `fallback` is the model that failed
    before this one answered, if one did."""
    start = message.timestamp
    usage = message.usage
    details: dict[str, Any] = {
        "model": f"{message.provider}/{message.model}",
        "stop reason": message.stop_reason,
        "tokens": _tokens(usage),
        "duration": f"{message.duration_ms or 0} ms",
    }
    if usage.cost.total:
        details["cost"] = f"${usage.cost.total:.6f}"
    compaction = message.compaction_usage
    if compaction is not None:  # a summary written before this call
        details["compaction"] = (
            f"summary: {compaction.prompt_tokens} in, {compaction.output} out"
            + (f", ${compaction.cost.total:.6f}" if compaction.cost.total else "")
        )
    if message.text:
        details["text"] = _cut(message.text)
    if message.tool_calls:
        details["tool calls"] = ", ".join(c.name for c in message.tool_calls)
    if message.error_message:
        details["error"] = message.error_message
    if message.agent:
        details["agent"] = message.agent
    steps = message.details.get("local_rules")
    if steps:  # what the embedded provider's rules repaired or dropped
        details["rules"] = "; ".join(
            f"{s.get('rule')} {s.get('action')}: {s.get('what')}" for s in steps
        )
    if fallback is not None:
        details["fallback"] = (
            f"{fallback.get('failed_model')} failed first ({fallback.get('error_type')}): "
            f"{fallback.get('error_message')}"
        )
    failed = message.stop_reason in ("error", "aborted")
    end = start + (message.duration_ms or 0)
    return Bar("model", f"model-{turn}", message.model or "model", start, end, failed, details)


def _tool_bar(message: ToolResultMessage, asked: ToolCall | None, model_end: int) -> Bar:
    """The bar of the tool call `message` answers: it ends at the result's `timestamp` and
    lasted `duration_ms` (a result stored without one: from its model call's end,
    `model_end`); `asked` is the call, for its arguments."""
    end = message.timestamp
    start = end - message.duration_ms if message.duration_ms is not None else model_end
    start = min(start, end)
    details: dict[str, Any] = {
        "tool": message.tool_name,
        "call id": message.tool_call_id,
        "arguments": _json_text(asked.arguments if asked is not None else {}),
        "result": _cut(text_of(message.content) or "(no text)"),
        "duration": f"{end - start} ms",
    }
    if message.usage is not None:  # what the call spent: a sub-agent's whole run
        spent = message.usage
        details["tokens"] = _tokens(spent)
        if spent.cost.total:
            details["cost"] = f"${spent.cost.total:.6f}"
    if message.is_error:
        details["error"] = "yes: the result is an error"
    if message.details:
        details["details"] = _json_text(message.details)
    return Bar(
        "tool", message.tool_call_id, message.tool_name, start, end, message.is_error, details
    )


def timeline_from_event_lines(
    lines: Iterable[str], *, title: str = "run", source: str | None = None
) -> Timeline:
    """The timeline of a `yiem run --json` log (one event per line, `event_to_dict`).

    A last line without its newline that is not JSON is what a run killed mid-write
    leaves: it is skipped (with a warning, which starts with `source`, the log's name, when
    given: a script tracing many logs learns which one was cut) and the log drawn up to
    it, as the end of a killed run is.

    Raises:
        ConfigError: a line is not a JSON object (the message names the line), or the log
            has no message events at all.
    """
    messages: list[AgentMessage] = []
    fallbacks: list[dict[str, Any]] = []
    reason: str | None = None
    seen = 0
    nested: dict[tuple[tuple[str, ...], tuple[str, ...]], list[AgentMessage]] = {}
    """A sub-agent run's messages, by its agent path and its call path."""
    streaming: tuple[dict[str, Any], list[str]] | None = None
    """The assistant message started and not ended yet, and its text deltas so far."""
    running: dict[str, dict[str, Any]] = {}
    """Tool calls started whose result message is not logged yet: id -> that message as a
    dict, with the result of their `tool_execution_end` once logged."""
    bad: tuple[int, str, ValueError] | None = None
    """A line that is not JSON: an error unless it is the last one and has no newline."""
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        if bad is not None:
            break
        try:
            event = json.loads(line)
        except ValueError as exc:
            bad = (number, line, exc)
            continue
        if not isinstance(event, dict):
            raise ConfigError(f"line {number} is not a JSON object: {line[:80]!r}")
        seen += 1
        kind = event.get("type")
        if kind == "message_end" and isinstance(event.get("message"), dict):
            streaming = None
            running.pop(str(event["message"].get("tool_call_id")), None)
            try:
                messages.append(message_from_dict(event["message"]))
            except ValueError:
                continue  # an application's own message type: not on the timeline
        elif kind == "message_start" and isinstance(event.get("message"), dict):
            if event["message"].get("role") == "assistant":
                streaming = (event["message"], [])
        elif kind == "message_update":
            inner = event.get("assistant_message_event") or {}
            if isinstance(inner, dict) and inner.get("type") == "fallback":
                fallbacks.append(inner)
            elif isinstance(inner, dict) and inner.get("type") == "text_delta" and streaming:
                streaming[1].append(str(inner.get("delta") or ""))
        elif kind == "tool_execution_start":
            running[str(event.get("tool_call_id"))] = {
                "role": "toolResult",
                "tool_call_id": str(event.get("tool_call_id")),
                "tool_name": str(event.get("tool_name")),
                "content": [{"type": "text", "text": UNFINISHED}],
                "is_error": True,
            }
        elif kind == "tool_execution_end" and str(event.get("tool_call_id")) in running:
            result = event.get("result")
            if isinstance(result, dict):
                call = running[str(event.get("tool_call_id"))]
                call["content"] = result.get("content") or []
                call["is_error"] = bool(event.get("is_error"))
        elif kind == "agent_end":
            reason = event.get("reason")
        elif kind == "nested_agent":
            inner = event.get("event") or {}
            if inner.get("type") == "message_end" and isinstance(inner.get("message"), dict):
                # a log written before events had call paths (or one whose path is no list
                # of ids, edited by hand) names the last call only
                calls = event.get("tool_call_path")
                if not (
                    isinstance(calls, list) and calls and all(isinstance(c, str) for c in calls)
                ):
                    calls = [event.get("tool_call_id")]
                key = (tuple(event.get("agent_path") or ()), tuple(str(c) for c in calls))
                try:
                    nested.setdefault(key, []).append(message_from_dict(inner["message"]))
                except ValueError:
                    continue
    if bad is not None:
        number, line, error = bad
        if line.endswith("\n"):
            raise ConfigError(f"line {number} is not JSON ({error}): {line[:80]!r}") from error
        where = f"{source}: " if source else ""
        logger.warning(
            "%sline %d was cut off mid-write (the run was killed): skipped", where, number
        )
    if not messages:
        what = "no lines" if not seen else f"{seen} lines but no message_end event"
        raise ConfigError(f"not a yiem run --json event log: {what}")
    messages.extend(_unfinished(messages, streaming, running))
    return build_timeline(
        messages, title=title, end_reason=reason, fallbacks=fallbacks, nested=nested
    )


def _unfinished(
    messages: Sequence[AgentMessage],
    streaming: tuple[dict[str, Any], list[str]] | None,
    running: dict[str, dict[str, Any]],
) -> list[AgentMessage]:
    """What a log that ends mid-run (the run was killed) started and did not log the end
    of: the model call streaming then (with its text so far, failed), or the tool calls
    running then (failed, or with the result their end event gave), so that its turns and
    calls are counted and shown."""
    if streaming is not None:
        start, deltas = streaming
        try:
            message = message_from_dict(start)
        except ValueError:
            return []
        if isinstance(message, AssistantMessage):
            message.content = [TextContent("".join(deltas))] if deltas else []
            message.stop_reason, message.error_message = "aborted", UNFINISHED
            return [message]
        return []
    ends = [  # the last time the log knows of: running calls reach at least there
        m.timestamp + (m.duration_ms or 0) if isinstance(m, AssistantMessage) else m.timestamp
        for m in messages
        if isinstance(m, (AssistantMessage, ToolResultMessage))
    ]
    last = max(ends, default=0)
    results: list[AgentMessage] = []
    for result in running.values():
        try:
            results.append(message_from_dict({**result, "timestamp": last}))
        except ValueError:  # an end event's result that is not one: the call as unfinished
            unended = [{"type": "text", "text": UNFINISHED}]
            results.append(message_from_dict({**result, "content": unended, "timestamp": last}))
    return results


def _add_lanes(timeline: Timeline, nested: _SubRuns) -> None:
    """Put each sub-agent run's model and tool calls right after the call that ran it, in a
    lane of its own: the tool call `calls[-1]` of the agent above it (the lane of
    `agents[1:-1]`; no lane for the run's own agent) in the run that `calls[:-1]` leads to,
    or whose path ends with it when the path names only the last calls. Outer agents go
    first, so a deeper run finds its parent's bar. The lanes of one call (a sub-run that
    handed off) follow each other in the order they started."""
    runs: dict[int, tuple[int, tuple[str, ...]]] = {
        id(bar): (1, ()) for turn in timeline.turns for bar in turn.bars
    }
    """The run each bar belongs to, by the bar's identity: its depth (agents) and call path
    (a path that names only the last call can be the same at two depths)."""
    for (agents, calls), sub_messages in sorted(nested.items(), key=lambda item: len(item[0][0])):
        if not calls:
            continue
        run = (len(agents), calls)
        lane, above = " › ".join(agents[1:]) or "sub-agent", " › ".join(agents[1:-1])
        bars = [bar for turn in build_timeline(sub_messages).turns for bar in turn.bars]
        for bar in bars:
            bar.lane = lane
            bar.id = f"{'/'.join(calls)}/{lane}/{bar.id}"
            runs[id(bar)] = run
        for turn in timeline.turns:
            at = next(
                (
                    i
                    for i, bar in enumerate(turn.bars)
                    if bar.kind == "tool"
                    and bar.lane == above
                    and bar.details.get("call id") == calls[-1]
                    and _ends_with(runs[id(bar)][1], calls[:-1])
                ),
                None,
            )
            if at is not None:  # after it and the lanes of its call placed so far
                while at + 1 < len(turn.bars) and runs[id(turn.bars[at + 1])] == run:
                    at += 1
                turn.bars[at + 1 : at + 1] = bars
                break
    every = [bar for turn in timeline.turns for bar in turn.bars]
    timeline.summary["model calls"] = sum(b.kind == "model" for b in every)
    timeline.summary["tool calls"] = sum(b.kind == "tool" for b in every)


def _ends_with(path: tuple[str, ...], tail: tuple[str, ...]) -> bool:
    return len(path) >= len(tail) and path[len(path) - len(tail) :] == tail


def load_timeline(path: str) -> Timeline:
    """The timeline of the `yiem run --json` log in file `path`.

    Raises:
        ConfigError: the file cannot be read or is not such a log (the message starts with
            `path`: "line 2 is not JSON" alone leaves a script running many to guess which).
    """
    try:
        with open(path, "rb") as handle:
            data = handle.read()
        # a cut last line may end inside a character: only that line is read loosely
        whole, newline, cut = data.rpartition(b"\n")
        lines = [f"{line}\n" for line in (whole + newline).decode("utf-8").split("\n")[:-1]]
        if cut:
            lines.append(cut.decode("utf-8", errors="replace"))
        return timeline_from_event_lines(lines, title=os.path.basename(path), source=path)
    except ConfigError as exc:
        if len(lines) > 1 and _one_json_document(data):  # a report, pretty-printed
            raise ConfigError(
                f"{path}: one JSON document over {len(lines)} lines, not a yiem run --json "
                "event log (one event a line)"
            ) from exc
        raise ConfigError(f"{path}: {exc}") from exc
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{path} is not a text file of JSON lines ({exc.reason})") from exc
    except OSError as exc:
        raise ConfigError(f"cannot read {path}: {exc.strerror or exc}") from exc


def _one_json_document(data: bytes) -> bool:
    """Whether `data` is one JSON value as a whole (read when its lines are not events)."""
    try:
        json.loads(data)
    except ValueError:
        return False
    return True


def timeline_html(timeline: Timeline) -> str:
    """One self-contained HTML page (inline CSS and script, no network) showing `timeline`:
    a row per call, turns down the page, bars placed on the run's time axis; hovering a bar
    shows its summary, clicking it shows its details (arguments, result, tokens, errors).
    A lone surrogate in the run's texts (a model's `\\ud800` escape with no pair) is shown
    as U+FFFD: the page is UTF-8, which cannot hold one."""
    from yiemagent.ai import sanitize_surrogates

    data = json.dumps(asdict(timeline), ensure_ascii=False, default=str)
    data = data.replace("</", "<\\/")  # nothing in the data can close the script element
    # One pass over the template: a marker inside the title or the data (a run titled
    # "__DATA__") stays their text.
    parts = {"__TITLE__": html.escape(timeline.title), "__DATA__": data}
    page = re.sub("__TITLE__|__DATA__", lambda marker: parts[marker.group()], _PAGE)
    return str(sanitize_surrogates(page))


_PAGE = """<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>yiem trace: __TITLE__</title>
<style>
 body{font:14px/1.4 system-ui,sans-serif;margin:0;color:#1d232b;background:#f6f7f9}
 header{padding:12px 20px;background:#1d232b;color:#fff}
 header h1{font-size:17px;margin:0 0 4px}
 header .sum span{margin-right:18px;color:#c9d1d9}
 main{display:flex;gap:16px;padding:12px 20px}
 #chart{flex:1;min-width:0}
 #panel{width:360px;flex:none;background:#fff;border:1px solid #d0d7de;border-radius:6px;
  padding:10px 12px;align-self:flex-start;position:sticky;top:12px;max-height:90vh;overflow:auto}
 #panel h2{font-size:15px;margin:0 0 6px}
 #panel dt{font-weight:600;margin-top:6px;color:#57606a}
 #panel dd{margin:0;white-space:pre-wrap;word-break:break-word;font-family:ui-monospace,monospace;
  font-size:12px}
 .axis{position:relative;height:22px;margin:0 1px 0 151px;border-bottom:1px solid #8c959f}
 .tick{position:absolute;bottom:0;font-size:11px;color:#57606a;transform:translateX(-50%);
  white-space:nowrap}
 .turn{margin:10px 0;background:#fff;border:1px solid #d0d7de;border-radius:6px;padding:6px 0}
 .turn h3{font-size:13px;margin:0 10px 4px;color:#57606a;font-weight:600}
 .turn .prompt{font-weight:400;color:#1d232b}
 .row{display:flex;align-items:center;height:26px}
 .name{width:150px;box-sizing:border-box;flex:none;padding:0 10px;overflow:hidden;
  text-overflow:ellipsis;white-space:nowrap;font-size:12px;color:#57606a}
 .track{position:relative;flex:1;height:20px;background:repeating-linear-gradient(90deg,
  transparent 0 calc(10% - 1px),#eaeef2 calc(10% - 1px) 10%)}
 .bar{position:absolute;top:2px;height:16px;min-width:4px;border-radius:3px;cursor:pointer;
  box-sizing:border-box;font-size:11px;color:#fff;padding:0 4px;overflow:hidden;
  white-space:nowrap}
 .bar.model{background:#0969da}.bar.tool{background:#1a7f37}
 .bar.lane.model{background:#8250df}.bar.lane.tool{background:#9a6700}
 .row.lane .name{padding-left:22px;color:#8250df}
 .bar.error{background:#cf222e}
 .bar.selected{outline:2px solid #fb8500;outline-offset:1px}
 #tip{position:fixed;pointer-events:none;background:#1d232b;color:#fff;font-size:12px;
  padding:4px 8px;border-radius:4px;display:none;max-width:420px;white-space:pre-wrap}
 /* A narrow screen (a phone, the chat page's overlay on one) has no room for the panel
    beside the chart: it goes under it, and the name column narrows. */
 @media (max-width:820px){
  main{flex-direction:column;padding:12px 10px}
  #panel{width:auto;align-self:stretch;position:static;max-height:none}
  .name{width:110px}
  .axis{margin-left:111px}
 }
</style></head>
<body>
<header><h1 id="title"></h1><div class="sum" id="summary"></div></header>
<main><div id="chart"></div>
<aside id="panel"><h2>Details</h2><p id="hint">Click a bar to see its arguments, result,
tokens and errors.</p><dl id="details"></dl></aside></main>
<div id="tip"></div>
<script type="application/json" id="data">__DATA__</script>
<script>
(function(){
 const t = JSON.parse(document.getElementById('data').textContent);
 const el = (tag, cls, text) => { const e = document.createElement(tag);
   if (cls) e.className = cls; if (text !== undefined) e.textContent = text; return e; };
 document.getElementById('title').textContent = 'yiem trace: ' + t.title;
 const sum = document.getElementById('summary');
 const totals = Object.assign({}, t.summary);
 if (t.end_reason) totals['end reason'] = t.end_reason;
 for (const [k, v] of Object.entries(totals)) sum.appendChild(el('span', '', k + ': ' + v));
 const span = Math.max(1, t.end_ms - t.start_ms);
 const pct = ms => (100 * (ms - t.start_ms) / span);
 const chart = document.getElementById('chart');
 const axis = el('div', 'axis');
 for (let i = 0; i <= 10; i++) {
   const tick = el('span', 'tick', (span * i / 10 / 1000).toFixed(span < 10000 ? 2 : 1) + ' s');
   tick.style.left = (i * 10) + '%';
   if (i === 10) tick.style.transform = 'translateX(-100%)';
   axis.appendChild(tick);
 }
 chart.appendChild(axis);
 // Only every step-th tick keeps its label when ten would run into each other (the last
 // is right-aligned, so it needs half a label more room than the others).
 function thinTicks() {
   const ticks = Array.from(axis.children);
   const widest = Math.max(...ticks.map(tick => tick.offsetWidth));
   const room = axis.clientWidth / 10;
   const step = [1, 2, 5].find(s => s * room >= 1.5 * widest + 6) || 10;
   ticks.forEach((tick, i) => { tick.style.visibility = i % step ? 'hidden' : 'visible'; });
 }
 const panel = document.getElementById('panel');
 const stacked = () => getComputedStyle(document.querySelector('main')).flexDirection === 'column';
 const tip = document.getElementById('tip');
 const details = document.getElementById('details');
 let selected = null;
 function show(bar, node) {
   if (selected) selected.classList.remove('selected');
   selected = node; node.classList.add('selected');
   document.getElementById('hint').textContent =
     (bar.kind === 'model' ? 'Model call ' : 'Tool call ') + bar.label;
   details.replaceChildren();
   for (const [k, v] of Object.entries(bar.details)) {
     details.appendChild(el('dt', '', k)); details.appendChild(el('dd', '', String(v)));
   }
   if (stacked()) panel.scrollIntoView({block: 'start'});  // under the chart: bring it up
 }
 for (const turn of t.turns) {
   const box = el('section', 'turn'); box.dataset.turn = turn.index;
   const h = el('h3', '', 'Turn ' + turn.index + ' ');
   if (turn.prompt) h.appendChild(el('span', 'prompt', '— ' + turn.prompt.slice(0, 200)));
   box.appendChild(h);
   for (const bar of turn.bars) {
     const row = el('div', bar.lane ? 'row lane' : 'row');
     // A sub-agent's row says what the bar is first, its agent after: the name column
     // is 150 px, and "mathematician › …" hid whether the row was a model or a tool call.
     const what = (bar.kind === 'model' ? 'model ' : 'tool ') + bar.label;
     const name = el('div', 'name', bar.lane ? what + ' (' + bar.lane + ')' : what);
     name.title = bar.lane ? bar.lane + ' › ' + what : what;
     row.appendChild(name);
     const track = el('div', 'track');
     const node = el('div', 'bar ' + bar.kind + (bar.lane ? ' lane' : '') +
       (bar.is_error ? ' error' : ''),
       (bar.end_ms - bar.start_ms) + ' ms');
     node.style.left = pct(bar.start_ms) + '%';
     node.style.width = Math.max(0, pct(bar.end_ms) - pct(bar.start_ms)) + '%';
     node.dataset.kind = bar.kind; node.dataset.id = bar.id; node.dataset.name = bar.label;
     node.dataset.lane = bar.lane;
     node.dataset.start = bar.start_ms; node.dataset.end = bar.end_ms;
     node.addEventListener('click', () => show(bar, node));
     node.addEventListener('mousemove', ev => {
       tip.textContent = bar.label + ': ' + (bar.end_ms - bar.start_ms) + ' ms' +
         (bar.is_error ? ' (error)' : '') + (bar.details.tokens ? '\\n' + bar.details.tokens : '');
       tip.style.display = 'block'; tip.style.left = (ev.clientX + 12) + 'px';
       tip.style.top = (ev.clientY + 12) + 'px';
     });
     node.addEventListener('mouseleave', () => { tip.style.display = 'none'; });
     track.appendChild(node); row.appendChild(track); box.appendChild(row);
   }
   chart.appendChild(box);
 }
 if (!t.turns.length) chart.appendChild(el('p', '', 'This run has no model calls.'));
 thinTicks();
 window.addEventListener('resize', thinTicks);
})();
</script></body></html>
"""
