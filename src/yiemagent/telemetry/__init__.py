"""Watching runs (DESIGN §13): OpenTelemetry spans and the run timeline page.

Public:
- `instrument(tracer_provider=None, *, capture_content=False, content_max_chars=32_000)`:
  trace every run that names no `tracer_provider` of its own (`Agent(tracer_provider=…)`
  and `AgentLoopConfig(tracer_provider=…)` trace one agent or loop). `uninstrument()`
  stops it. Spans follow the GenAI semantic conventions (see docs/observability.md);
  content is recorded only with `capture_content=True` / `trace_content=True`, each value
  within `content_max_chars` / `trace_content_max_chars` characters.
- `cli_tracer_provider(endpoint=None)`: the provider `yiem run --otel` uses: OTLP over HTTP
  when `opentelemetry-exporter-otlp-proto-http` is installed and an endpoint is given (or
  `OTEL_EXPORTER_OTLP_ENDPOINT` is set), else spans printed as JSON to stderr.
- `build_timeline(messages)`, `timeline_from_event_lines(lines)`, `load_timeline(path)` and
  `timeline_html(timeline)`: the run timeline (`yiem trace … --html out.html`) of a stored
  session or a `yiem run --json` log, as `Timeline` / `Turn` / `Bar` and as a page.

The modules `_spans` (the observer that makes spans) and `_timeline` are private.

Needs the `otel` extra (the OpenTelemetry API, SDK and OTLP/HTTP exporter);
`import yiemagent.telemetry` imports none of them, `instrument()` imports the API.
"""

from __future__ import annotations

import os
import sys
from typing import Any

from yiemagent.errors import ConfigError, install_hint
from yiemagent.telemetry._timeline import (
    Bar,
    Timeline,
    Turn,
    build_timeline,
    load_timeline,
    timeline_from_event_lines,
    timeline_html,
)
from yiemagent.types.config import DEFAULT_TRACE_CONTENT_MAX_CHARS
from yiemagent.types.observe import set_default_observer
from yiemagent.types.tools import is_whole_number

__all__ = [
    "Bar",
    "Timeline",
    "Turn",
    "build_timeline",
    "cli_tracer_provider",
    "instrument",
    "load_timeline",
    "timeline_from_event_lines",
    "timeline_html",
    "uninstrument",
]


def _spans_module() -> Any:
    try:
        import yiemagent.telemetry._spans as spans
    except ModuleNotFoundError as exc:
        if exc.name and exc.name.startswith("opentelemetry"):
            raise ConfigError(f"tracing needs OpenTelemetry: {install_hint('otel')}") from exc
        raise
    return spans


def instrument(
    tracer_provider: Any = None,
    *,
    capture_content: bool = False,
    content_max_chars: int | None = DEFAULT_TRACE_CONTENT_MAX_CHARS,
) -> None:
    """Trace every run from now on (those with their own `tracer_provider` use theirs).

    Args:
        tracer_provider: An OpenTelemetry `TracerProvider`; None: the global one.
        capture_content: Also record messages, tool arguments and results (personal data).
        content_max_chars: Most characters of each content attribute (older messages left
            out, long texts cut in their middle, the value still valid JSON); None: no
            bound but the SDK's attribute length limit.

    Raises:
        ConfigError: `opentelemetry-api` is not installed, or `content_max_chars` is not
            a whole number >= 1 or None.
    """
    if content_max_chars is not None and not is_whole_number(content_max_chars, 1):
        raise ConfigError(
            f"content_max_chars must be a whole number >= 1 or None, not {content_max_chars!r}"
        )
    set_default_observer(
        _spans_module().OtelObserver(
            tracer_provider,
            capture_content=capture_content,
            content_max_chars=content_max_chars,
        )
    )


def uninstrument() -> None:
    """Stop tracing runs that have no `tracer_provider` of their own."""
    set_default_observer(None)


def cli_tracer_provider(endpoint: str | None = None) -> Any:
    """An SDK `TracerProvider` for the command line: OTLP/HTTP to `endpoint` (or
    `OTEL_EXPORTER_OTLP_ENDPOINT`) when the OTLP exporter is installed, else every span as
    JSON on stderr (`ConsoleSpanExporter`). Call `.shutdown()` to flush it.

    Raises:
        ConfigError: `opentelemetry-sdk` is not installed, or an endpoint is given without
            the OTLP exporter (both come with the `otel` extra).
    """
    try:
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import (
            BatchSpanProcessor,
            ConsoleSpanExporter,
            SimpleSpanProcessor,
        )
    except ModuleNotFoundError as exc:
        raise ConfigError(f"--otel needs the OpenTelemetry SDK: {install_hint('otel')}") from exc
    provider = TracerProvider()
    target = endpoint or os.environ.get("OTEL_EXPORTER_OTLP_ENDPOINT")
    if target:
        try:
            from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
        except ModuleNotFoundError as exc:
            raise ConfigError(
                f"sending spans to {target} needs the OTLP/HTTP exporter: {install_hint('otel')}"
            ) from exc
        exporter = OTLPSpanExporter(endpoint=endpoint) if endpoint else OTLPSpanExporter()
        provider.add_span_processor(BatchSpanProcessor(exporter))
    else:
        provider.add_span_processor(SimpleSpanProcessor(ConsoleSpanExporter(out=sys.stderr)))
    return provider
