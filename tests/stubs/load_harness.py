"""Load: N rollouts at concurrency C through the real stack against the instant stub upstream.

:func:`run_load` starts ``python -m tests.stubs.openai_stub`` (its own process, not recording), ``gym env
start`` (mcqa + simple_agent + vllm_model → stub) and ``gym eval run --no-serve``, samples the collector's
RSS and every process's open file descriptors while it runs, then checks the outputs (every key a rollout
with the verifier's reward, no failure), and that every server is still healthy (head ``/health``).

Besides the raw descriptor count, each sample splits a server's descriptors into *live* TCP connections
(every state but ``CLOSE_WAIT``) and descriptors that are not sockets. A connection its peer has closed sits
in ``CLOSE_WAIT`` until the server's event loop gets to it, so on a loaded machine the raw count runs past
any bound that holds on an idle one (1,636 over 1,600 was seen); live connections and non-socket
descriptors are what a pool limit and the absence of a leak bound under any load.
"""

from __future__ import annotations

import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

import psutil

from tests.stubs.processes import (
    GymProcess,
    free_port,
    gym_environ,
    health,
    instances,
    kill_marked,
    new_marker,
    no_marked_processes,
    poll,
    start_env,
    url_answers,
)
from tests.stubs.reliability_stack import Partition, check_partition, env_args, run_args, write_mcqa_rows


@dataclass
class Sample:
    t_s: float
    collector_rss: int
    fds: dict[str, int]
    live_connections: dict[str, int] = field(default_factory=dict)
    other_fds: dict[str, int] = field(default_factory=dict)


@dataclass
class LoadReport:
    rollouts: int
    concurrency: int
    wall_s: float
    code: int
    partition: Partition | None = None
    samples: list[Sample] = field(default_factory=list)
    healthy_after: bool = False
    health: dict[str, object] = field(default_factory=dict)
    output_tail: str = ""
    orphans: int = 0

    def peak_fds(self, name: str) -> int:
        return max((s.fds.get(name, 0) for s in self.samples), default=0)

    def peak_live_connections(self, name: str) -> int:
        return max((s.live_connections.get(name, 0) for s in self.samples), default=0)

    def peak_other_fds(self, name: str) -> int:
        return max((s.other_fds.get(name, 0) for s in self.samples), default=0)

    @property
    def rss_mib(self) -> list[float]:
        return [s.collector_rss / 2**20 for s in self.samples]


def _measure(procs: dict[str, psutil.Process]) -> dict[str, int]:
    fds = {}
    for name, proc in procs.items():
        try:
            fds[name] = proc.num_fds()
        except psutil.Error:
            continue
    return fds


def _split(proc: psutil.Process) -> tuple[int, int]:
    """(TCP connections not in ``CLOSE_WAIT``, descriptors that are not sockets) of ``proc``."""
    live = sum(1 for c in proc.net_connections(kind="inet") if c.status != psutil.CONN_CLOSE_WAIT)
    other = 0
    folder = Path(f"/proc/{proc.pid}/fd")
    for entry in folder.iterdir():
        try:
            other += not entry.readlink().name.startswith("socket:")
        except OSError:  # closed since the listing
            continue
    return live, other


def _measure_servers(procs: dict[str, psutil.Process]) -> tuple[dict[str, int], dict[str, int]]:
    live, other = {}, {}
    for name, proc in procs.items():
        try:
            live[name], other[name] = _split(proc)
        except (psutil.Error, OSError):
            continue
    return live, other


def run_load(work: Path, *, rollouts: int, concurrency: int, sample_every_s: float = 0.5) -> LoadReport:
    marker = new_marker()
    work.mkdir(parents=True, exist_ok=True)
    port = free_port()
    stub = subprocess.Popen(
        [sys.executable, "-m", "tests.stubs.openai_stub", "--port", str(port), "--no-record"],
        env=gym_environ(marker), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    try:
        stub_url = f"http://127.0.0.1:{port}"
        assert poll(lambda: url_answers(f"{stub_url}/v1/models"), 30), "the stub upstream did not start"
        env, head = start_env(env_args(stub_url, work / "logs"), cwd=work, marker=marker)
        try:
            report = _collect(
                work, head, env, rollouts=rollouts, concurrency=concurrency, every=sample_every_s
            )
        finally:
            env.signal(signal.SIGTERM)
            env.finish(60)
        stub.terminate()
        stub.wait(timeout=30)
        report.orphans = len(no_marked_processes(marker))
        return report
    finally:
        if stub.poll() is None:
            stub.kill()
            stub.wait()
        kill_marked(marker)


def _collect(
    work: Path, head: str, env: GymProcess, *, rollouts: int, concurrency: int, every: float
) -> LoadReport:
    write_mcqa_rows(work / "in.jsonl", rollouts)
    servers = {name: psutil.Process(r["pid"]) for name, r in instances(head).items()}
    out = work / "out" / "rollouts.jsonl"
    # Collection alone: the health check after it reads the whole file back (memory that grows with the
    # rollouts, by design) and is measured by benchmarks/analysis, not here.
    args = run_args(
        out,
        input_path=work / "in.jsonl",
        head_url=head,
        concurrency=concurrency,
        extra=("--no-health-check",),
    )
    started = time.monotonic()
    run = GymProcess(args, cwd=work)
    collector = psutil.Process(run.pid)
    report = LoadReport(rollouts=rollouts, concurrency=concurrency, wall_s=0.0, code=-1)
    done = threading.Event()

    def sample() -> None:
        while not done.wait(every):
            try:
                rss = collector.memory_info().rss
            except psutil.Error:
                return
            fds = _measure({"collector": collector, **servers})
            live, other = _measure_servers(servers)
            report.samples.append(Sample(time.monotonic() - started, rss, fds, live, other))

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    report.code = run.finish(timeout=1800)
    report.wall_s = time.monotonic() - started
    done.set()
    sampler.join(timeout=10)
    report.output_tail = run.text[-3000:]
    if report.code == 0:
        report.partition = check_partition(out.parent)
    report.health = health(head)
    report.healthy_after = report.health.get("status") == "ok" and env.running
    return report


def stable_rss(report: LoadReport, warmup_fraction: float = 0.25, slack_mib: float = 16.0) -> bool:
    """Whether the collector's RSS after the warm-up stays within ``slack_mib`` of its post-warm-up start."""
    rss = report.rss_mib
    if len(rss) < 4:
        return True
    steady = rss[int(len(rss) * warmup_fraction) :]
    return max(steady) - steady[0] <= slack_mib
