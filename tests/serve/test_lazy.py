"""`import yiemagent` never imports the server's libraries (DESIGN §18: the `serve` extra is
loaded by `yiemagent.serve` only)."""

from __future__ import annotations

import subprocess
import sys


def test_import_yiemagent_loads_no_web_framework() -> None:
    code = (
        "import sys, yiemagent, yiemagent.sessions, yiemagent.telemetry; "
        "print(sorted(m for m in ('starlette', 'uvicorn', 'sse_starlette', 'ag_ui') "
        "if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
    code = "import sys, yiemagent.serve; print('starlette' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "True"


def test_serve_without_its_extra_says_how_to_install_it() -> None:
    # The demo's environment has the `local` extra only; `yiem serve` said "No module
    # named 'uvicorn'".
    code = (
        "import sys; sys.modules['uvicorn'] = None; from yiemagent.cli.main import main; "
        "sys.exit(main(['serve', '--model', 'openai/gpt-4o-mini']))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.returncode == 1
    assert len(out.stderr.strip().splitlines()) == 1, out.stderr
    assert "uvicorn is missing" in out.stderr and "[serve]" in out.stderr
