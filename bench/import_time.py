"""DESIGN §9: `import yiemagent` takes at most 150 ms and imports no provider SDK.

Prints the best and median of 10 fresh interpreters, and which heavy modules were loaded.
Run: .venv/bin/python bench/import_time.py
"""

from __future__ import annotations

import json
import statistics
import subprocess
import sys

CODE = (
    "import json, sys, time\n"
    "t, c = time.perf_counter(), time.process_time()\n"
    "import yiemagent\n"
    "elapsed, cpu = time.perf_counter() - t, time.process_time() - c\n"
    "heavy = [m for m in ('openai', 'anthropic', 'xllamacpp', 'pydantic', 'jsonschema')"
    " if m in sys.modules]\n"
    "print(json.dumps([elapsed, cpu, heavy]))\n"
)


def main() -> None:
    runs: list[float] = []
    cpus: list[float] = []
    heavy: list[str] = []
    for _ in range(10):
        out = subprocess.run([sys.executable, "-c", CODE], capture_output=True, text=True)
        elapsed, cpu, heavy = json.loads(out.stdout)
        runs.append(elapsed * 1000)
        cpus.append(cpu * 1000)
    best, median = min(runs), statistics.median(runs)
    print(f"import yiemagent: best {best:.1f} ms, median {median:.1f} ms (budget ≤ 150 ms)")
    print(f"CPU time of the import: best {min(cpus):.1f} ms (what a busy machine does not inflate)")
    print(f"heavy modules loaded by the import: {heavy or 'none'}")


if __name__ == "__main__":
    main()
