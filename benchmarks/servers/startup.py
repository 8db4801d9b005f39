"""Benchmark: ``gym env start`` → "All N servers ready" for resources server + agent + model server.

The model server is the ``openai_model`` pass-through in front of the stub upstream
(``tests/stubs/openai_stub.py``, started first, not timed). The resources server is the test-only exact-match
environment. Each run launches ``gym env start`` as a real process and measures wall time from launch to the
"All 3 servers ready" line and the CPU time the supervisor and its children used until then (a number
that depends much less on what else runs on the shared machine), then stops it with SIGTERM (graceful
stop time is reported too).

Usage: ``.venv/bin/python benchmarks/servers/startup.py [--runs 5]`` from the repository root.
Target: ≤ 3 s on the project machine (2 cores). NeMo Gym 0.7.0: 82 s.
"""

from __future__ import annotations

import argparse
import os
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
GYM = [sys.executable, "-m", "rewardgym"]
# The tree this benchmark lives in (its src/ first), so that a copy of the repository measures its own code.
ENV = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO / "src"), str(REPO)])}

CONFIG = """\
policy_model:
  responses_api_models:
    openai_model:
      openai_base_url: ${policy_base_url}
      openai_api_key: ${policy_api_key}
      openai_model: ${policy_model_name}
bench:
  resources_servers:
    tests.stubs.environments:ExactMatchServer: {}
bench_simple_agent:
  responses_api_agents:
    simple_agent:
      resources_server: {type: resources_servers, name: bench}
      model_server: {type: responses_api_models, name: policy_model}
"""


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def wait_http(port: int, deadline_s: float = 15.0) -> None:
    deadline = time.monotonic() + deadline_s
    while time.monotonic() < deadline:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                return
        except OSError:
            time.sleep(0.02)
    raise RuntimeError(f"stub on port {port} did not start")


def cpu_until_now(pid: int) -> float:
    """CPU seconds (user + system) used so far by ``pid`` and all its live descendants."""
    import psutil

    root = psutil.Process(pid)
    total = 0.0
    for proc in [root, *root.children(recursive=True)]:
        try:
            times = proc.cpu_times()
        except psutil.NoSuchProcess:
            continue
        total += times.user + times.system
    return total


def one_run(config: Path, stub_port: int, logs: Path) -> tuple[float, float, float]:
    head = free_port()
    args = [
        *GYM, "env", "start", "--config", str(config), "--model-url", f"http://127.0.0.1:{stub_port}/v1",
        "--model", "stub-model", "--model-api-key", "bench-key", "--log-dir", str(logs),
        f"++head_server.port={head}",
    ]  # fmt: skip
    started = time.perf_counter()
    proc = subprocess.Popen(
        args, cwd=REPO, env=ENV, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    )
    assert proc.stdout is not None
    ready = None
    output = []
    for line in proc.stdout:
        output.append(line)
        if line.startswith("All ") and "servers ready" in line:
            ready = time.perf_counter() - started
            cpu = cpu_until_now(proc.pid)
            break
    if ready is None:
        proc.wait()
        raise RuntimeError("gym env start failed:\n" + "".join(output))
    stop_started = time.perf_counter()
    proc.send_signal(signal.SIGTERM)
    proc.communicate(timeout=30)
    return ready, cpu, time.perf_counter() - stop_started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        config = Path(tmp) / "bench.yaml"
        config.write_text(CONFIG)
        stub_port = free_port()
        stub = subprocess.Popen(
            [sys.executable, "-m", "tests.stubs.openai_stub", "--port", str(stub_port), "--no-record"],
            cwd=REPO,
            env=ENV,
        )
        try:
            wait_http(stub_port)
            results = [one_run(config, stub_port, Path(tmp) / "logs") for _ in range(args.runs)]
        finally:
            stub.terminate()
            stub.wait()
    ready = [r for r, _, _ in results]
    cpus = [c for _, c, _ in results]
    stops = [s for _, _, s in results]
    print(f"gym env start → all 3 servers ready, {len(ready)} runs (load avg {os.getloadavg()[0]:.2f}):")
    print("  runs:   " + ", ".join(f"{r:.2f}s" for r in ready))
    summary = f"min {min(ready):.2f}s  median {statistics.median(ready):.2f}s  max {max(ready):.2f}s"
    print(f"  {summary}  (target ≤ 3 s)")
    cpu_summary = f"min {min(cpus):.2f}s  median {statistics.median(cpus):.2f}s"
    print(f"  CPU used until ready (supervisor + children): {cpu_summary}")
    print(f"  graceful stop: median {statistics.median(stops):.2f}s")


if __name__ == "__main__":
    main()
