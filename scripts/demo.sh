#!/usr/bin/env bash
# Set up, then ask the agent a question on the embedded model (no network, no API key).
#   scripts/demo.sh                         asks "What is 17 * 23? Use the calculator."
#   scripts/demo.sh "What time is it in Tokyo?"
set -euo pipefail
case "${1:-}" in
  -h|--help)
    echo "usage: scripts/demo.sh [PROMPT] [YIEM_RUN_OPTIONS...]"
    echo "Sets up .venv (scripts/setup.sh demo; the first time a few minutes), then runs"
    echo ".venv/bin/yiem run PROMPT (default: \"What is 17 * 23? Use the calculator.\") on the"
    echo "embedded model. The options: .venv/bin/yiem run --help, once set up."
    exit 0 ;;
esac
cd "$(dirname "$0")/.."
bash scripts/setup.sh demo
if [ "$#" -eq 0 ]; then
  set -- "What is 17 * 23? Use the calculator."
fi
exec .venv/bin/yiem run "$@"
