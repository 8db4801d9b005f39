"""Collection throughput and CPU per rollout through the real stack against an instant stub upstream.

Starts the stub upstream (`tests.stubs.openai_stub`, its own process), `gym env start` with mcqa +
simple_agent + openai_model → stub, then `gym eval run --no-serve` over N rollouts at concurrency C, and
reports rollouts/s, CPU milliseconds per rollout for each of our processes (collector, agent, environment,
model server; the stub is reported separately and not counted as ours), and the collector's peak RSS.

    .venv/bin/python benchmarks/collect/throughput.py --rollouts 20000 --concurrency 256
    .venv/bin/python benchmarks/collect/throughput.py --rollouts 200000 --concurrency 256 --rss-only
    .venv/bin/python benchmarks/collect/throughput.py --rollouts 5000 --concurrency 64 --observability
    .venv/bin/python benchmarks/collect/throughput.py --rollouts 20000 --concurrency 256 --colocate
    .venv/bin/python benchmarks/collect/throughput.py --rollouts 20000 --concurrency 256 --colocate --serve
    .venv/bin/python benchmarks/collect/throughput.py --rollouts 20000 --colocate --serve \
        --baseline /tmp/base --rounds 7     # A/B against a checkout of another commit, runs alternated
    .venv/bin/python benchmarks/collect/throughput.py --rollouts 20000 --colocate --serve \
        --baseline /tmp/base --rounds 5 --together   # each pair at the same time: the same VM phase

``--colocate`` starts the stack with ``++colocate=true`` (agent, environment and model server in one process,
calling each other without a socket; :mod:`rewardgym.launch.colocate`). ``--serve`` runs one serving
``gym eval run`` instead (it starts the servers itself — with ``--colocate`` inside its own process; any
child process's CPU, sampled every 50 ms, is counted with the collector's).

``--observability`` runs the stack and the collector with NeMo Gym's trajectory capture on
(``++observability_enabled=true ++model_call_capture_dir=<tmp>/calls``) and also reports the capture's size.

Targets (issue): >= 1,000 rollouts/s; CPU per rollout summed over our processes <= 8x the stub's CPU per
request in the same run (the ratio, not the milliseconds: this VM's speed drifts); collector peak RSS flat
from 20k to 200k rows. On a shared machine repeat the runs (>= 3, alternated with the code compared against)
and take the median ratio. ``hop_floor.py`` measures the CPU floor of one hop (docs/collect.md, Performance).
"""

from __future__ import annotations

import argparse
import atexit
import contextlib
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson
import psutil

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "src/rewardgym/environments/mcqa/data/example.jsonl"


SOURCES = {"src": ROOT / "src"}
"""The ``src`` folder whose ``rewardgym`` the servers and the collector run (``--src``; this checkout's by
default). The stub upstream always comes from this checkout's ``tests``."""


def python_path() -> str:
    return f"{SOURCES['src']}{os.pathsep}{ROOT}"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def wait_http(url: str, timeout: float = 60.0) -> None:
    import urllib.request

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            urllib.request.urlopen(url, timeout=1).read()
            return
        except OSError:
            time.sleep(0.1)
    raise SystemExit(f"{url} did not answer")


def cpu_seconds(proc: psutil.Process) -> float:
    times = proc.cpu_times()
    return float(times.user + times.system)


@dataclass
class Stack:
    """The stub upstream and ``gym env start`` (mcqa + simple_agent + openai_model → stub), both running."""

    stub: subprocess.Popen[bytes]
    stub_port: int
    servers: subprocess.Popen[str]
    head_port: int
    records: list[dict[str, Any]]
    """The head server's ``/server_instances`` (name, pid, host, port … of each server)."""
    env: dict[str, str]


def capture_overrides(work: Path, on: bool) -> list[str]:
    """The overrides that turn trajectory capture on (into ``work/calls``), or none."""
    return ["++observability_enabled=true", f"++model_call_capture_dir={work / 'calls'}"] if on else []


