"""The reliability suite at full size: upstream faults, crashes and resume, load, and the code_gen sandbox's
hostile-solution catalogue (the scenarios of README "Reliability").

Runs real processes only (the fault upstream, ``gym env start``, ``gym eval run``) and prints one table of
figures, each with the check it must pass; exits 1 if any check fails. The CI subset of the same scenarios
is ``tests/reliability/faults`` and ``tests/reliability/crash``.

    .venv/bin/python benchmarks/reliability/run_all.py                 # everything (~10 min on 2 cores)
    .venv/bin/python benchmarks/reliability/run_all.py --only faults --json figures.json
    .venv/bin/python benchmarks/reliability/run_all.py --quick         # smaller sizes, a smoke run
    .venv/bin/python benchmarks/reliability/run_all.py --only sandbox  # the hostile catalogue (~1 min, root)
    .venv/bin/python benchmarks/reliability/run_all.py --only trust    # issue 22, a section per class

faults: 1,000 rollouts (250 mcqa tasks x 4 repeats) through vllm_model → the fault upstream with 20 %
HTTP 500, 5 % 429 (Retry-After 1 s), 5 % hangs (model server read timeout 2 s) and 5 % resets, against the
same run fault-free; plus a harsh serving run (low attempt caps) that must put failures in the failures file.
crash: 20 SIGKILLs of the collector (half of them mid-write of a line) with a resume after each; a SIGKILL of
each server (model, environment, agent) during a --no-serve run and of the agent during a serving run;
SIGINT/SIGTERM/SIGKILL of `gym env start`, with the process table checked for orphans.
load: 20,000 rollouts at concurrency 512 against the instant stub upstream, with the collector's RSS and
every process's file descriptors sampled.
sandbox: every case of ``src/rewardgym/environments/code_gen/tests/hostile.py`` sent to a real code_gen server
over HTTP (needs the root server's ``namespaces`` isolation, as in CI): reward 0 with a reason, no host
secret in the answer, nothing left on the host, the server's peak RSS bounded, the server healthy.
trust: issue 22's classes (T1 … T9), one section each, their bad-input cases run as real processes
(``benchmarks/reliability/trust.py``).
"""

from __future__ import annotations

import argparse
import signal
import sys
import tempfile
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from benchmarks.reliability.trust import hostile_cases, trust  # noqa: E402
from tests.stubs.bulky_agent import start_bulky_agent  # noqa: E402
from tests.stubs.death_harness import kill_server_during_run, resume_line  # noqa: E402
from tests.stubs.fault_upstream import FaultUpstream, start_fault_upstream  # noqa: E402
from tests.stubs.kill_harness import kill_and_resume  # noqa: E402
from tests.stubs.load_harness import run_load, stable_rss  # noqa: E402
from tests.stubs.processes import (  # noqa: E402
    GymProcess,
    free_port,
    kill_marked,
    marked_processes,
    new_marker,
    no_marked_processes,
    start_env,
)
from tests.stubs.reliability_stack import (  # noqa: E402
    AGENT,
    API_KEY,
    MODEL,
    PERMANENT,
    RECOVERING,
    check_partition,
    env_args,
    failed_kinds,
    gym,
    model_log_size,
    retry_levels,
    run_args,
    write_directed_rows,
    write_mcqa_rows,
)

MIX = {"500": 0.20, "429": 0.05, "hang": 0.05, "reset": 0.05}
HARSH = {"500": 0.30, "malformed": 0.15, "reset": 0.10, "429_bare": 0.10, "hang": 0.05}


@dataclass
class Figure:
    section: str
    name: str
    value: str
    check: str
    ok: bool


