"""The page opened while `yiem serve`'s embedded model loads (docs/serve.md): a real `yiem
serve` process whose load takes a few seconds, and headless Chromium opening a session's
address (`/#session=ID`, a bookmark or a reload) before it is loaded. The loading note
reloaded itself with `<meta http-equiv="refresh">`, which Chromium takes, for an address
with a `#fragment`, as a move within the page: it reloaded once, then never again, and
the note stayed after the model had loaded. The page must come once the server is up."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests._chromium import chromium_page
from tests.serve.test_cli import free_port
from yiemagent.sessions import SqliteSessionStore
from yiemagent.types import UserMessage

pytestmark = pytest.mark.timeout(180)

LOAD_S = 6

SCRIPT = f"""\
import sys, time
import yiemagent.ai.providers.local.runtime as rt
import yiemagent.cli.serve as serve
from yiemagent.ai.models import get_model
from yiemagent.cli.main import main
def slow(spec, progress=None):
    print("loading", file=sys.stderr, flush=True)
    time.sleep({LOAD_S})
rt.load_runtime = slow
rt.loaded_runtime = lambda spec: None
serve.resolve_model = lambda *args, **kwargs: get_model("local/qwen2.5-coder-0.5b")
sys.exit(main(sys.argv[1:]))
"""


def open_while_loading(url: str, profile: Path) -> tuple[str, str]:
    with chromium_page(profile) as page:
        page.goto(f"{url}/#session=bookmarked")
        first = page.content()
        page.wait_for_selector(
            ".user:has-text('an earlier question')", timeout=LOAD_S * 1000 + 30_000
        )
        return first, str(page.evaluate("location.hash"))


def test_a_sessions_address_opened_while_loading_becomes_the_page(tmp_path: Path) -> None:
    with SqliteSessionStore(tmp_path / "s.db") as store:
        store.append("bookmarked", UserMessage("an earlier question"))
    script = tmp_path / "slow_serve.py"
    script.write_text(SCRIPT, encoding="utf-8")
    port = free_port()
    command = [sys.executable, str(script), "serve", "--port", str(port),
               "--sessions", str(tmp_path / "s.db")]  # fmt: skip
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    proc = subprocess.Popen(command, stderr=subprocess.PIPE, text=True, env=env)
    try:
        assert proc.stderr is not None
        said = [proc.stderr.readline(), proc.stderr.readline()]
        assert said[-1].strip() == "loading", said
        first, address = open_while_loading(f"http://127.0.0.1:{port}", tmp_path / "profile")
    finally:
        proc.terminate()
        proc.wait(30)
    assert "Loading" in first  # opened before the model was loaded
    assert address == "#session=bookmarked"  # the session's address survives the reloads