def start_stub(work: Path, env: dict[str, str]) -> tuple[subprocess.Popen[bytes], int]:
    """The stub upstream (its own process) and ``work/stack.yaml``: a model server in front of it."""
    stub_port = free_port()
    stub = subprocess.Popen(
        [sys.executable, "-m", "tests.stubs.openai_stub", "--port", str(stub_port), "--no-record"],
        env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    wait_http(f"http://127.0.0.1:{stub_port}/v1/models")
    (work / "stack.yaml").write_text(
        "policy_model:\n  responses_api_models:\n    openai_model:\n"
        f"      openai_base_url: http://127.0.0.1:{stub_port}/v1\n      openai_api_key: bench\n"
        "      openai_model: stub\n"
    )
    return stub, stub_port


def start_stack(work: Path, capture: list[str] | None = None) -> Stack:
    """Start the stub and the servers (config and logs under ``work``; ``capture``: the overrides of
    :func:`capture_overrides`); returns once they are ready."""
    env = {**os.environ, "PYTHONPATH": python_path()}
    stub, stub_port = start_stub(work, env)
    head_port = free_port()
    servers = subprocess.Popen(
        [sys.executable, "-m", "rewardgym", "env", "start", "--config", str(work / "stack.yaml"),
         "--resources-server", "mcqa", f"++head_server.port={head_port}", "--log-dir", str(work / "logs"),
         *(capture or [])],
        env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
    )  # fmt: skip
    assert servers.stdout is not None
    for line in servers.stdout:
        if "servers ready" in line:
            break
    else:
        raise SystemExit("gym env start failed")
    records = orjson.loads(urllib.request.urlopen(f"http://127.0.0.1:{head_port}/server_instances").read())
    return Stack(stub, stub_port, servers, head_port, records, env)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rollouts", type=int, default=20000)
    parser.add_argument("--concurrency", type=int, default=256)
    parser.add_argument("--rss-only", action="store_true", help="only report the collector's peak RSS")
    parser.add_argument("--observability", action="store_true", help="with trajectory capture on")
    parser.add_argument(
        "--colocate", action="store_true", help="serve the stack from one process (++colocate=true)"
    )
    parser.add_argument(
        "--serve", action="store_true",
        help="one serving `gym eval run` (it starts the servers) instead of gym env start + --no-serve",
    )  # fmt: skip
    parser.add_argument(
        "--py-spy", type=Path, default=None, metavar="DIR",
        help="also sample every process with py-spy (collapsed stacks in DIR/<name>.txt)",
    )  # fmt: skip
    parser.add_argument(
        "--src", type=Path, default=None, metavar="DIR",
        help="run the rewardgym of DIR/src (another checkout, e.g. a `git worktree` of an older commit)",
    )  # fmt: skip
    parser.add_argument(
        "--baseline", type=Path, default=None, metavar="DIR",
        help="A/B: alternate runs of this checkout and of DIR (a checkout) and print both medians",
    )  # fmt: skip
    parser.add_argument("--rounds", type=int, default=3, help="with --baseline: runs of each (default 3)")
    parser.add_argument(
        "--together", action="store_true",
        help="with --baseline: start each pair's two runs at the same time (each with its own stub), so both "
        "see the same VM phase; also prints ours(this) / ours(baseline) per pair",
    )  # fmt: skip
    parser.add_argument("--keep", action="store_true", help="keep the work folder (inputs, outputs, logs)")
    args = parser.parse_args()
    if args.baseline is not None:
        compare(args.baseline, args.rounds, together=args.together)
        return
    if args.src is not None:
        SOURCES["src"] = args.src.resolve() / "src"

    work = Path(tempfile.mkdtemp(prefix="rg-bench-"))
    if args.keep:
        print(f"work folder (kept): {work}")
    else:  # a run's inputs, materialized rows and rollouts are ≈ 5 kB per rollout: 100 MB at 20,000
        atexit.register(shutil.rmtree, work, True)
    rows = [orjson.loads(line) for line in EXAMPLE.read_bytes().splitlines()]
    # Distinct tasks (each line unique) so the materialized file really has N rows of N/1 tasks.
    with open(work / "in.jsonl", "wb") as handle:
        for i in range(args.rollouts):
            row = dict(rows[i % len(rows)])
            row["uuid"] = f"bench-{i}"
            handle.write(orjson.dumps(row) + b"\n")
    overrides = [
        *capture_overrides(work, args.observability),
        *(["++colocate=true"] if args.colocate else []),
    ]
    names: dict[str, psutil.Process] = {}
    servers: subprocess.Popen[str] | None = None
    if args.serve:  # the collector starts the servers: they are its descendants, counted with it
        env = {**os.environ, "PYTHONPATH": python_path()}
        stub, _ = start_stub(work, env)
        where = ["--config", str(work / "stack.yaml"), "--resources-server", "mcqa", "--log-dir",
                 str(work / "logs")]  # fmt: skip
    else:
        stack = start_stack(work, overrides)
        stub, servers, env = stack.stub, stack.servers, stack.env
        names["supervisor"] = psutil.Process(servers.pid)
        by_pid: dict[int, list[str]] = {}
        for record in stack.records:  # colocated servers share one process: count it once
            by_pid.setdefault(record["pid"], []).append(record["name"])
        names.update({" + ".join(group): psutil.Process(pid) for pid, group in by_pid.items()})
        where = ["--no-serve", "--head-url", f"http://127.0.0.1:{stack.head_port}"]
    before = {name: cpu_seconds(proc) for name, proc in names.items()}
    stub_before = cpu_seconds(psutil.Process(stub.pid))

    start = time.monotonic()
    collector = subprocess.Popen(
        [sys.executable, "-m", "rewardgym", "eval", "run", *where, "--input", str(work / "in.jsonl"),
         "--output", str(work / "out" / "rollouts.jsonl"), "--agent", "mcqa_simple_agent", "--concurrency",
         str(args.concurrency), "--disable-aggregation", "--no-health-check", *overrides],
        env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
    )  # fmt: skip
    proc = psutil.Process(collector.pid)
    spies: list[subprocess.Popen[bytes]] = []
    if args.py_spy is not None:
        args.py_spy.mkdir(parents=True, exist_ok=True)
        targets = {"collector": collector.pid, **{n: p.pid for n, p in names.items() if n != "supervisor"}}
        spy = str(Path(sys.executable).parent / "py-spy")
        for name, pid in targets.items():
            command = [spy, "record", "--pid", str(pid), "--format", "raw", "--rate", "200"]
            command += ["--output", str(args.py_spy / f"{name}.txt")]
            spies.append(subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
    peak = {"rss": 0}
    samples: list[tuple[float, int]] = []

    def sample() -> None:
        while collector.poll() is None:
            try:
                rss = proc.memory_info().rss
            except psutil.Error:
                break
            peak["rss"] = max(peak["rss"], rss)
            samples.append((time.monotonic() - start, rss))
            time.sleep(0.25)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    collector_cpu = 0.0
    descendants: dict[int, float] = {}  # a serving run's server processes and fork server: last CPU seen
    while collector.poll() is None:
        try:
            collector_cpu = cpu_seconds(proc)
            for child in proc.children(recursive=True) if args.serve else ():
                with contextlib.suppress(psutil.Error):
                    descendants[child.pid] = cpu_seconds(child)
        except psutil.Error:
            break
        time.sleep(0.05)
    wall = time.monotonic() - start
    sampler.join()
    for spy in spies:
        spy.send_signal(signal.SIGINT)  # py-spy writes its output on SIGINT
        spy.wait(timeout=60)
    if collector.returncode != 0:
        raise SystemExit(f"collector failed: {collector.stderr.read() if collector.stderr else ''}")
    done = (work / "out" / "rollouts.jsonl").read_bytes().count(b"\n")
    after = {name: cpu_seconds(p) for name, p in names.items()}
    stub_cpu = cpu_seconds(psutil.Process(stub.pid)) - stub_before
    if servers is not None:
        servers.terminate()
        servers.wait(timeout=30)
    stub.terminate()

    print(f"rollouts: {done} / {args.rollouts}, concurrency {args.concurrency}, wall {wall:.2f} s")
    print(f"collector peak RSS: {peak['rss'] / 2**20:.1f} MiB")
    print(
        "RSS samples (s, MiB): "
        + ", ".join(f"{t:.0f}:{r / 2**20:.0f}" for t, r in samples[:: max(1, len(samples) // 12)])
    )
    if args.rss_only:
        return
    print(f"throughput: {done / wall:.0f} rollouts/s")
    total = collector_cpu
    print(f"  collector: {1000 * collector_cpu / done:.3f} ms CPU/rollout")
    if args.serve:
        served = sum(descendants.values())
        total += served
        print(f"  its {len(descendants)} child processes: {1000 * served / done:.3f} ms CPU/rollout")
    for name in names:
        used = after[name] - before[name]
        total += used
        print(f"  {name}: {1000 * used / done:.3f} ms CPU/rollout")
    print(
        f"ours total: {1000 * total / done:.3f} ms CPU/rollout (stub upstream: {1000 * stub_cpu / done:.3f})"
    )
    if args.observability:
        files = list((work / "calls").glob("*.capture.jsonl"))
        size = sum(f.stat().st_size for f in files)
        rows = (work / "out" / "rollouts.jsonl").stat().st_size
        each = size / max(1, len(files))
        print(f"capture: {len(files)} files, {each:.0f} B each; rollouts {rows / done:.0f} B/row")
    print(f"load average: {os.getloadavg()}")


def compare(baseline: Path, rounds: int, *, together: bool = False) -> None:
    """Alternate one run of the baseline checkout and one of this one (``together``: start both at once),
    ``rounds`` times, with the other arguments as given; print each run's ratio (ours ÷ the stub's CPU per
    request) and both medians."""
    import statistics

    passed = [a for i, a in enumerate(sys.argv[1:]) if not _is_ab_argument(sys.argv[1:], i)]
    ratios: dict[str, list[float]] = {"baseline": [], "this": []}
    ours_ratios: list[float] = []
    sides = (("baseline", baseline.resolve()), ("this", ROOT))
    for _ in range(rounds):
        runs = {name: [sys.executable, __file__, *passed, "--src", str(src)] for name, src in sides}
        if together:
            started = {
                name: subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True) for name, cmd in runs.items()
            }
            outputs = {name: proc.communicate()[0] for name, proc in started.items()}
            if any(proc.returncode for proc in started.values()):
                raise SystemExit(f"a run failed:\n{outputs}")
        else:
            outputs = {}
            for name, cmd in runs.items():
                outputs[name] = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout
        found = {name: _result(name, out) for name, out in outputs.items()}
        for name, (ours, stub) in found.items():
            ratios[name].append(ours / stub)
            print(f"{name:8s} ours {ours:.3f} ms, stub {stub:.3f} ms: {ours / stub:.2f} x", flush=True)
        ours_ratios.append(found["this"][0] / found["baseline"][0])
        if together:
            print(f"         ours(this) / ours(baseline): {ours_ratios[-1]:.3f}", flush=True)
    for name, values in ratios.items():
        print(f"{name}: median {statistics.median(values):.2f} x over {len(values)} runs")
    if together:
        print(f"ours(this) / ours(baseline): median {statistics.median(ours_ratios):.3f} over {rounds} pairs")


def _result(name: str, out: str) -> tuple[float, float]:
    """Ours and the stub's CPU ms per rollout from one run's output."""
    import re

    found = re.search(r"ours total: ([\d.]+) ms CPU/rollout \(stub upstream: ([\d.]+)\)", out)
    if found is None:
        raise SystemExit(f"no result in the {name} run:\n{out}")
    return float(found.group(1)), float(found.group(2))


def _is_ab_argument(argv: list[str], index: int) -> bool:
    """Whether ``argv[index]`` is --baseline / --rounds or the value of one (kept from the single runs)."""
    word = argv[index]
    if word.startswith(("--baseline", "--rounds", "--together")):
        return True
    return index > 0 and argv[index - 1] in ("--baseline", "--rounds")


if __name__ == "__main__":
    main()