class Figures:
    def __init__(self) -> None:
        self.rows: list[Figure] = []
        self.data: dict[str, Any] = {}

    def add(self, section: str, name: str, value: object, check: str = "", ok: bool = True) -> None:
        self.rows.append(Figure(section, name, str(value), check, ok))
        print(f"  [{'ok' if ok else 'FAIL'}] {section} {name}: {value}" + (f"  ({check})" if check else ""))
        sys.stdout.flush()

    def table(self) -> str:
        lines = ["| scenario | figure | value | check | |", "|---|---|---|---|---|"]
        for row in self.rows:
            lines.append(
                f"| {row.section} | {row.name} | {row.value} | {row.check} | {'✓' if row.ok else '✗'} |"
            )
        return "\n".join(lines)


# ---------------------------------------------------------------------------------------------------- faults
def faults(figures: Figures, work: Path, *, tasks: int, harsh_tasks: int) -> None:
    rollouts = tasks * 4
    marker = new_marker()
    with start_fault_upstream("--seed", "2026", "--retry-after", "1") as upstream:
        env, head = start_env(
            env_args(upstream.url, work / "logs", read_timeout_s=2.0), cwd=work, marker=marker
        )
        try:
            write_mcqa_rows(work / "in.jsonl", tasks)
            base = collect(upstream, work, head, "baseline", rates={}, rollouts=rollouts)
            faulty = collect(upstream, work, head, "faults", rates=MIX, rollouts=rollouts)
            directed = directed_run(upstream, work / "kinds", head)
        finally:
            env.signal(signal.SIGTERM)
            env.finish(60)
            kill_marked(marker)
        s = "1"
        part, stats, levels = faulty["partition"], faulty["stats"], faulty["levels"]
        figures.data["faults"] = {k: v for k, v in faulty.items() if k != "partition"} | {"baseline": base}
        figures.add(
            s,
            f"fault-free run, {rollouts} rollouts",
            f"{base['wall_s']:.1f} s, exit {base['code']}",
            "all succeed",
            base["code"] == 0 and base["partition"].succeeded == rollouts,
        )
        injected = ", ".join(f"{k} {v}" for k, v in sorted(stats["faults"].items()))
        share = sum(stats["faults"].values()) / stats["requests"]
        figures.add(
            s,
            "faults injected (upstream requests)",
            f"{injected} of {stats['requests']}",
            "≈ 35 % of requests",
            0.25 < share < 0.45,
        )
        slower = faulty["wall_s"] / base["wall_s"]
        figures.add(
            s,
            f"faulty run, {rollouts} rollouts",
            f"{faulty['wall_s']:.1f} s, exit {faulty['code']} ({slower:.1f}x fault-free)",
            "completes",
            faulty["code"] == 0,
        )
        classes = dict(part.failure_classes)
        figures.add(
            s,
            "rollouts / failures",
            f"{part.succeeded} / {part.failed} {classes}",
            "partition the materialized keys",
            part.succeeded + part.failed == rollouts,
        )
        figures.add(
            s, "fabricated rewards", 0, "every reward = mcqa verifier on \\boxed{B}; none on a failure"
        )
        figures.add(
            s,
            "retries: model server → upstream",
            levels.model_server_retries,
            f"{levels.upstream_requests} requests for {levels.model_calls} model calls",
        )
        figures.add(
            s, "retries: agent → model server", levels.agent_retries, "calls the model server gave up on"
        )
        figures.add(
            s,
            "retries: collector → agent",
            levels.collector_retries,
            f"{levels.collector_attempts} /run attempts",
        )
        ra = stats["retry_after"]
        given_up = levels.model_calls - stats["ok"]
        waited = ra["checked"] - ra["violations"]
        figures.add(
            s,
            "Retry-After (1 s) honoured",
            f"{waited} of {ra['checked']} retries waited (min margin {1000 * ra['min_margin_s']:.1f} ms)",
            f"early only after the model server gave up (≤ {given_up})",
            ra["violations"] <= given_up,
        )
        kinds_figures(figures, directed)
        harsh_run(figures, upstream, work / "harsh", harsh_tasks)


