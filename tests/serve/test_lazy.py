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
