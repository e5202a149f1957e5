"""`yiem batch --ray` as a user runs it on one machine (DESIGN §16, docs/batch.md): a head
started by the documented recipe (`ray start --head --node-ip-address=127.0.0.1`, no
PYTHONPATH), and a driver with no Ray variables exported, whose `--agent` module sits in
the folder it runs in; and bare `--ray` starting a cluster for the batch. Each time the
command's stdout is its one result line: Ray's warnings stay on stderr, its INFO lines off."""

from __future__ import annotations

import json
import os
import secrets
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.batch._kit import write_tasks
from tests.batch._ray import ray_head

pytestmark = [pytest.mark.slow, pytest.mark.timeout(900)]

YIEM = Path(sys.executable).parent / "yiem"
AUTH = {"RAY_AUTH_MODE": "token", "RAY_AUTH_TOKEN": secrets.token_hex(32)}
"""Token auth with a token of this test run (the machine is shared); both sides get it."""

FACTORY = """
from yiemagent import Agent
from yiemagent.ai.providers.faux import FauxModel


def make_agent(task):
    fm = FauxModel([f"answer {task.id} from the factory"])
    return Agent(model=fm.model, stream_fn=fm.stream_fn)
"""


def _user_env() -> dict[str, str]:
    """The driver's environment: no Ray variable of the tests' own cluster."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("RAY_")}
    return {**env, **AUTH, "RAY_USAGE_STATS_ENABLED": "0"}


@pytest.fixture(scope="module")
def bare_head(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The documented recipe: the head gets no PYTHONPATH."""
    env = {k: v for k, v in _user_env().items() if k != "PYTHONPATH"}
    env["RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"] = "0"
    with ray_head(env, tmp_path_factory.mktemp("head")) as address:
        yield address


def _batch(project: Path, *ray: str) -> tuple[subprocess.CompletedProcess[str], Path]:
    (project / "my_agents.py").write_text(FACTORY)
    tasks = write_tasks(project / "tasks.jsonl", [{"id": f"t{i}", "prompt": "p"} for i in range(3)])
    out = project / "results.jsonl"
    done = subprocess.run(
        [
            str(YIEM),
            "batch",
            str(tasks),
            "--out",
            str(out),
            "--agent",
            "my_agents:make_agent",
            "--ray",
            *ray,
        ],
        cwd=project,
        env=_user_env(),
        capture_output=True,
        text=True,
        timeout=400,
    )
    return done, out


def _check(done: subprocess.CompletedProcess[str], out: Path) -> None:
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.splitlines() == [done.stdout.strip()], done.stdout  # one line
    assert done.stdout.startswith("3 tasks: 3 done") and "\x1b" not in done.stdout
    texts = {line["id"]: line["text"] for line in map(json.loads, out.read_text().splitlines())}
    assert texts == {f"t{i}": f"answer t{i} from the factory" for i in range(3)}


def test_yiem_batch_on_a_local_head_node_needs_no_exported_variables(
    bare_head: str, tmp_path: Path
) -> None:
    done, out = _batch(tmp_path, bare_head)
    _check(done, out)
    # Ray's INFO lines are off (they came before the batch's own lines, and before its
    # error when the address was wrong); its warnings would go to stderr, never stdout
    assert "Connected to Ray cluster" not in done.stderr


def test_bare_ray_starts_a_cluster_and_keeps_its_notices_off_stdout(tmp_path: Path) -> None:
    done, out = _batch(tmp_path)
    _check(done, out)
