"""A tool file that calls `os._exit()` while it loads (DESIGN R-4.13, §8): the call is that
file's failure, reported like `sys.exit()`, and the program that loads tools goes on; other
threads, and a child the file forks, still exit as they ask. Each case runs in its own Python
process (a real `yiem run` for the CLI): the bug it guards against ends the process, silently
and with status 0, so an in-process test would end pytest with it."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tests._yiem import yiem_in
from tests.ai.servers import ReplayServer, Reply, openai_chunks

pytestmark = pytest.mark.timeout(180)

ROOT = Path(__file__).resolve().parents[2]

GOOD = """
from yiemagent import tool

@tool
def ping() -> str:
    '''Answer pong.'''
    return "pong"

get_tool = lambda: ping
"""

LOAD = """
import os, posix, sys
from yiemagent import ToolLoadError, ToolStore

store = ToolStore("s")
try:
    store.load_dir(sys.argv[1])
except ToolLoadError as exc:
    for path, reason in exc.failures:
        print("failed", os.path.basename(path), reason)
print("tools", *store.tools)
print("restored", os._exit is posix._exit)
"""


def python(script: str, *args: str, env: dict[str, str] | None = None) -> tuple[int, str]:
    proc = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(script), *args],
        capture_output=True,
        text=True,
        timeout=150,
        env={**os.environ, **(env or {})},
        cwd=ROOT,
    )
    return proc.returncode, proc.stdout + proc.stderr


@pytest.mark.parametrize(
    ("source", "reason"),
    [
        ("import os\nos._exit(0)\n", "import failed: the file called os._exit(0)"),
        ("import os\ndef get_tool():\n    os._exit(3)\n", "get_tool() called os._exit(3)"),
        (  # a library the file imports that quits: caught as well
            "import quits_at_import\n",
            "import failed: the file called os._exit(0)",
        ),
        (  # `except Exception` in the file does not hide it
            "import os\ntry:\n    os._exit(0)\nexcept Exception:\n    pass\n",
            "import failed: the file called os._exit(0)",
        ),
    ],
)
def test_os_exit_while_a_file_loads_is_that_files_failure(
    tmp_path: Path, source: str, reason: str
) -> None:
    tools = tmp_path / "tools"
    tools.mkdir()
    (tools / "bad.py").write_text(source)
    (tools / "good.py").write_text(GOOD)
    (tmp_path / "quits_at_import.py").write_text("import os\nos._exit(0)\n")
    code, out = python(LOAD, str(tools), env={"PYTHONPATH": str(tmp_path)})
    assert code == 0, out
    assert out.splitlines() == [f"failed bad.py {reason}", "tools ping listTools", "restored True"]


def test_another_thread_and_a_forked_child_still_exit(tmp_path: Path) -> None:
    """Only the loading thread of this process is guarded: a child the file forks exits
    with its own status, and a thread the file starts ends the whole program as asked."""
    (tmp_path / "forks.py").write_text(
        "import os, threading\n"
        "pid = os.fork()\n"
        "if pid == 0:\n"
        "    os._exit(5)\n"
        "STATUS = os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1])\n"
        "quitter = threading.Thread(target=os._exit, args=(7,))\n"
        "quitter.start()\n"
        "quitter.join()\n"
    )
    code, out = python(LOAD, str(tmp_path))
    assert code == 7, out
    assert out == ""


def test_yiem_run_warns_about_the_file_and_answers(tmp_path: Path) -> None:
    tools = tmp_path / "tools"
    tools.mkdir()
    (tools / "bad.py").write_text("import os\nos._exit(0)\n")
    (tools / "good.py").write_text(GOOD)
    with ReplayServer() as server:
        server.enqueue(Reply(events=openai_chunks({"role": "assistant", "content": "Hello."})))
        argv = ["run", "Hi", "--tools", str(tools), "--model", "openai-compatible/m"]
        proc = yiem_in(tmp_path, *argv, "--base-url", server.url + "/v1")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "Hello."
    warning, usage = proc.stderr.splitlines()
    assert warning == (
        f"yiem: warning: tool file {tools / 'bad.py'} not loaded: import failed: the file "
        "called os._exit(0)"
    )
    assert usage.startswith("tokens: ")
    offered = [t["function"]["name"] for t in server.requests[0].body["tools"]]
    assert offered == ["ping", "listTools"]


def test_write_tool_reports_an_import_that_quits(tmp_path: Path) -> None:
    (tmp_path / "quits_at_import.py").write_text("import os\nos._exit(0)\n")
    folder = tmp_path / "written"
    folder.mkdir()
    script = """
    import asyncio, sys
    from yiemagent import AbortSignal, ToolStore, write_tool_tool

    async def main():
        store = ToolStore("a")
        writer = store.register(write_tool_tool(store, sys.argv[1]))
        args = {"name": "double", "label": "Double", "description": "Doubles x",
                "inputSchema": {"type": "object", "properties": {"x": {"type": "integer"}}},
                "imports": "import quits_at_import", "executeCode": "return 2 * args['x']"}
        try:
            await writer.execute("call", args, AbortSignal(), lambda _r: None)
        except Exception as exc:
            print(exc)
        print("tools", *store.tools)

    asyncio.run(main())
    """
    code, out = python(script, str(folder), env={"PYTHONPATH": str(tmp_path)})
    assert code == 0, out
    assert out.splitlines() == [
        "the new tool file failed to import: os._exit(0) was called",
        "tools writeTool",
    ]
    assert list(folder.iterdir()) == []
