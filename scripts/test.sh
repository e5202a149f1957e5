#!/usr/bin/env bash
# Set up, then run the linters, the type checker and the whole test suite.
# Extra arguments go to pytest (e.g. scripts/test.sh -k faux -x).
set -euo pipefail
case "${1:-}" in
  -h|--help)
    echo "usage: scripts/test.sh [PYTEST_ARGS...]"
    echo "Sets up .venv (scripts/setup.sh test), then runs ruff, mypy and pytest with the"
    echo "arguments, e.g. scripts/test.sh -m \"not local_model\" -x; pytest's own options:"
    echo ".venv/bin/pytest --help."
    exit 0 ;;
esac
cd "$(dirname "$0")/.."
bash scripts/setup.sh test
echo "== ruff" && .venv/bin/ruff check src tests bench examples evals
echo "== ruff format" && .venv/bin/ruff format --check src tests bench examples evals
echo "== mypy" && .venv/bin/mypy
echo "== pytest" && .venv/bin/pytest "$@"