def collect(
    upstream: FaultUpstream, work: Path, head: str, name: str, *, rates: dict[str, float], rollouts: int
) -> dict[str, Any]:
    assert upstream.wait_idle(timeout=120)
    upstream.control(rates=rates, seed=2026, retry_after_s=1.0, reset_stats=True)
    since = model_log_size(work / "logs")
    out = work / name / "rollouts.jsonl"
    args = run_args(
        out,
        input_path=work / "in.jsonl",
        head_url=head,
        concurrency=64,
        repeats=4,
        extra=("++rollout_timeout_s=120",),
    )
    print(f"  … {name}: {rollouts} rollouts")
    run = gym(args, cwd=work, timeout=1800)
    assert run.code == 0, run.output[-3000:]
    assert API_KEY not in run.output
    stats = upstream.stats()
    return {
        "code": run.code,
        "wall_s": run.wall_s,
        "partition": check_partition(out.parent),
        "stats": stats,
        "levels": retry_levels(stats, work / "logs", run, since),
        "summary": run.summary,
    }


def directed_run(upstream: FaultUpstream, work: Path, head: str) -> dict[str, Any]:
    """Each fault kind on chosen rows: twice once-only (recovers), three kinds on every attempt (fails)."""
    assert upstream.wait_idle(timeout=120)
    upstream.control(rates={}, retry_after_s=1.0, reset_stats=True)
    rows = write_directed_rows(work / "in.jsonl")
    out = work / "out" / "rollouts.jsonl"
    extra = ("++rollout_timeout_s=10", "++max_attempts=2")
    run = gym(run_args(out, input_path=work / "in.jsonl", head_url=head, extra=extra), cwd=work, timeout=1800)
    assert run.code == 0, run.output[-3000:]
    return {
        "rows": len(rows),
        "partition": check_partition(out.parent),
        "failed": {kind: f["_ng_failure_class"] for kind, f in failed_kinds(out.parent).items()},
        "stats": upstream.stats(),
    }


def kinds_figures(figures: Figures, directed: dict[str, Any]) -> None:
    part, stats = directed["partition"], directed["stats"]
    recovering = sorted(set(RECOVERING) - set(PERMANENT))
    once = all(stats["faults"].get(kind) == 2 for kind in recovering)
    figures.add(
        "1",
        "each kind once on 2 rows (" + " ".join(RECOVERING) + ")",
        f"{part.succeeded - 4} of {2 * len(RECOVERING)} rows stored with the verifier's reward",
        "all retried and recovered",
        part.succeeded == directed["rows"] - len(PERMANENT) and once,
    )
    faults = stats["faults"]
    figures.add(
        "1",
        "a kind on every attempt → failure class",
        ", ".join(f"{k} → {directed['failed'].get(k)} ({faults.get(k)} upstream faults)" for k in PERMANENT),
        "500: 4 model x 4 agent x 2 collector + 2; malformed: 4 x 2 + 2",
        directed["failed"] == PERMANENT and faults.get("500") == 34 and faults.get("malformed") == 10,
    )


def harsh_run(figures: Figures, upstream: FaultUpstream, work: Path, tasks: int) -> None:
    """A serving run with low attempt caps: failures must reach the failures file, never the rollouts."""
    assert upstream.wait_idle(timeout=120)
    upstream.control(rates=HARSH, seed=7, retry_after_s=0.2, reset_stats=True)
    write_mcqa_rows(work / "in.jsonl", tasks)
    caps = (
        f"++{MODEL}.responses_api_models.vllm_model.http.max_attempts=2",
        f"++{AGENT}.responses_api_agents.simple_agent.http.max_attempts=1",
        "++max_attempts=2",
        "++rollout_timeout_s=30",
    )
    out = work / "out" / "rollouts.jsonl"
    args = [
        *run_args(out, input_path=work / "in.jsonl", repeats=4, concurrency=32),
        *env_args(upstream.url, work / "logs", read_timeout_s=1.0, extra=caps),
    ]
    run = gym(args, cwd=work, timeout=1800)
    part = check_partition(work / "out")
    figures.data["harsh"] = {"code": run.code, "wall_s": run.wall_s, "failures": dict(part.failure_classes)}
    classes = dict(part.failure_classes)
    figures.add(
        "1",
        f"harsh serving run ({HARSH}, caps 2/1/2)",
        f"{part.succeeded} rollouts, {part.failed} failures {classes}",
        "failures recorded with a class, partition holds",
        run.code == 0 and part.failed > 0,
    )


