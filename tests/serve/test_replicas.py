"""Two `yiem serve --sessions postgresql://…` replicas on one PostgreSQL (DESIGN §18,
scale-out): each a separate process serving on 127.0.0.1 with agents on a faux model and
tools from a `--tools` folder. A run held for approval on the first replica
is approved and resumed through the second (the held tool runs once); the first replica
SIGKILLed while a slow tool runs, the session continues on the second with every tool call
answered. Tool runs are counted in a file both replicas append to."""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx2 as httpx
import pytest

from yiemagent.loop import transcript_problems
from yiemagent.types import message_from_dict, text_of

SCRIPT_HEAD = textwrap.dedent(
    """
    import sys
    import yiemagent.cli.serve as serve
    from yiemagent.ai.providers.faux import FauxModel, faux_message, faux_text, faux_tool_call

    def text(message):
        content = getattr(message, "content", "")
        if isinstance(content, str):
            return content
        return "".join(getattr(block, "text", "") for block in content)

    def results_answer(context):
        # the answer after tool results: their texts
        results = []
        for message in reversed(context.messages):
            if message.role != "toolResult":
                break
            results.append(text(message))
        return faux_message(faux_text("Done: " + "; ".join(reversed(results))))
    """
)

SCRIPT_TAIL = textwrap.dedent(
    """
    fm = FauxModel([brain] * 10_000)
    serve.resolve_model = lambda *args, **kwargs: fm.model
    from yiemagent.cli.main import main
    sys.exit(main(sys.argv[1:]))
    """
)


def serve_script(brain: str) -> str:
    """`yiem serve` itself (the CLI's `main`) as a script, with the model it resolves
    replaced by a faux model whose replies depend on the transcript: `brain` is the source
    of `brain(context)`, the reply to a transcript, which may call `text(message)` and
    `results_answer(context)`."""
    return SCRIPT_HEAD + textwrap.dedent(brain) + SCRIPT_TAIL


BRAIN = serve_script(
    """
    def brain(context):
        # "weather A B ..." calls weather per city, "launch X" calls the held launch tool;
        # after tool results it answers with their texts.
        last = context.messages[-1]
        if last.role == "toolResult":
            return results_answer(context)
        words = text(last).split()
        if words[0] == "launch":
            return faux_message(faux_tool_call("launch", {"city": words[1]}))
        return faux_message(*(faux_tool_call("weather", {"city": c}) for c in words[1:]))
    """
)

TOOL = textwrap.dedent(
    """
    import asyncio, os
    from yiemagent import AgentTool

    SCHEMA = {"type": "object", "properties": {"city": {"type": "string"}}}

    async def execute(call_id, args, signal, on_update):
        with open(os.environ["YIEM_TEST_RUNS"], "a") as f:
            f.write(f"{NAME} {args['city']} {call_id}\\n")
        if args["city"] == "slow":
            await asyncio.sleep(600)
        return f"{VERB} {args['city']}"

    def get_tool():
        return AgentTool(NAME, NAME, NAME, SCHEMA, execute, parallel=True,
                         requires_approval=NAME == "launch")
    """
)
"""A tool file (the `--tools` folder) that writes each run to `$YIEM_TEST_RUNS`."""


def setup(tmp_path: Path, script_text: str = BRAIN) -> tuple[Path, Path, Path]:
    """The wrapper script (`script_text`, a `serve_script`), the tools folder and the runs
    file of the replicas."""
    script, tools, runs = tmp_path / "yiem_faux.py", tmp_path / "tools", tmp_path / "runs.txt"
    script.write_text(script_text)
    tools.mkdir()
    for name, verb in (("weather", "sunny in"), ("launch", "launched")):
        head = f"NAME = {name!r}\nVERB = {verb!r}\n"
        (tools / f"{name}.py").write_text(head + TOOL)
    return script, tools, runs


