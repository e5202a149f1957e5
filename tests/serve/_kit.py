"""Helpers for the `yiem serve` tests: a real Uvicorn server on 127.0.0.1 (a free port) in a
thread of the test process, agents on the faux model whose replies depend on the transcript
(so any number of sessions and runs can share one script), and an SSE reader."""

from __future__ import annotations

import asyncio
import contextlib
import json
import socket
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import httpx2 as httpx
import uvicorn

from yiemagent import Agent, AgentTool, AssistantMessage, Context
from yiemagent.ai.providers.faux import (
    FauxModel,
    faux_message,
    faux_text,
    faux_thinking,
    faux_tool_call,
)
from yiemagent.serve import create_app
from yiemagent.sessions import SessionStore

SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"city": {"type": "string"}},
    "required": ["city"],
}


def text_of(message: Any) -> str:
    """A message's text, whether its content is a string or a list of blocks."""
    content = getattr(message, "content", "")
    if isinstance(content, str):
        return content
    return "".join(getattr(block, "text", "") for block in content)


def brain(context: Context) -> AssistantMessage:
    """The faux model's reply to any transcript. To a user message "weather CITY …" it
    calls `weather` for each city; "launch X" calls `launch` (held for approval); "many N"
    calls `weather` N times in one reply; "delegate …" asks the `helper` sub-agent "…";
    "think …" thinks, then answers; anything else is echoed. After tool results it answers
    with their texts."""
    last = context.messages[-1]
    if getattr(last, "role", None) == "toolResult":
        results = []
        for message in reversed(context.messages):
            if getattr(message, "role", None) != "toolResult":
                break
            results.append(text_of(message))
        return faux_message(faux_text("Done: " + "; ".join(reversed(results))))
    words = text_of(last).split()
    if words and words[0] == "weather":
        return faux_message(*(faux_tool_call("weather", {"city": c}) for c in words[1:]))
    if words and words[0] == "many":
        cities = [f"c{i}" for i in range(int(words[1]))]
        return faux_message(*(faux_tool_call("weather", {"city": c}) for c in cities))
    if words and words[0] == "think":
        rest = " ".join(words[1:])
        return faux_message(faux_thinking(f"pondering {rest}"), faux_text(f"thought: {rest}"))
    if words and words[0] == "delegate":
        return faux_message(faux_tool_call("helper", {"input": " ".join(words[1:])}))
    if words and words[0] == "launch":
        return faux_message(faux_tool_call("launch", {"city": words[1]}))
    return faux_message(faux_text("echo: " + " ".join(words)))


@dataclass
class Tools:
    """The test tools; `delay_s` is how long `weather` takes; `launched` records runs of
    the approval-gated `launch`."""

    delay_s: float = 0.0
    launched: list[str] = field(default_factory=list)

    def all(self) -> list[AgentTool]:
        async def weather(call_id: str, args: dict[str, Any], signal: Any, on_update: Any) -> str:
            from yiemagent.types import AgentToolResult, TextContent

            on_update(AgentToolResult([TextContent(f"looking up {args['city']}")]))
            if self.delay_s:
                await asyncio.sleep(self.delay_s)
            return f"sunny in {args['city']}"

        async def launch(call_id: str, args: dict[str, Any], signal: Any, on_update: Any) -> str:
            self.launched.append(args["city"])
            return f"launched {args['city']}"

        return [
            AgentTool(
                "weather", "Weather", "the weather in a city", SCHEMA, weather, parallel=True
            ),
            AgentTool(
                "launch", "Launch", "launch a rocket", SCHEMA, launch, requires_approval=True
            ),
        ]


def faux_agents(
    store: SessionStore, tools: Tools, *, delay_s: float = 0.0, fm: FauxModel | None = None
) -> Callable[[str], Agent[Any]]:
    """`make_agent` for the app: every session's agent on `fm`, by default one faux script
    of `brain` (`delay_s` between its chunks)."""
    if fm is None:
        fm = FauxModel([brain] * 100_000, delay_s=delay_s, chunk_size=8)

    def make_agent(session_id: str) -> Agent[Any]:
        return Agent(
            model=fm.model,
            stream_fn=fm.stream_fn,
            tools=tools.all(),
            session_store=store,
            session_id=session_id,
        )

    return make_agent


@contextlib.contextmanager
def serving(app: Any) -> Iterator[str]:
    """Serve `app` with Uvicorn on 127.0.0.1 (a free port) in a thread; yields its URL."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="on"))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started:
        assert thread.is_alive() and time.monotonic() < deadline, "uvicorn did not start"
        time.sleep(0.02)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(30)
        sock.close()


@contextlib.contextmanager
def faux_server(
    store: SessionStore, tools: Tools | None = None, **options: Any
) -> Iterator[tuple[str, Tools]]:
    """A server of faux agents on `store`; yields (url, tools)."""
    tools = tools or Tools()
    delay_s = options.pop("delay_s", 0.0)
    app = create_app(faux_agents(store, tools, delay_s=delay_s), session_store=store, **options)
    with serving(app) as url:
        yield url, tools


def error_of(response: httpx.Response) -> str:
    """The error text of an answer: `{"error": text}`, or on the OpenAI routes OpenAI's
    `{"error": {"message": text, "type", ...}}`."""
    error = response.json()["error"]
    return str(error["message"] if isinstance(error, dict) else error)


def sse(response: httpx.Response) -> Iterator[tuple[str | None, Any]]:
    """The (id, data) of each server-sent event of a streamed response; data parsed as JSON
    when it is JSON. Comments (keep-alive pings) are skipped."""
    event_id: str | None = None
    data: list[str] = []
    for line in response.iter_lines():
        if line == "":
            if data:
                text = "\n".join(data)
                try:
                    yield event_id, json.loads(text)
                except ValueError:
                    yield event_id, text
            event_id, data = None, []
        elif line.startswith(":"):
            continue
        else:
            name, _, value = line.partition(":")
            value = value[1:] if value.startswith(" ") else value
            if name == "id":
                event_id = value
            elif name == "data":
                data.append(value)


def run_events(
    client: httpx.Client, run_id: str, *, after: int | None = None
) -> list[tuple[int, dict[str, Any]]]:
    """Every event of a run from `after` on (Last-Event-ID), read to the stream's end."""
    headers = {} if after is None else {"Last-Event-ID": str(after)}
    with client.stream("GET", f"/v1/runs/{run_id}/events", headers=headers) as response:
        assert response.status_code == 200, response.read()
        return [(int(i or 0), d) for i, d in sse(response)]


def start_run(client: httpx.Client, session_id: str, text: str) -> str:
    response = client.post(f"/v1/sessions/{session_id}/runs", json={"input": text})
    assert response.status_code == 202, response.text
    run_id: str = response.json()["run_id"]
    return run_id


def wait_done(client: httpx.Client, run_id: str, timeout_s: float = 30) -> dict[str, Any]:
    """Poll `GET /v1/runs/{id}` until the run has ended; its summary."""
    deadline = time.monotonic() + timeout_s
    while True:
        summary: dict[str, Any] = client.get(f"/v1/runs/{run_id}").json()
        if summary["ended"]:
            return summary
        assert time.monotonic() < deadline, f"run {run_id} did not end: {summary}"
        time.sleep(0.05)
