#!/usr/bin/env bash
# Set up, then ask the agent a question on the embedded model (no network, no API key).
#   scripts/demo.sh                         asks "What is 17 * 23? Use the calculator."
#   scripts/demo.sh "What time is it in Tokyo?"
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh demo
if [ "$#" -eq 0 ]; then
  set -- "What is 17 * 23? Use the calculator."
fi
exec .venv/bin/yiem run "$@"