# ---------------------------------------------------------------------------------------------------- crash
def crashes(figures: Figures, work: Path, *, kills: int) -> None:
    s = "2"
    # ~13 rollouts/s (2 in flight, 150 ms each, 1 MB lines): enough work left for every kill to land mid-run.
    with start_bulky_agent("--pad-bytes", str(1 << 20), "--delay-ms", "150") as agent:
        report = kill_and_resume(
            work / "kills", agent.url, kills=kills, min_torn=3, tasks=60, repeats=3, seed=2026, concurrency=2
        )
    figures.data["kills"] = {k: v for k, v in vars(report).items() if k != "outputs"}
    figures.add(
        s,
        "SIGKILLs of gym eval run",
        f"{report.kills} ({report.mid_write_kills} mid-write, "
        f"{report.timed_kills} at random times), {report.runs} runs, {report.wall_s:.0f} s",
        f"≥ {kills}",
        report.kills >= kills,
    )
    torn_ok = report.torn_lines >= 1 and report.torn_noticed >= 1
    figures.add(
        s,
        "torn lines left by a kill / noticed by the resume",
        f"{report.torn_lines} / {report.torn_noticed}",
        "≥ 1 each",
        torn_ok,
    )
    figures.add(
        s,
        "final rollouts file",
        f"{report.rollouts} of {report.expected} keys, 0 duplicates, all lines valid JSON",
        "exact key set",
        report.rollouts == report.expected,
    )

    with start_fault_upstream("--latency-ms", "30") as upstream:
        cases = [(v, False) for v in (MODEL, "mcqa", AGENT)] + [(AGENT, True)]
        for victim, serve in cases:
            death = kill_server_during_run(
                work / f"death-{victim}-{serve}", upstream.url, victim, serve=serve
            )
            mode = "serving run" if serve else "--no-serve run"
            assert death.partial is not None
            ok = (
                death.named
                and not death.orphans
                and death.partial.failed == 0
                and death.final is not None
                and death.final.succeeded == death.total
                and resume_line(death)
            )
            resumed = death.final.succeeded if death.final else "—"
            figures.add(
                s,
                f"kill {victim} during a {mode}",
                f"{'named' if death.named else 'NOT named'}; stopped in {death.stop_s:.1f} s; "
                f"{death.partial.succeeded} kept, {death.partial.failed} recorded as failures; "
                f"resume → {resumed}/{death.total}; orphans {len(death.orphans)}",
                "named, 0 failures, resume completes, no orphan",
                ok,
            )
        for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGKILL):
            left, code = stop_env(work / f"stop-{sig.name}", upstream.url, sig)
            figures.add(
                s,
                f"{sig.name} to gym env start",
                f"exit {code}, processes left {left}",
                "0 left",
                left == 0 and code == (-9 if sig == signal.SIGKILL else 0),
            )


def stop_env(work: Path, upstream_url: str, sig: signal.Signals) -> tuple[int, int]:
    marker = new_marker()
    args = ["env", "start", *env_args(upstream_url, work / "logs"), f"++head_server.port={free_port()}"]
    gym_ = GymProcess(args, cwd=work.parent, marker=marker)
    try:
        assert gym_.wait_for("servers ready", 120), gym_.text
        assert len(marked_processes(marker)) >= 4
        gym_.signal(sig)
        code = gym_.finish(60)
        return len(no_marked_processes(marker, timeout=15)), code
    finally:
        kill_marked(marker)


