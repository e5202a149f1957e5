"""DESIGN §9, §12: `import yiemagent` (and `yiemagent.mcp`, and the CLI) import no MCP SDK;
without the `mcp` extra, connecting or serving says how to install it, in one line."""

from __future__ import annotations

import subprocess
import sys

from yiemagent.errors import install_hint

BLOCK_MCP = "import sys; sys.modules['mcp'] = None\n"  # `import mcp` now raises ImportError
NEEDS_MCP = f"MCP support needs the official MCP SDK: {install_hint('mcp')}"
"""The child runs from the same folder with the same Python, so it gives the same hint: in
a checkout `.venv/bin/pip install -e '.[mcp]'`, else `pip install 'yiemagent[mcp]'`."""


def _python(code: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=False
    )


def test_importing_yiemagent_and_its_mcp_package_imports_no_sdk() -> None:
    done = _python(
        "import sys, yiemagent, yiemagent.mcp, yiemagent.cli.main\n"
        "loaded = [m for m in sys.modules if m.split('.')[0] in "
        "('mcp', 'mcp_types', 'httpx2', 'uvicorn', 'starlette')]\n"
        "print(loaded)"
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"


def test_without_the_extra_add_server_says_how_to_install_it() -> None:
    done = _python(
        BLOCK_MCP + "import asyncio\n"
        "from yiemagent import ConfigError\n"
        "from yiemagent.mcp import MCPServerStdio, add_server, serve\n"
        "from yiemagent.tools import ToolStore\n"
        "for job in (add_server(ToolStore(), MCPServerStdio('x')), serve(ToolStore())):\n"
        "    try:\n"
        "        asyncio.run(job)\n"
        "    except ConfigError as exc:\n"
        "        print(exc)\n"
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [NEEDS_MCP] * 2


def test_without_the_extra_the_cli_prints_one_line() -> None:
    done = _python(
        BLOCK_MCP + "import sys\nfrom yiemagent.cli.main import main\n"
        "sys.exit(main(['mcp', 'list', 'python server.py']))"
    )
    assert done.returncode == 1
    assert done.stderr.strip() == f"yiem: error: {NEEDS_MCP}"
