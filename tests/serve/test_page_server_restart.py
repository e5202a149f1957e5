"""The page when `yiem serve` is killed mid-run (SIGKILL: no clean-up) and started again on
the same port and store (DESIGN §8, §18): the page's reconnect with Last-Event-ID finds no
such run on the new server; it says the run was cut off by the restart, shows the session
as stored, and the next message is answered. Headless Chromium against real `yiem serve`
processes on the faux model."""

from __future__ import annotations

import subprocess
import sys
import textwrap
import time
from pathlib import Path

import httpx2 as httpx
import pytest

from tests.serve._browser import ask, browser_page
from tests.serve.test_cli import free_port

pytestmark = pytest.mark.timeout(240)

SERVE_FAUX = textwrap.dedent(
    """
    import sys

    import yiemagent.cli.serve as serve
    from yiemagent.ai.providers.faux import FauxModel, faux_message, faux_text, faux_tool_call
    from yiemagent.cli.main import main

    def brain(context):
        last = context.messages[-1]
        if last.role == "toolResult":
            return faux_message(faux_text("rested"))
        text = last.content if isinstance(last.content, str) else last.content[0].text
        if text == "nap":
            return faux_message(faux_tool_call("nap", {}))
        return faux_message(faux_text("echo: " + text))

    faux = FauxModel([brain] * 100, model_id="serve-faux")
    serve.resolve_model = lambda *args, **kwargs: faux.model
    sys.exit(main(sys.argv[1:]))
    """
)

NAP = textwrap.dedent(
    """
    import asyncio

    from yiemagent import tool

    @tool
    async def nap() -> str:
        \"\"\"Sleep a minute.\"\"\"
        await asyncio.sleep(60)
        return "rested"

    def get_tool():
        return nap
    """
)


def _serve(tmp_path: Path, port: int) -> subprocess.Popen[bytes]:
    command = [sys.executable, str(tmp_path / "serve_faux.py"), "serve", "--port", str(port)]
    command += ["--tools", str(tmp_path / "tools"), "--sessions", str(tmp_path / "s.db")]
    server = subprocess.Popen(command, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 60
    while True:
        try:
            if httpx.get(f"http://127.0.0.1:{port}/healthz").status_code == 200:
                return server
        except httpx.TransportError:
            assert server.poll() is None and time.monotonic() < deadline
            time.sleep(0.1)


def test_the_page_says_a_restart_cut_its_run_off_and_goes_on(tmp_path: Path) -> None:
    """The page said only "The event stream failed (404)." and kept the half-run on the
    screen as the old server had streamed it."""
    (tmp_path / "serve_faux.py").write_text(SERVE_FAUX)
    (tmp_path / "tools").mkdir()
    (tmp_path / "tools" / "nap.py").write_text(NAP)
    port = free_port()
    first = _serve(tmp_path, port)
    second = None
    try:
        with browser_page(tmp_path / "profile") as page:
            page.goto(f"http://127.0.0.1:{port}/")
            page.wait_for_selector("text=What can I do for you?")
            ask(page, "nap")
            page.locator(".tool.running").first.wait_for()
            first.kill()  # SIGKILL mid-tool-call
            first.wait()
            second = _serve(tmp_path, port)
            page.wait_for_selector(".note:has-text('The server no longer has this run')")
            assert page.locator(".note:has-text('(404)')").count() == 0
            page.wait_for_selector("#state:text('idle')")
            ask(page, "hello")
            page.wait_for_selector(".assistant:has-text('echo: hello')")
            page.wait_for_selector("#state:text('idle')")
    finally:
        for server in (first, second):
            if server is not None and server.poll() is None:
                server.kill()
                server.wait()


def test_the_page_says_when_the_server_stopped_answering(tmp_path: Path) -> None:
    """With the server gone for longer than the page's reconnects (about 24 s), it went
    idle mid-answer without a word."""
    (tmp_path / "serve_faux.py").write_text(SERVE_FAUX)
    (tmp_path / "tools").mkdir()
    (tmp_path / "tools" / "nap.py").write_text(NAP)
    port = free_port()
    server = _serve(tmp_path, port)
    try:
        with browser_page(tmp_path / "profile") as page:
            page.goto(f"http://127.0.0.1:{port}/")
            page.wait_for_selector("text=What can I do for you?")
            ask(page, "nap")
            page.locator(".tool.running").first.wait_for()
            server.kill()
            server.wait()
            page.wait_for_selector(
                ".note:has-text('The server stopped answering')", timeout=120_000
            )
            page.wait_for_selector("#state:text('idle')")
    finally:
        if server.poll() is None:
            server.kill()
            server.wait()
