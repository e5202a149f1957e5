"""`yiem run --model openai/...` (or anthropic/...) without its extra installed says the SDK
is missing, with the install command, before it says anything of an API key: a key set
first only led to the next error (DESIGN §8: one line, non-zero exit)."""

from __future__ import annotations

import sys

import pytest

from yiemagent.cli.main import main
from yiemagent.errors import install_hint


@pytest.mark.parametrize(
    ("model", "sdk", "key"),
    [
        ("openai/gpt-4o-mini", "openai", "OPENAI_API_KEY"),
        ("openai-responses/gpt-4o-mini", "openai", "OPENAI_API_KEY"),
        ("anthropic/claude-haiku-4-5", "anthropic", "ANTHROPIC_API_KEY"),
    ],
)
@pytest.mark.parametrize("has_key", [False, True], ids=["no-key", "key"])
def test_a_missing_sdk_is_said_first_with_the_install_command(
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    model: str,
    sdk: str,
    key: str,
    has_key: bool,
) -> None:
    monkeypatch.setitem(sys.modules, sdk, None)  # as if the extra were not installed
    if has_key:
        monkeypatch.setenv(key, "sk-test-not-used")
    else:
        monkeypatch.delenv(key, raising=False)
    code = main(["run", "hi", "--model", model])
    out, err = capsys.readouterr()
    assert code == 1 and out == "", err
    errors = [line for line in err.splitlines() if line.startswith("yiem: ")]
    assert errors == [
        f"yiem: error: the run failed: the {sdk} SDK is not installed: {install_hint(sdk)}"
    ], err
    assert "API key" not in err and "Traceback" not in err
