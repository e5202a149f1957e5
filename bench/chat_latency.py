"""`yiem chat`: latency from Enter to the first streamed character on the screen (DESIGN §15).

Runs the real command in a tmux pane, types a question, presses Enter, and polls the pane
(capture-pane, as fast as it answers) until the first characters of the answer appear. The
figure includes the terminal round trip (tmux and prompt_toolkit's redraw), so it is what a
person sees; polling adds about one capture (a few ms).

    .venv/bin/python bench/chat_latency.py            # the scripted faux model
    .venv/bin/python bench/chat_latency.py --local    # the embedded model, once loaded

Needs tmux. Prints each run and the median.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.cli.chat._tmux import Pane  # noqa: E402


def _after_question(screen: str, question: str) -> list[str]:
    return screen.rsplit(f"› {question}", 1)[1].splitlines()[1:]


def measure(pane: Pane, question: str, timeout: float) -> float:
    """Seconds from Enter to the first character of the answer on the screen."""
    pane.type(question, enter=False)
    pane.wait(lambda s: s.rstrip().endswith(question))
    started = time.perf_counter()
    pane.keys("Enter")
    while True:
        screen = pane.screen()
        committed = screen.rsplit("\n", 1)[0]  # the last line is the input line
        if f"› {question}" in committed and any(
            line and line[0] not in _NOT_ANSWER for line in _after_question(screen, question)
        ):
            elapsed = time.perf_counter() - started
            break
        if time.perf_counter() - started > timeout:
            raise TimeoutError(f"no answer within {timeout} s")
    pane.wait(lambda s: any("tokens:" in x for x in _after_question(s, question)), timeout)
    return elapsed


_NOT_ANSWER = "⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏› "


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--local", action="store_true", help="the embedded model")
    parser.add_argument("--runs", type=int, default=10)
    args = parser.parse_args()
    data = Path(tempfile.mkdtemp(prefix="yiem-chat-bench-"))
    pane = Pane(
        data,
        [] if args.local else ["--tools", str(ROOT / "tests/cli/chat/tools")],
        faux=not args.local,
    )
    timeout = 300.0 if args.local else 30.0
    try:
        pane.wait("/help lists the commands", timeout)
        if args.local:
            pane.wait("loaded in", timeout)
            measure(pane, "Say hi.", timeout)  # warm-up: the prompt cache
        figures = []
        for n in range(args.runs):
            question = f"Say hello to number {n}." if args.local else f"question {n}"
            seconds = measure(pane, question, timeout)
            figures.append(seconds * 1000)
            print(f"run {n + 1}: {seconds * 1000:.0f} ms", flush=True)
        which = "embedded model (loaded)" if args.local else "faux model"
        print(
            f"{which}: Enter → first streamed character: median {statistics.median(figures):.0f}"
            f" ms, min {min(figures):.0f} ms, max {max(figures):.0f} ms ({len(figures)} runs)"
        )
    finally:
        pane.close()


if __name__ == "__main__":
    main()
