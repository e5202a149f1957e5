"""`yiem run`'s bar while the embedded model loads, in a real terminal (tmux): once its file
is in place, llama.cpp's load takes seconds with no bytes to count, and the bar read
"Preparing MODEL ━━━ 0/? bytes" all along. It now says "Loading MODEL" with no byte count;
the bytes show only while the file is assembled from its chunks."""

from __future__ import annotations

import sys
import textwrap
from pathlib import Path

import pytest

from tests.cli.chat._tmux import Pane

pytestmark = pytest.mark.timeout(120)

SCRIPT = textwrap.dedent(
    """
    import time
    from pathlib import Path
    from types import SimpleNamespace

    import yiemagent.ai.providers.local.runtime as runtime
    import yiemagent.ai.providers.local.weights as weights
    from yiemagent import get_model
    from yiemagent.cli.main import _load_local
    from yiemagent.cli.render import PipeConsole

    def assembled(spec, progress=None):  # the file was assembled on an earlier run
        return Path(".")

    def load(spec, progress=None):  # llama.cpp's load: seconds, no bytes to count
        time.sleep(3)
        return SimpleNamespace(load_s=3.0)

    weights.ensure_model_file = assembled
    runtime.load_runtime = load
    runtime.loaded_runtime = lambda spec: None
    _load_local(get_model("local/qwen2.5-coder-0.5b"), PipeConsole(stderr=True))
    """
)


def test_the_load_says_loading_without_a_byte_count(tmp_path: Path) -> None:
    (tmp_path / "load.py").write_text(SCRIPT)
    command = ["sh", "-c", f"cd {tmp_path} && exec {sys.executable} load.py"]
    pane = Pane(tmp_path / "data", command=command, faux=False)
    try:
        during = pane.wait("Loading Qwen2.5-Coder-0.5B-Instruct Q4_K_M")
        assert pane.exit_code() == 0
        after = pane.screen()
    finally:
        pane.close()
    assert "bytes" not in during and "Preparing" not in during, during
    assert "loaded in 3.0 s" in after and "Loading" not in after, after
