"""`yiem serve` under load (DESIGN §18): many clients at once, each starting a run and
reading its event stream over SSE, against a real Uvicorn server in its own process.

Each run is on its own session, on the faux model (answers at once): one reply with
`--calls` tool calls (a no-op async tool), their results, then the answer. Every message is
persisted in the server's session store (SQLite in a temporary folder by default, as
`yiem serve` does; `--store memory` to leave the disk out). A client's time to first event
runs from just before its `POST /v1/sessions/{sid}/runs` to the first event of its stream
(the POST's own share is printed apart); one run before the clients start loads what the
server imports lazily, and is not counted. The faux model answers at once, so every run is
CPU work from its first moment: a client waits for the work queued ahead of its requests,
and the machine's load (printed) counts.

Prints: runs per second (all clients' runs over the wall time from the first POST to the
last `agent_end`), p50 / p99 time to first event, the server's resident memory (now and its
peak, from /proc), and how many clients got their `agent_end` (each must).

`--delay S` makes the faux model sleep S seconds after each streamed chunk, as a model that
takes its time: the server then waits on the model as it would in use.

Usage: `.venv/bin/python bench/serve.py [--clients 100] [--calls 5] [--store sqlite|memory]
[--delay S]`
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx2 as httpx


def serve(port: int, calls: int, store_kind: str, folder: str, delay_s: float) -> None:
    """The server process: faux agents behind `create_app`, on 127.0.0.1:`port`."""
    import uvicorn

    from yiemagent import Agent, AgentTool
    from yiemagent.ai.providers.faux import FauxModel, faux_message, faux_text, faux_tool_call
    from yiemagent.serve import create_app
    from yiemagent.sessions import InMemorySessionStore, SessionStore, SqliteSessionStore

    def brain(context: Any) -> Any:
        if getattr(context.messages[-1], "role", None) == "toolResult":
            return faux_message(faux_text("All five looked up."))
        return faux_message(*(faux_tool_call("noop", {"n": i}) for i in range(calls)))

    async def noop(call_id: str, args: dict[str, Any], *_: Any) -> str:
        return f"done {args['n']}"

    schema = {"type": "object", "properties": {"n": {"type": "integer"}}}
    tool = AgentTool("noop", "noop", "does nothing", schema, noop, parallel=True)
    fm = FauxModel([brain] * 1_000_000, delay_s=delay_s)
    store: SessionStore = (
        InMemorySessionStore()
        if store_kind == "memory"
        else SqliteSessionStore(Path(folder) / "sessions.db")
    )

    def make_agent(session_id: str) -> Agent[Any]:
        return Agent(
            model=fm.model,
            stream_fn=fm.stream_fn,
            tools=[tool],
            session_store=store,
            session_id=session_id,
        )

    app = create_app(make_agent, session_store=store, keep_runs=10_000)
    uvicorn.run(app, host="127.0.0.1", port=port, log_level="warning", backlog=4096)


async def client(
    http: httpx.AsyncClient, number: int, started: float
) -> tuple[float | None, bool, float]:
    """One client: start a run, read its stream to the end. Returns (time to first event
    in s, got agent_end, when it ended)."""
    begin = time.perf_counter()
    first: float | None = None
    ended = False
    response = await http.post(f"/v1/sessions/bench-{number}/runs", json={"input": "look up"})
    response.raise_for_status()
    POSTED.append(time.perf_counter() - begin)
    run_id = response.json()["run_id"]
    async with http.stream("GET", f"/v1/runs/{run_id}/events") as stream:
        async for line in stream.aiter_lines():
            if not line.startswith("data:"):
                continue
            if first is None:
                first = time.perf_counter() - begin
            if json.loads(line[5:])["type"] == "agent_end":
                ended = True
    return first, ended, time.perf_counter() - started


POSTED: list[float] = []


def memory_kib(pid: int) -> dict[str, int]:
    """VmRSS and VmHWM (peak) of a process, in KiB."""
    found: dict[str, int] = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        key, _, value = line.partition(":")
        if key in ("VmRSS", "VmHWM"):
            found[key] = int(value.split()[0])
    return found


async def load(url: str, clients: int) -> tuple[list[Any], float]:
    limits = httpx.Limits(max_connections=clients * 2, max_keepalive_connections=clients * 2)
    async with httpx.AsyncClient(base_url=url, limits=limits, timeout=300) as http:
        await client(http, -1, time.perf_counter())  # warm-up: the first run's lazy imports
        POSTED.clear()
        started = time.perf_counter()
        results = await asyncio.gather(
            *(client(http, i, started) for i in range(clients)), return_exceptions=True
        )
        return list(results), time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--clients", type=int, default=100)
    parser.add_argument("--calls", type=int, default=5, help="tool calls per run")
    parser.add_argument("--store", choices=["sqlite", "memory"], default="sqlite")
    parser.add_argument(
        "--delay", type=float, default=0.0, help="faux model: seconds after each streamed chunk"
    )
    parser.add_argument("--serve", type=int, help=argparse.SUPPRESS)  # the server process
    parser.add_argument("--folder", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve:
        serve(args.serve, args.calls, args.store, args.folder, args.delay)
        return
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    url = f"http://127.0.0.1:{port}"
    with tempfile.TemporaryDirectory() as folder:
        command = [sys.executable, __file__, "--serve", str(port), "--folder", folder]
        command += ["--calls", str(args.calls), "--store", args.store, "--delay", str(args.delay)]
        server = subprocess.Popen(command)
        try:
            deadline = time.monotonic() + 60
            while True:
                try:
                    httpx.get(f"{url}/healthz")
                    break
                except httpx.TransportError:
                    if time.monotonic() > deadline or server.poll() is not None:
                        raise SystemExit("the server did not start") from None
                    time.sleep(0.1)
            idle = memory_kib(server.pid)
            results, wall = asyncio.run(load(url, args.clients))
            busy = memory_kib(server.pid)
        finally:
            server.terminate()
            server.wait(30)
    done = [r for r in results if isinstance(r, tuple)]
    failed = [r for r in results if not isinstance(r, tuple)]
    firsts = sorted(r[0] for r in done if r[0] is not None)
    ended = sum(1 for r in done if r[1])
    cuts = statistics.quantiles(firsts, n=100, method="inclusive") if len(firsts) > 1 else firsts
    print(
        f"yiem serve, faux model, {args.clients} concurrent clients, one run each with "
        f"{args.calls} tool calls, streamed over SSE, {args.store} session store, "
        f"model delay {args.delay} s per chunk "
        f"({os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f} at the end)"
    )
    print(f"  runs per second:        {args.clients / wall:.1f}  ({wall:.2f} s for all)")
    if len(POSTED) > 1:
        cut = statistics.quantiles(sorted(POSTED), n=100, method="inclusive")
        print(f"  POST to its 202:        p50 {1000 * cut[49]:.0f} ms, p99 {1000 * cut[98]:.0f} ms")
    if firsts:
        print(
            f"  time to first event:    p50 {1000 * cuts[49]:.0f} ms, p99 {1000 * cuts[98]:.0f} ms"
        )
    print(
        f"  server RSS:             {busy.get('VmRSS', 0) / 1024:.0f} MiB after the load, "
        f"peak {busy.get('VmHWM', 0) / 1024:.0f} MiB (idle {idle.get('VmRSS', 0) / 1024:.0f} MiB)"
    )
    print(f"  clients with agent_end: {ended} of {args.clients}")

    for error in failed[:3]:
        print(f"  client failed: {type(error).__name__}: {error}")
    if ended != args.clients:
        raise SystemExit(1)


if __name__ == "__main__":
    main()
