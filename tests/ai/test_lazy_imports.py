"""`import yiemagent` imports no provider SDK or model runtime (DESIGN §2); provider
modules load on first use. The 150 ms import budget is a figure `bench/import_time.py` prints,
never a unit-test assertion (a busy machine must not fail the suite)."""

from __future__ import annotations

import json
import subprocess
import sys

HEAVY = ("openai", "anthropic", "xllamacpp")


def run(code: str) -> str:
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True
    )
    return done.stdout.strip()


def test_import_loads_no_provider_sdk() -> None:
    code = (
        "import sys, json, yiemagent, yiemagent.ai, yiemagent.ai.providers.faux,"
        " yiemagent.ai.transform;"
        f"print(json.dumps([m for m in {HEAVY!r} if m in sys.modules]))"
    )
    assert json.loads(run(code)) == []


def test_ai_stream_dispatch_imports_nothing_heavy_for_faux() -> None:
    code = (
        "import asyncio, sys, json\n"
        "from yiemagent.ai import Context, complete\n"
        "from yiemagent.ai.providers.faux import FauxModel\n"
        "fm = FauxModel(['hi'])\n"
        "message = asyncio.run(complete(fm.model, Context()))\n"
        f"print(json.dumps([message.text, [m for m in {HEAVY!r} if m in sys.modules]]))"
    )
    assert json.loads(run(code)) == ["hi", []]
