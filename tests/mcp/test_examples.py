"""`examples/mcp/use_weather.py` as a reader runs it: it prints the tool, its progress and
the answer; without the `mcp` extra (the demo's environment) it says how to install it in
one line, where it used to end in a traceback."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "mcp" / "use_weather.py"


def _example(prelude: str = "") -> subprocess.CompletedProcess[str]:
    code = f"{prelude}import runpy; runpy.run_path({str(EXAMPLE)!r}, run_name='__main__')"
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)


def test_the_weather_example_prints_the_answer() -> None:
    pytest.importorskip("mcp")
    done = _example()
    assert done.returncode == 0, done.stderr
    assert "tools: ['weather_forecast']" in done.stdout
    assert done.stdout.rstrip().endswith("answer: Snow, -3 °C.")


def test_without_the_mcp_extra_it_says_how_to_install_it() -> None:
    done = _example("import sys; sys.modules['mcp'] = None; ")  # `import mcp` fails
    assert done.returncode == 1
    assert done.stdout == ""
    assert done.stderr.strip().splitlines() == [
        "MCP support needs the official MCP SDK: .venv/bin/pip install -e '.[mcp]'"
    ]
