"""Benchmark: generation tokens/s of the embedded model talking to llama.cpp directly (no rewardgym server).

Starts the llama.cpp child (:class:`rewardgym.models.embedded.EmbeddedLlama`) and sends Chat Completions
requests with a fixed number of generated tokens (``ignore_eos``), temperature 0:

- single stream: ``--rounds`` requests one after another;
- parallel: ``--rounds`` waves of ``--parallel`` concurrent requests (one per slot).

Reported per mode: generated tokens / wall seconds (what a client sees, prompt processing included) and
llama.cpp's own decode rate (``timings.predicted_per_second``, mean over requests). This is the baseline
for the ``vllm_model`` server in front of the same child (target: ≤ 10 % overhead).

Usage (repository root): ``.venv/bin/python benchmarks/models/llama_direct_tps.py [--threads 1]
[--parallel 4] [--tokens 128] [--rounds 3]``. Prints one JSON object.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from rewardgym.models.embedded import EmbeddedLlama, LlamaServerOptions, ensure_model

PROMPTS = [
    "Write a short story about a lighthouse keeper.",
    "Explain how rainbows form.",
    "Describe a walk through a forest in autumn.",
    "Give advice to someone learning to cook.",
]


def _complete(base_url: str, prompt: str, tokens: int) -> dict[str, Any]:
    body = {
        "messages": [{"role": "user", "content": prompt}],
        "max_tokens": tokens,
        "temperature": 0,
        "ignore_eos": True,
    }
    headers = {"Content-Type": "application/json"}
    url = base_url + "/chat/completions"
    request = urllib.request.Request(url, data=json.dumps(body).encode(), headers=headers)
    with urllib.request.urlopen(request, timeout=600) as reply:
        result: dict[str, Any] = json.loads(reply.read())
    return result


def _measure(base_url: str, concurrency: int, tokens: int, rounds: int) -> dict[str, float]:
    generated = 0
    decode_rates: list[float] = []
    started = time.perf_counter()
    with ThreadPoolExecutor(max_workers=concurrency) as pool:
        for _ in range(rounds):
            prompts = [PROMPTS[i % len(PROMPTS)] for i in range(concurrency)]
            for result in pool.map(lambda p: _complete(base_url, p, tokens), prompts):
                generated += int(result["usage"]["completion_tokens"])
                decode_rates.append(float(result.get("timings", {}).get("predicted_per_second", 0.0)))
    wall = time.perf_counter() - started
    return {
        "requests": concurrency * rounds,
        "generated_tokens": generated,
        "wall_s": round(wall, 3),
        "tokens_per_s": round(generated / wall, 1),
        "llama_decode_tokens_per_s_per_stream": round(statistics.fmean(decode_rates), 1),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--parallel", type=int, default=4)
    parser.add_argument("--tokens", type=int, default=128)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args(argv)

    options = LlamaServerOptions(ensure_model(), threads=args.threads, parallel=args.parallel, ctx_size=8192)
    with tempfile.TemporaryDirectory(prefix="rewardgym-bench-") as folder:
        server = EmbeddedLlama(options, log_path=Path(folder) / "llama.log")
        started = time.perf_counter()
        server.start()
        startup = time.perf_counter() - started
        try:
            _complete(server.base_url, "Hi", 8)  # warm-up
            single = _measure(server.base_url, 1, args.tokens, args.rounds)
            parallel = _measure(server.base_url, args.parallel, args.tokens, args.rounds)
        finally:
            server.stop()
    report = {
        "threads": args.threads,
        "slots": args.parallel,
        "tokens_per_request": args.tokens,
        "startup_s": round(startup, 2),
        "single_stream": single,
        "parallel": parallel,
    }
    json.dump(report, sys.stdout, indent=2)
    sys.stdout.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
