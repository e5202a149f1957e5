"""`yiem run -` reads the prompt from standard input (DESIGN §8): a prompt longer than an
operating system lets one argument be (128 KiB on Linux: `yiem run "$(cat big.txt)"` fails
before yiem starts, "Argument list too long") is a working run; input that is not UTF-8
is one line. Real processes on the faux model."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

pytestmark = pytest.mark.timeout(120)

SCRIPT = textwrap.dedent(
    """
    import sys

    import yiemagent.cli.main as m
    from yiemagent.ai.providers.faux import FauxModel

    def answer(context):
        text = context.messages[-1].content[0].text
        return f"read {len(text)} characters ending {text[-12:]!r}"

    fm = FauxModel([answer], model_id="stdin")
    m.resolve_model = lambda *args, **kwargs: fm.model
    sys.exit(m.main(sys.argv[1:]))
    """
)


def _yiem(tmp_path: Path, stdin: bytes, *args: str) -> subprocess.CompletedProcess[bytes]:
    script = tmp_path / "run_faux.py"
    script.write_text(SCRIPT)
    (tmp_path / "tools").mkdir(exist_ok=True)
    command = [sys.executable, str(script), "run", *args, "--tools", str(tmp_path / "tools")]
    return subprocess.run(command, input=stdin, capture_output=True, timeout=60)


def test_a_200k_character_prompt_comes_in_on_standard_input(tmp_path: Path) -> None:
    prompt = "lorem ipsum " * 16_666 + "the end."  # 200,000 characters
    done = _yiem(tmp_path, prompt.encode(), "-", "--json")
    assert done.returncode == 0, done.stderr
    end = json.loads(done.stdout.decode().splitlines()[-1])
    assert end["type"] == "agent_end"
    [user] = [m for m in end["messages"] if m["role"] == "user"]
    assert user["content"][0]["text"] == prompt
    assert end["messages"][-1]["content"][0]["text"] == (
        f"read {len(prompt)} characters ending 'sum the end.'"
    )


@pytest.mark.parametrize(
    ("stdin", "said"),
    [
        (b"caf\xe9?", "yiem: error: the prompt on standard input is not UTF-8 text"),
        (b"  \n", "yiem: error: the prompt is empty"),
    ],
    ids=["latin-1", "blank"],
)
def test_a_prompt_on_standard_input_that_is_not_one_is_one_line(
    tmp_path: Path, stdin: bytes, said: str
) -> None:
    done = _yiem(tmp_path, stdin, "-")
    err = done.stderr.decode()
    assert done.returncode != 0
    assert len(err.strip().splitlines()) == 1 and err.startswith(said), err
    assert done.stdout == b""
