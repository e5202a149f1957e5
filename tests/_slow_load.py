"""A `yiem` whose embedded model takes a minute to load: what the Ctrl-C-while-loading tests
of `yiem run` and `yiem serve` start in a child process."""

from __future__ import annotations

from pathlib import Path


def slow_load_script(
    tmp_path: Path, *, resolving: str, announce: bool, blocks_ctrl_c: bool = False
) -> Path:
    """A script, written in `tmp_path`, that runs `yiem` with its arguments, the default
    embedded model resolved by the module `resolving` (`yiemagent.cli.main` for `yiem run`,
    `yiemagent.cli.serve` for `yiem serve`) and loaded in 60 s. The load prints "loading"
    to stderr first when `announce`; with `blocks_ctrl_c` the thread loading does not see
    SIGINT, as in llama.cpp's own load."""
    script = tmp_path / "slow_load.py"
    script.write_text(
        "import signal, sys, time\n"
        "import yiemagent.ai.providers.local.runtime as rt\n"
        f"import {resolving} as resolving\n"
        "from yiemagent.ai.models import get_model\n"
        "from yiemagent.cli.main import main\n"
        "def slow(spec, progress=None):\n"
        + (
            "    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})\n"
            if blocks_ctrl_c
            else ""
        )
        + ("    print('loading', file=sys.stderr, flush=True)\n" if announce else "")
        + "    time.sleep(60)\n"
        "rt.load_runtime = slow\n"
        "rt.loaded_runtime = lambda spec: None\n"
        "resolving.resolve_model = lambda *args, **kwargs: get_model('local/qwen2.5-coder-0.5b')\n"
        "sys.exit(main(sys.argv[1:]))\n",
        encoding="utf-8",
    )
    return script
