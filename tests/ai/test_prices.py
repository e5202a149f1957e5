"""Prices come from the `genai-prices` database, loaded on first use (DESIGN §7), and
OpenTelemetry is imported only when tracing is enabled."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from yiemagent.ai import MODELS, calculate_cost, get_model
from yiemagent.ai._prices import lookup_price
from yiemagent.types import Usage


def run(code: str) -> object:
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True
    )
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_imports_load_neither_the_price_database_nor_opentelemetry() -> None:
    code = (
        "import sys, json, yiemagent, yiemagent.ai, yiemagent.telemetry, yiemagent.cli.main\n"
        "from yiemagent.ai import FallbackModel\n"
        "print(json.dumps([m for m in sys.modules if m.split('.')[0] in "
        "('genai_prices', 'opentelemetry')]))"
    )
    assert run(code) == []


def test_the_first_hosted_model_loads_the_database() -> None:
    code = (
        "import sys, json\n"
        "from yiemagent.ai import get_model\n"
        "local = get_model('local/qwen2.5-coder-0.5b')\n"
        "before = 'genai_prices' in sys.modules\n"
        "m = get_model('openai/gpt-4o-mini')\n"
        "print(json.dumps([before, 'genai_prices' in sys.modules, m.cost.input, m.cost.output]))"
    )
    assert run(code) == [False, True, 0.15, 0.6]


def test_catalogue_prices_come_from_the_database() -> None:
    sonnet = MODELS["anthropic/claude-sonnet-4-5"]
    assert sonnet.cost == lookup_price("anthropic", "claude-sonnet-4-5")
    assert sonnet.cost.cache_write > sonnet.cost.input > sonnet.cost.cache_read > 0
    assert get_model("claude-sonnet-4-5") is sonnet  # priced once, the same object after
    assert MODELS["local/qwen2.5-coder-0.5b"].cost.input == 0  # in-process: free
    cost = calculate_cost(get_model("openai/gpt-4o"), Usage(input=1_000_000, output=100_000))
    assert cost.input == pytest.approx(2.5) and cost.output == pytest.approx(1.0)


def test_unknown_models_have_no_price() -> None:
    assert lookup_price("openai", "no-such-model-xyz") is None
    assert lookup_price("no-such-provider", "gpt-4o") is None
    compatible = get_model("openai-compatible/my-model", base_url="http://127.0.0.1:9/v1")
    assert compatible.cost.input == compatible.cost.output == 0
