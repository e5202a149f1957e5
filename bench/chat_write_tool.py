"""`yiem chat --write-tools DIR` with a real model writing a tool, then using it (DESIGN §15,
R-4.15; seed 000 §15; docs/chat.md "Writing tools with the embedded models").

Runs the real command in a tmux pane: types the request to write a small tool, answers `y`
to "Write tool NAME? [y/N]", prints the file written, then asks for the tool's use and says
whether the tool was called and its result holds the expected text. Timings are seconds from
Enter. Cases (`CASES`): word_count, c2f (celsius to fahrenheit), reverse.

    YIEMAGENT_LOCAL_DEADLINE_S=600 flock /work/notes/model.lock \\
        .venv/bin/python bench/chat_write_tool.py word_count --model local/qwen2.5-coder-1.5b

Needs tmux and the model (`yiem models`). Each embedded turn can take minutes on 2 cores.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.cli.chat._tmux import Pane, after  # noqa: E402

CASES: dict[str, tuple[str, str, str, str]] = {
    # name: (write request, the tool's name, use request, text its result must hold)
    "word_count": (
        "Use writeTool to create a tool named word_count that takes a string argument text "
        "and returns the number of words in it.",
        "word_count",
        "Use the word_count tool on the text: the quick brown fox jumps",
        "5",
    ),
    "c2f": (
        "Use writeTool to create a tool named celsius_to_fahrenheit that takes a number "
        "argument celsius and returns the temperature in Fahrenheit.",
        "celsius_to_fahrenheit",
        "Use the celsius_to_fahrenheit tool to convert 37 degrees Celsius.",
        "98.6",
    ),
    "reverse": (
        "Use writeTool to create a tool named reverse_text that takes a string argument text "
        "and returns the text reversed.",
        "reverse_text",
        "Use the reverse_text tool on the text: hello world",
        "dlrow olleh",
    ),
}
TURN_S = 1200.0


def run(case: str, model: str) -> bool:
    """One case; prints the screens and the outcome; True when the written tool was called and
    its result holds the expected text."""
    write_request, name, use_request, expected = CASES[case]
    folder = Path(tempfile.mkdtemp(prefix="yiem-write-tool-"))
    (folder / "data").mkdir()
    written = folder / "written"
    args = ["--model", model, "--write-tools", str(written)]
    pane = Pane(folder / "data", args, faux=False, width=160, height=60)
    started = time.monotonic()

    def stamp(text: str) -> None:
        print(f"[{time.monotonic() - started:7.1f} s] {text}", flush=True)

    try:
        pane.wait("/help lists the commands", timeout=120)
        pane.wait("loaded in", timeout=300)
        stamp("model loaded")
        enter = time.monotonic()
        pane.type(write_request)
        screen = pane.wait(
            lambda s: "Write tool" in s or after(s, "› Use writeTool", "tokens:"), TURN_S
        )
        stamp(
            f"write turn: {'question' if 'Write tool' in screen else 'no writeTool call'} "
            f"after {time.monotonic() - enter:.1f} s"
        )
        print(screen, flush=True)
        if "Write tool" not in screen:
            return False
        pane.type("y")
        screen = pane.wait(lambda s: after(s, "Write tool", "tokens:"), TURN_S)
        stamp(f"write turn ended {time.monotonic() - enter:.1f} s after Enter")
        files = sorted(written.glob("*.py"))
        print("files written:", [p.name for p in files], flush=True)
        for path in files:
            print(path.read_text(), flush=True)
        if not files:
            return False
        before = pane.screen().count("tokens:")
        enter = time.monotonic()
        pane.type(use_request)
        screen = pane.wait(lambda s: s.count("tokens:") > before, TURN_S)
        stamp(f"use turn ended {time.monotonic() - enter:.1f} s after Enter")
        tail = screen.rsplit(use_request, 1)[-1]
        print(tail, flush=True)
        calls = [line for line in tail.splitlines() if line.lstrip().startswith(f"✓ {name}(")]
        worked = any(expected in line for line in calls)
        print(
            f"OUTCOME {case} {model}: tool called: {bool(calls)}; result holds "
            f"{expected!r}: {worked}",
            flush=True,
        )
        return worked
    finally:
        pane.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("case", choices=sorted(CASES))
    parser.add_argument("--model", default="local/qwen2.5-coder-1.5b")
    options = parser.parse_args()
    sys.exit(0 if run(options.case, options.model) else 1)


if __name__ == "__main__":
    main()
