"""Benchmark: tokens/s of the embedded model through our ``vllm_model`` server versus llama.cpp directly.

One llama.cpp child (:class:`rewardgym.models.embedded.EmbeddedLlama`, 1 thread, ``--parallel`` slots) and
one ``vllm_model`` server in front of it, run as a real server process (``python -m
rewardgym.launch.child``, exactly as ``gym env start`` runs it). The same prompts and ``max_tokens``
(``ignore_eos``, temperature 0) are sent along three paths:

- ``direct``:    ``POST <llama>/v1/chat/completions`` (the baseline);
- ``responses``: ``POST <server>/v1/responses`` (Responses → Chat translation and back; ``ignore_eos`` sent
  through the row's ``metadata.extra_body``, as a rollout would send a seed);
- ``chat``:      ``POST <server>/v1/chat/completions`` (the pass-through).

Each round sends, in single-stream mode, ``--single`` requests per path one after another, the paths
alternating request by request; then, in parallel mode, one wave of ``--parallel`` concurrent requests (one
per slot) per path. The order of the paths rotates from round to round, so that changes in machine load
hit every path alike. Reported per path and mode: generated tokens / wall seconds summed over the rounds,
the median over requests (waves) of tokens/s, and the overhead against ``direct`` for both
(``1 - tps / tps_direct``; target ≤ 10 %). Also reported: the CPU time the server process used per
request it served, the load-independent cost of our layer.

Usage (repository root): ``.venv/bin/python benchmarks/models/server_overhead.py [--rounds 4]
[--tokens 128] [--single 2] [--parallel 4]``. Prints one JSON object.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from collections import defaultdict
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import psutil

from rewardgym.models.embedded import EmbeddedLlama, LlamaServerOptions, ensure_model

PROMPTS = [
    "Write a short story about a lighthouse keeper.",
    "Explain how rainbows form.",
    "Describe a walk through a forest in autumn.",
    "Give advice to someone learning to cook.",
]
PATHS = ("direct", "responses", "chat")


def _post(url: str, body: dict[str, Any]) -> dict[str, Any]:
    request = urllib.request.Request(
        url, data=json.dumps(body).encode(), headers={"Content-Type": "application/json"}
    )
    with urllib.request.urlopen(request, timeout=600) as reply:
        result: dict[str, Any] = json.loads(reply.read())
    return result


def _generate(path: str, urls: dict[str, str], prompt: str, tokens: int) -> int:
    """One request along ``path``; returns the generated token count."""
    messages = [{"role": "user", "content": prompt}]
    chat_body = {"messages": messages, "max_tokens": tokens, "temperature": 0, "ignore_eos": True}
    if path == "direct":
        return int(_post(urls["llama"] + "/chat/completions", chat_body)["usage"]["completion_tokens"])
    if path == "chat":
        return int(_post(urls["server"] + "/v1/chat/completions", chat_body)["usage"]["completion_tokens"])
    body = {
        "input": messages,
        "max_output_tokens": tokens,
        "temperature": 0,
        "metadata": {"extra_body": json.dumps({"ignore_eos": True})},
    }
    return int(_post(urls["server"] + "/v1/responses", body)["usage"]["output_tokens"])


def _run(pool: ThreadPoolExecutor, path: str, urls: dict[str, str], prompts: list[str], tokens: int) -> int:
    return sum(pool.map(lambda p: _generate(path, urls, p, tokens), prompts))


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _start_server(llama_base: str, log_dir: Path) -> tuple[subprocess.Popen[bytes], str]:
    """The ``vllm_model`` server as its own process (spec on stdin, as the supervisor does)."""
    port = _free_port()
    config = {"name": "policy_model", "port": port, "base_url": llama_base, "model": "SmolLM2-135M-Instruct"}
    spec = {
        "name": "policy_model",
        "kind": "responses_api_models",
        "implementation": "vllm_model",
        "config": {**config, "log_dir": str(log_dir)},
        "parent_pid": os.getpid(),
    }
    with open(log_dir / "policy_model.out", "ab") as out:
        proc = subprocess.Popen(
            [sys.executable, "-m", "rewardgym.launch.child"], stdin=subprocess.PIPE, stdout=out, stderr=out
        )
    assert proc.stdin is not None
    proc.stdin.write(json.dumps(spec).encode())
    proc.stdin.close()
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise SystemExit(f"the vllm_model server exited (code {proc.returncode}); see {log_dir}")
        try:
            with urllib.request.urlopen(url + "/", timeout=1):
                return proc, url
        except (urllib.error.URLError, OSError):
            time.sleep(0.05)
    proc.kill()
    raise SystemExit("the vllm_model server did not start within 60 s")


def _summary(samples: list[tuple[int, float]]) -> dict[str, Any]:
    tokens = sum(count for count, _ in samples)
    wall = sum(seconds for _, seconds in samples)
    return {
        "generated_tokens": tokens,
        "wall_s": round(wall, 2),
        "tokens_per_s": tokens / wall,
        "median_tokens_per_s": statistics.median(count / seconds for count, seconds in samples),
    }


def _report(samples: dict[tuple[str, str], list[tuple[int, float]]]) -> dict[str, Any]:
    report: dict[str, Any] = {}
    for mode in ("single_stream", "parallel"):
        entries = {path: _summary(samples[(path, mode)]) for path in PATHS}
        base = entries["direct"]
        for entry in entries.values():
            entry["overhead_pct"] = round(100 * (1 - entry["tokens_per_s"] / base["tokens_per_s"]), 2)
            entry["median_overhead_pct"] = round(
                100 * (1 - entry["median_tokens_per_s"] / base["median_tokens_per_s"]), 2
            )
            entry["tokens_per_s"] = round(entry["tokens_per_s"], 2)
            entry["median_tokens_per_s"] = round(entry["median_tokens_per_s"], 2)
        report[mode] = entries
    return report


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--parallel", type=int, default=4, help="slots, and requests per parallel wave")
    parser.add_argument("--single", type=int, default=2, help="sequential requests per round and path")
    parser.add_argument("--tokens", type=int, default=128)
    parser.add_argument("--rounds", type=int, default=4)
    args = parser.parse_args(argv)

    options = LlamaServerOptions(
        ensure_model(),
        threads=args.threads,
        parallel=args.parallel,
        ctx_size=8192,
        alias="SmolLM2-135M-Instruct",
    )
    samples: dict[tuple[str, str], list[tuple[int, float]]] = defaultdict(list)
    with tempfile.TemporaryDirectory(prefix="rewardgym-bench-") as folder:
        logs = Path(folder)
        llama = EmbeddedLlama(options, log_path=logs / "llama.log")
        llama.start()
        server, server_url = _start_server(llama.base_url, logs)
        urls = {"llama": llama.base_url, "server": server_url}
        wave = [PROMPTS[i % len(PROMPTS)] for i in range(args.parallel)]
        try:
            with ThreadPoolExecutor(max_workers=args.parallel) as pool:
                for path in PATHS:  # warm-up (connections, prompt cache)
                    _generate(path, urls, "Hi", 4)
                cpu_before = psutil.Process(server.pid).cpu_times()
                for round_no in range(args.rounds):
                    shift = round_no % len(PATHS)
                    order = PATHS[shift:] + PATHS[:shift]
                    # Paths alternate request by request (then wave by wave) so load changes hit all alike.
                    for i in range(args.single):
                        for path in order:
                            started = time.perf_counter()
                            count = _generate(path, urls, PROMPTS[(round_no + i) % len(PROMPTS)], args.tokens)
                            samples[(path, "single_stream")].append((count, time.perf_counter() - started))
                    for path in order:
                        started = time.perf_counter()
                        count = _run(pool, path, urls, wave, args.tokens)
                        samples[(path, "parallel")].append((count, time.perf_counter() - started))
                    print(f"round {round_no + 1}/{args.rounds} done", file=sys.stderr, flush=True)
                cpu_after = psutil.Process(server.pid).cpu_times()
        finally:
            server.terminate()
            server.wait(timeout=30)
            llama.stop()
    report = {
        "threads": args.threads,
        "slots": args.parallel,
        "tokens_per_request": args.tokens,
        "rounds": args.rounds,
        "single_requests_per_round": args.single,
        "load_average_at_end": [round(x, 2) for x in os.getloadavg()],
        # CPU time our server process spent, per request it served: what it can take from llama.cpp.
        "server_cpu_ms_per_request": round(
            1000
            * (cpu_after.user + cpu_after.system - cpu_before.user - cpu_before.system)
            / (args.rounds * 2 * (args.single + args.parallel)),
            2,
        ),
        **_report(samples),
    }
    json.dump(report, sys.stdout, indent=2)
    sys.stdout.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