@contextlib.contextmanager
def replica(
    script: Path, tools: Path, dsn: str, runs: Path, *, agent: Path | None = None
) -> Iterator[tuple[subprocess.Popen[str], str]]:
    """`yiem serve --tools TOOLS --sessions DSN --port P` (`--agent AGENT` instead of
    `--tools` when given) as a process; yields (process, URL) once it answers `/healthz`."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    source = ["--tools", str(tools)] if agent is None else ["--agent", str(agent)]
    argv = ["serve", *source, "--sessions", dsn, "--port", str(port)]
    proc = subprocess.Popen(
        [sys.executable, str(script), *argv, "--model", "faux/brain"],
        env={**os.environ, "YIEM_TEST_RUNS": str(runs)},
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stderr is not None
        banner = proc.stderr.readline()
        if not banner.startswith("yiem serve: http://127.0.0.1:"):
            pytest.fail(f"yiem serve did not start: {banner}{proc.stderr.read()[-3000:]}")
        url = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 60
        while True:
            with contextlib.suppress(httpx.HTTPError):
                if httpx.get(f"{url}/healthz", timeout=5).status_code == 200:
                    break
            assert proc.poll() is None, proc.stderr.read()[-3000:]
            assert time.monotonic() < deadline, "yiem serve did not answer /healthz"
            time.sleep(0.1)
        yield proc, url
    finally:
        if proc.poll() is None:
            proc.terminate()
            try:
                proc.wait(30)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(10)


def wait_ended(client: httpx.Client, run_id: str, timeout_s: float = 60) -> dict[str, Any]:
    deadline = time.monotonic() + timeout_s
    while True:
        summary: dict[str, Any] = client.get(f"/v1/runs/{run_id}").json()
        if summary["ended"]:
            return summary
        assert time.monotonic() < deadline, f"run {run_id} did not end: {summary}"
        time.sleep(0.05)


def post_when_free(
    client: httpx.Client, path: str, body: dict[str, Any] | None = None
) -> httpx.Response:
    """POST, retried while the answer is 409 because a killed replica's lease is still being
    noticed (PostgreSQL ends its connection a moment after the process dies)."""
    deadline = time.monotonic() + 15
    while True:
        response = client.post(path, json=body or {})
        if response.status_code != 409 or time.monotonic() > deadline:
            return response
        time.sleep(0.1)


def transcript(client: httpx.Client, session_id: str) -> list[Any]:
    response = client.get(f"/v1/sessions/{session_id}")
    assert response.status_code == 200, response.text
    return [message_from_dict(m) for m in response.json()["messages"]]


def ran(runs: Path) -> list[str]:
    return runs.read_text().splitlines() if runs.exists() else []


@pytest.mark.timeout(300)
def test_a_held_run_is_approved_and_resumed_through_another_replica(
    postgres_dsn: str, tmp_path: Path
) -> None:
    script, tools, runs = setup(tmp_path)
    with (
        replica(script, tools, postgres_dsn, runs) as (_, first_url),
        replica(script, tools, postgres_dsn, runs) as (_, second_url),
        httpx.Client(base_url=first_url, timeout=30) as first,
        httpx.Client(base_url=second_url, timeout=30) as second,
    ):
        started = first.post("/v1/sessions/s1/runs", json={"input": "launch moon"})
        assert started.status_code == 202, started.text
        held = wait_ended(first, started.json()["run_id"])
        assert held["end_reason"] == "awaiting_approval", held
        assert ran(runs) == []  # held, not run

        approvals = second.get("/v1/sessions/s1/approvals").json()["approvals"]
        assert [(a["tool_name"], a["arguments"]) for a in approvals] == [
            ("launch", {"city": "moon"})
        ], approvals
        call_id = approvals[0]["tool_call_id"]
        decided = second.post(f"/v1/sessions/s1/approvals/{call_id}", json={"approve": True})
        assert decided.status_code == 200, decided.text
        resumed = second.post("/v1/sessions/s1/resume")
        assert resumed.status_code == 202, resumed.text
        done = wait_ended(second, resumed.json()["run_id"])
        assert done["end_reason"] not in ("error", "aborted", "awaiting_approval"), done

        assert ran(runs) == [f"launch moon {call_id}"]  # exactly once, on the second
        messages = transcript(first, "s1")  # both replicas read the one store
        assert [m.role for m in messages] == ["user", "assistant", "toolResult", "assistant"]
        assert transcript_problems(messages) == []
        assert messages[-1].content[0].text == "Done: launched moon"
        assert first.get("/v1/sessions/s1/approvals").json()["approvals"] == []


@pytest.mark.timeout(300)
def test_a_killed_replica_s_session_goes_on_on_another(postgres_dsn: str, tmp_path: Path) -> None:
    script, tools, runs = setup(tmp_path)
    with (
        replica(script, tools, postgres_dsn, runs) as (first_proc, first_url),
        replica(script, tools, postgres_dsn, runs) as (_, second_url),
        httpx.Client(base_url=first_url, timeout=30) as first,
        httpx.Client(base_url=second_url, timeout=30) as second,
    ):
        started = first.post("/v1/sessions/s2/runs", json={"input": "weather paris slow"})
        assert started.status_code == 202, started.text
        deadline = time.monotonic() + 60
        while not any(line.startswith("weather slow") for line in ran(runs)):
            assert time.monotonic() < deadline, f"the slow tool did not start: {ran(runs)}"
            time.sleep(0.05)
        busy = second.post("/v1/sessions/s2/runs", json={"input": "weather rome"})
        assert busy.status_code == 409, busy.text  # one writer: the first replica has it
        first_proc.kill()  # SIGKILL mid-run: no release, no close, no cleanup
        first_proc.wait(10)

        resumed = post_when_free(second, "/v1/sessions/s2/resume")
        assert resumed.status_code == 202, resumed.text
        wait_ended(second, resumed.json()["run_id"])
        more = post_when_free(second, "/v1/sessions/s2/runs", {"input": "weather rome"})
        assert more.status_code == 202, more.text
        wait_ended(second, more.json()["run_id"])

        messages = transcript(second, "s2")
        assert transcript_problems(messages) == []  # every tool call answered, once
        results = {m.tool_call_id: m for m in messages if m.role == "toolResult"}
        calls = [c for m in messages if m.role == "assistant" for c in m.tool_calls]
        assert sorted(results) == sorted(c.id for c in calls) and len(calls) == 3
        slow = next(c for c in calls if c.arguments == {"city": "slow"})
        assert results[slow.id].is_error and "interrupted" in text_of(results[slow.id].content)
        answers = [text_of(m.content) for m in messages if m.role == "assistant"]
        assert answers[-1] == "Done: sunny in rome"
        assert answers[1].startswith("Done: ") and "interrupted" in answers[1]  # resumed turn
        assert sum(line.startswith("weather paris") for line in ran(runs)) == 1
        assert sum(line.startswith("weather slow") for line in ran(runs)) == 1  # not rerun
