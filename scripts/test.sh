#!/usr/bin/env bash
# Set up, then run the linters, the type checker and the whole test suite.
# Extra arguments go to pytest (e.g. scripts/test.sh -k faux -x).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh test
echo "== ruff" && .venv/bin/ruff check src tests bench examples evals
echo "== ruff format" && .venv/bin/ruff format --check src tests bench examples evals
echo "== mypy" && .venv/bin/mypy
echo "== pytest" && .venv/bin/pytest "$@"
