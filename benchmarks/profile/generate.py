"""Seeded generator of realistic ``gym eval profile`` inputs: materialized inputs + shuffled rollouts.

Writes ``<out>/bench_materialized_inputs.jsonl`` (N tasks × R repeats, "aabbcc" order, ~320-character
prompts) and ``<out>/bench.jsonl`` (one rollout per input row with a ~500-character response, usage
counts, a 0/1 reward, ``mask_sample: false`` and the collector's stamps), the rollouts in a shuffled
(completion-like) order. The same seed always gives byte-identical files.

Usage: ``python benchmarks/profile/generate.py --tasks 250000 --repeats 4 --out /tmp/bench1m``
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path
from typing import Any

import numpy as np
import orjson

_WORDS = [
    "the",
    "of",
    "and",
    "to",
    "in",
    "is",
    "that",
    "for",
    "it",
    "as",
    "was",
    "with",
    "be",
    "by",
    "on",
    "not",
    "he",
    "this",
    "are",
    "or",
    "his",
    "from",
    "at",
    "which",
    "but",
    "have",
    "an",
    "they",
    "you",
    "were",
    "her",
    "she",
    "there",
    "one",
    "all",
    "we",
    "their",
    "has",
    "been",
    "if",
    "more",
    "when",
    "will",
    "would",
    "who",
    "so",
    "no",
    "genetic",
    "test",
    "which",
    "following",
    "scenario",
    "best",
    "illustrates",
    "concept",
    "predictive",
    "testing",
    "implications",
    "counseling",
    "answer",
    "option",
    "sequence",
    "mutation",
    "protein",
    "enzyme",
    "analysis",
    "patient",
    "risk",
    "family",
    "history",
    "disease",
    "disorder",
    "screening",
]

_PROMPT_HEAD = "You should output your final response letter inside \\boxed{} and nothing else. "


def _text(rng: np.random.Generator, chars: int) -> str:
    words = rng.choice(len(_WORDS), size=chars // 4)
    text = " ".join(_WORDS[i] for i in words)
    return text[:chars]


def generate(out: Path, tasks: int, repeats: int, seed: int = 0, agent: str = "bench_simple_agent") -> None:
    """Write the two files for ``tasks × repeats`` rollouts into ``out``."""
    rng = np.random.default_rng(seed)
    out.mkdir(parents=True, exist_ok=True)
    inputs_path = out / "bench_materialized_inputs.jsonl"
    rollouts_path = out / "bench.jsonl"
    letters = "ABCDEFGHIJ"
    pass_rate = rng.beta(0.6, 0.6, size=tasks)
    prompt_tokens = rng.integers(80, 400, size=tasks)
    with open(inputs_path, "wb") as handle:
        for task in range(tasks):
            prompt = _PROMPT_HEAD + _text(rng, 320 - len(_PROMPT_HEAD))
            row: dict[str, Any] = {
                "responses_create_params": {"input": [{"role": "user", "content": prompt}]},
                "expected_answer": letters[task % 10],
                "agent_ref": {"name": agent},
            }
            for rollout in range(repeats):
                line = dict(row)
                line["_ng_task_index"] = task
                line["_ng_rollout_index"] = rollout
                handle.write(orjson.dumps(line) + b"\n")
    order = rng.permutation(tasks * repeats)
    rewards = rng.random(tasks * repeats) < np.repeat(pass_rate, repeats)
    out_tokens = rng.integers(20, 700, size=tasks * repeats)
    with open(rollouts_path, "wb") as handle:
        for position, flat in enumerate(order.tolist()):
            task, rollout = divmod(flat, repeats)
            answer = letters[task % 10] if rewards[flat] else letters[(task + 1) % 10]
            body = _text(rng, 480) + f" \\boxed{{{answer}}}"
            usage_in = int(prompt_tokens[task])
            usage_out = int(out_tokens[flat])
            result: dict[str, Any] = {
                "responses_create_params": {
                    "input": [{"content": f"prompt {task}", "role": "user", "type": "message"}],
                },
                "response": {
                    "id": f"resp_{position:012d}",
                    "created_at": 1796026703.33 + position / 1000,
                    "model": "bench",
                    "object": "response",
                    "output": [
                        {
                            "content": [{"annotations": [], "text": body, "type": "output_text"}],
                            "role": "assistant",
                            "status": "completed",
                            "type": "message",
                        }
                    ],
                    "status": "completed",
                    "usage": {
                        "input_tokens": usage_in,
                        "input_tokens_details": {"cached_tokens": 0},
                        "output_tokens": usage_out,
                        "output_tokens_details": {"reasoning_tokens": 0},
                        "total_tokens": usage_in + usage_out,
                    },
                },
                "reward": 1.0 if rewards[flat] else 0.0,
                "mask_sample": False,
                "expected_answer": letters[task % 10],
                "extracted_answer": answer,
                "_ng_task_index": task,
                "_ng_rollout_index": rollout,
                "agent_ref": {"name": agent},
            }
            handle.write(orjson.dumps(result) + b"\n")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", type=int, required=True)
    parser.add_argument("--repeats", type=int, default=4)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()
    started = time.perf_counter()
    generate(args.out, args.tasks, args.repeats, args.seed)
    size = sum(p.stat().st_size for p in args.out.glob("bench*.jsonl"))
    print(
        f"wrote {args.tasks * args.repeats} rollouts ({args.tasks} tasks × {args.repeats}) "
        f"to {args.out}: {size / 1e6:.1f} MB in {time.perf_counter() - started:.1f} s"
    )


if __name__ == "__main__":
    main()
