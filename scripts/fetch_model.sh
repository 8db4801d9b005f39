#!/usr/bin/env bash
# Fetch (once) and verify the embedded model (SmolLM2-135M-Instruct GGUF) into the rewardgym cache;
# prints its path. Extra arguments go to `gym model fetch` (e.g. --cache-dir DIR).
set -euo pipefail
cd "$(dirname "$0")/.."
exec "${PYTHON:-.venv/bin/python}" -m rewardgym model fetch "$@"
