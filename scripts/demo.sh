#!/usr/bin/env bash
# README command 1, run by `make demo` after the install: the whole job on the embedded local model.
# Starts the embedded SmolLM2-135M model + the mcqa environment + simple_agent, collects the 5 example
# tasks x 4 repeats, profiles them, prints key metrics and the profile summary, and stops everything.
set -euo pipefail
cd "$(dirname "$0")/.."
GYM=${GYM:-.venv/bin/gym}
OUT=${OUT:-results/demo}
DATA=src/rewardgym/environments/mcqa/data/example.jsonl

"$GYM" eval run \
  --resources-server mcqa \
  --agent mcqa_simple_agent \
  --input "$DATA" \
  --num-repeats 4 --num-repeats-add-seed \
  --temperature 0.7 --max-output-tokens 384 \
  --concurrency 4 \
  --output "$OUT/rollouts.jsonl"

"$GYM" eval profile \
  --inputs "$OUT/rollouts_materialized_inputs.jsonl" \
  --rollouts "$OUT/rollouts.jsonl"