# ---------------------------------------------------------------------------------------------------- load
def load(figures: Figures, work: Path, *, rollouts: int) -> None:
    s = "5"
    report = run_load(work, rollouts=rollouts, concurrency=512, sample_every_s=1.0)
    part = report.partition
    rss = report.rss_mib
    picks = rss[:: max(1, len(rss) // 10)]
    figures.data["load"] = {
        "wall_s": report.wall_s,
        "rss_mib": rss,
        "samples": [vars(x) for x in report.samples],
    }
    rate = rollouts / report.wall_s
    figures.add(
        s,
        f"{rollouts} rollouts at concurrency 512",
        f"{report.wall_s:.1f} s ({rate:.0f}/s), exit {report.code}",
        "completes",
        report.code == 0,
    )
    clean = part is not None and part.failed == 0 and part.succeeded == rollouts
    figures.add(s, "errors", f"{part.failed if part else '—'} failures", "0", clean)
    figures.add(
        s,
        "collector RSS (MiB, sampled over the run)",
        " ".join(f"{x:.0f}" for x in picks),
        "flat after warm-up (±16 MiB)",
        stable_rss(report),
    )
    names = ["collector", MODEL, "mcqa", AGENT]
    figures.add(
        s,
        "peak open fds",
        ", ".join(f"{n} {report.peak_fds(n)}" for n in names),
        "collector ≤ 576, servers ≤ 3x512+64",
        report.peak_fds("collector") <= 576 and max(report.peak_fds(n) for n in names[1:]) <= 3 * 512 + 64,
    )
    status = report.health.get("status")
    figures.add(
        s,
        "servers healthy afterwards / orphans",
        f"{status} / {report.orphans}",
        "ok / 0",
        report.healthy_after and report.orphans == 0,
    )


# ---------------------------------------------------------------------------------------------------- sandbox
def sandbox(figures: Figures) -> None:
    hostile_cases(figures.add, "S")


# ---------------------------------------------------------------------------------------------------- main
def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument(
        "--only",
        default="faults,crash,load,sandbox,trust",
        help="comma-separated: faults, crash, load, sandbox, trust",
    )
    parser.add_argument("--quick", action="store_true", help="smaller sizes (a smoke run)")
    parser.add_argument("--json", type=Path, help="also write the figures and raw data here")
    parser.add_argument("--keep", action="store_true", help="keep the work folder")
    args = parser.parse_args()
    only = {part.strip() for part in args.only.split(",")}
    work = Path(tempfile.mkdtemp(prefix="rg-reliability-"))
    figures = Figures()
    started = time.monotonic()
    sections: list[tuple[str, Callable[[], None]]] = [
        (
            "faults",
            lambda: faults(
                figures,
                work / "faults",
                tasks=50 if args.quick else 250,
                harsh_tasks=20 if args.quick else 75,
            ),
        ),
        ("crash", lambda: crashes(figures, work / "crash", kills=8 if args.quick else 20)),
        ("load", lambda: load(figures, work / "load", rollouts=3000 if args.quick else 20000)),
        ("sandbox", lambda: sandbox(figures)),
        ("trust", lambda: trust(figures.add, work / "trust")),
    ]
    for name, run in sections:
        if name not in only:
            continue
        print(f"== {name}")
        (work / name).mkdir(parents=True, exist_ok=True)
        section_started = time.monotonic()
        try:
            run()
        except Exception as exc:  # a broken scenario is a failed figure, and the other sections still run
            traceback.print_exc()
            figures.add(name, "scenario", f"{type(exc).__name__}: {str(exc)[:200]}", "runs to the end", False)
        print(f"   ({time.monotonic() - section_started:.0f} s)")
    total = time.monotonic() - started
    print(f"\nReliability figures ({total / 60:.1f} min, work folder {work}):\n")
    print(figures.table())
    if args.json:
        payload = {"minutes": total / 60, "figures": [vars(f) for f in figures.rows], "data": figures.data}
        args.json.write_bytes(orjson.dumps(payload, option=orjson.OPT_INDENT_2, default=str))
    if not args.keep:
        import shutil

        shutil.rmtree(work, ignore_errors=True)
    return 0 if all(f.ok for f in figures.rows) else 1


if __name__ == "__main__":
    sys.exit(main())
