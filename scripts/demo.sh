#!/usr/bin/env bash
# README command 1, run by `make demo` after the install: the whole job on the embedded local model.
# Starts the embedded SmolLM2-135M-Instruct model + the string_match environment + simple_agent, collects
# the 24 demo tasks (scripts/demo_data/tasks.jsonl: short questions of graded difficulty, each asking for an
# "Answer: ..." line) x 8 repeats, each repeat with its own sampling seed, profiles them, prints the key
# metrics, the profile summary, the health verdict and how many answers could not be read, writes the HTML
# report and stops everything.
set -euo pipefail
cd "$(dirname "$0")/.."
GYM=${GYM:-.venv/bin/gym}
PYTHON=${PYTHON:-.venv/bin/python}
OUT=${OUT:-results/demo}
DATA=scripts/demo_data/tasks.jsonl

# Seeds 0..7 (--num-repeats-add-seed) make the repeats differ yet the run repeatable; 32 tokens are ample
# for an "Answer: ..." line and cut off the 135M model's occasional rambling.
"$GYM" eval run \
  --resources-server string_match \
  --agent string_match_simple_agent \
  --input "$DATA" \
  --num-repeats 8 --num-repeats-add-seed \
  --temperature 0.7 --max-output-tokens 32 \
  --concurrency 4 \
  --output "$OUT/rollouts.jsonl" "$@"

"$GYM" eval profile \
  --inputs "$OUT/rollouts_materialized_inputs.jsonl" \
  --rollouts "$OUT/rollouts.jsonl" \
  --report

# string_match's metrics have no no-answer rate: count the rollouts whose reply had no readable answer.
"$PYTHON" - "$OUT/rollouts.jsonl" <<'PY'
import sys

import orjson

with open(sys.argv[1], "rb") as f:
    answers = [orjson.loads(line).get("extracted_answer") for line in f]
missing = sum(answer is None for answer in answers)
print(f"Rollouts without an extractable answer: {missing} of {len(answers)} ({100 * missing / len(answers):.1f} %)")
PY
echo "Report: $OUT/rollouts_report.html (open it in a browser)"
