"""Adaptive repeats vs fixed repeats: rollouts needed to tell informative tasks (0 < p < 1) from the rest.

A policy with a known success probability p per task, drawn from a spread with many tasks never solved
(p = 0), many always solved (p = 1) and a middle. The truth per task is "informative for GRPO" = 0 < p < 1;
a run classifies a task as informative when it saw at least one pass and one fail (fixed repeats and
adaptive repeats alike, so an undecided task counts as what its outcomes show).

1. **Accuracy curve, in process.** Each seed draws the tasks' p and 64 outcomes per task; fixed k repeats
   read the first k, the adaptive run reads as many as the collector's own rule gives it
   (:mod:`rewardgym.stats.adaptive`: the prior fitted per round, the settled test, the allocation with
   its caps) — the same outcomes for both, so the comparison is paired and a difference is not sampling
   noise. Accuracies are averaged over ``--seeds``. For fixed 8 and
   fixed 16 the script finds the cheapest adaptive settings (over a grid of ``--adaptive-max`` and
   ``--adaptive-confidence``) whose accuracy is at least the fixed run's, and prints the saving (also for
   fixed 32); it also prints, for every adaptive setting, the fixed k of the same accuracy, and the
   defaults against fixed 16.
2. **End to end.** One real ``gym eval run --no-serve --adaptive`` against the Bernoulli stub agent
   (:mod:`tests.stubs.bernoulli_agent`, its own process on 127.0.0.1, the task's p in each row), the same
   with ``--num-repeats 16``, and ``gym eval profile`` on the adaptive files: rollouts, accuracy against
   the known p, wall time, and the profiler's exit code.

Usage::

    .venv/bin/python benchmarks/adaptive/run_benchmark.py [--tasks 2000] [--seeds 5] [--e2e-tasks 300]

Target (issue 13): at least 40 % fewer rollouts than fixed repeats at equal accuracy.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import orjson

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from tests.stubs.bernoulli_agent import reward, start_bernoulli_agent  # noqa: E402

from rewardgym.stats.adaptive import AdaptivePolicy, allocate, fit_prior, unsettled  # noqa: E402


@dataclass(frozen=True)
class Spread:
    name: str
    never: float
    always: float
    a: float
    b: float

    def draw(self, tasks: int, rng: np.random.Generator) -> np.ndarray:
        kind = rng.choice(3, size=tasks, p=[self.never, self.always, 1 - self.never - self.always])
        middle = rng.beta(self.a, self.b, size=tasks)
        return np.where(kind == 0, 0.0, np.where(kind == 1, 1.0, middle))


SPREADS = {
    "balanced": Spread("20 % never, 15 % always, 65 % uniform in between", 0.20, 0.15, 1.0, 1.0),
    "many-pure": Spread("30 % never, 20 % always, 50 % uniform in between", 0.30, 0.20, 1.0, 1.0),
    "hard": Spread("45 % never, 10 % always, 45 % Beta(0.8, 1.6) (skewed to hard)", 0.45, 0.10, 0.8, 1.6),
    "edges": Spread(
        "25 % never, 15 % always, 60 % Beta(0.5, 0.5) (piled near 0 and 1)", 0.25, 0.15, 0.5, 0.5
    ),
}


TARGETS = (8, 16, 32)
DRAWS = 64
"""Outcomes drawn per task: enough for every fixed k and every --adaptive-max of the grid."""


def draw_outcomes(p: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Passes among the first k rollouts of each task, for k = 1..DRAWS (column k - 1)."""
    return np.cumsum(rng.random((p.shape[0], DRAWS)) < p[:, None], axis=1)


def fixed_accuracy(p: np.ndarray, passes: np.ndarray, k: int) -> float:
    """Accuracy of k fixed repeats on the same outcomes the adaptive run sees (paired comparison)."""
    s = passes[:, k - 1]
    return float(np.mean(((s > 0) & (s < k)) == ((p > 0) & (p < 1))))


def simulate(p: np.ndarray, passes: np.ndarray, policy: AdaptivePolicy) -> tuple[float, float, int]:
    """(accuracy, rollouts per task, rounds) of an adaptive run, with the collector's rule, on ``passes``."""
    tasks = p.shape[0]
    allocated = np.full(tasks, policy.initial, dtype=np.int64)
    rounds = 0
    while True:
        s = passes[np.arange(tasks), allocated - 1].astype(np.int64)
        prior = fit_prior(allocated, s) if policy.boundary is None else None
        add = allocate(allocated, unsettled(allocated, s, policy, prior), policy)
        if not add.any():
            break
        allocated = allocated + add
        rounds += 1
    predicted = (s > 0) & (s < allocated)
    return float(np.mean(predicted == ((p > 0) & (p < 1)))), float(allocated.mean()), rounds


def matching_fixed_k(curve: np.ndarray, accuracy: float) -> float:
    """The fixed k (interpolated; curve[i] is the accuracy of k = i + 1) whose accuracy is ``accuracy``."""
    reached = np.nonzero(curve >= accuracy)[0]
    if reached.size == 0:
        return float("inf")
    first = int(reached[0])
    if first == 0:
        return 1.0
    lo, hi = curve[first - 1], curve[first]
    return float(first + (accuracy - lo) / max(hi - lo, 1e-12))


def curve(spread: Spread, tasks: int, seeds: int) -> list[tuple[int, float, float]]:
    """Print the comparison for one spread; returns (fixed k, its accuracy, adaptive saving) per target."""
    print(f"\n== spread: {spread.name}; {tasks} tasks, {seeds} seeds ==")
    runs = []
    for seed in range(seeds):
        rng = np.random.default_rng(1000 + seed)
        p = spread.draw(tasks, rng)
        runs.append((p, draw_outcomes(p, rng)))
    fixed_curve = np.mean(
        [[fixed_accuracy(p, passes, k) for k in range(1, DRAWS + 1)] for p, passes in runs], axis=0
    )
    fixed = {k: float(fixed_curve[k - 1]) for k in TARGETS}
    print("fixed repeats:  " + "  ".join(f"k={k}: {acc:.4f}" for k, acc in fixed.items()))
    grid = [
        AdaptivePolicy(initial=i, step=step, max_per_task=m, confidence=c)
        for i, step in ((2, 1), (2, 2), (4, 4))
        for m in (8, 12, 16, 20, 24, 32, 48)
        for c in (0.95, 0.99)
    ]
    results = []
    for policy in grid:
        outcomes = [simulate(p, passes, policy) for p, passes in runs]
        acc = float(np.mean([r[0] for r in outcomes]))
        cost = float(np.mean([r[1] for r in outcomes]))
        k_equal = matching_fixed_k(fixed_curve, acc)
        results.append((policy, acc, cost, max(r[2] for r in outcomes), k_equal))
    print(
        " initial step  max  conf  accuracy  rollouts/task  rounds  fixed k of equal accuracy  fewer rollouts"
    )
    for policy, acc, cost, rounds, k_equal in results:
        print(
            f"{policy.initial:>8} {policy.round_step:>4} {policy.max_per_task:>4}  {policy.confidence:.2f}  "
            f"{acc:.4f}  "
            f"{cost:>13.2f}  {rounds:>6}  {k_equal:>25.1f}  {1 - cost / k_equal:>14.1%}"
        )
    savings = []
    for k in TARGETS:
        ok = [r for r in results if r[1] >= fixed[k]]
        if not ok:
            print(f"fixed {k:>2}: accuracy {fixed[k]:.4f}; no adaptive setting of the grid reaches it")
            continue
        policy, acc, cost, rounds, _ = min(ok, key=lambda r: r[2])
        savings.append((k, fixed[k], 1 - cost / k))
        print(
            f"fixed {k:>2}: accuracy {fixed[k]:.4f} with {k} rollouts/task; adaptive --adaptive-initial "
            f"{policy.initial} --adaptive-step {policy.round_step} --adaptive-max {policy.max_per_task} "
            "--adaptive-confidence "
            f"{policy.confidence}: {acc:.4f} with {cost:.2f} rollouts/task in {rounds} rounds, "
            f"{1 - cost / k:.1%} fewer"
        )
    defaults = AdaptivePolicy()

    def shape(policy: AdaptivePolicy) -> tuple[object, ...]:
        return (policy.initial, policy.round_step, policy.max_per_task, policy.confidence)

    default = next(r for r in results if shape(r[0]) == shape(defaults))
    print(
        f"defaults (--adaptive alone: initial {default[0].initial}, step {default[0].round_step}, max 16, "
        "confidence 0.95): accuracy "
        f"{default[1]:.4f} (fixed 16: {fixed[16]:.4f}) with {default[2]:.2f} rollouts/task, "
        f"{1 - default[2] / 16:.1%} fewer than fixed 16; fixed repeats need {default[4]:.1f} per task "
        f"for that accuracy ({1 - default[2] / default[4]:.1%} fewer)"
    )
    return savings


def _gym(args: list[str], cwd: Path) -> tuple[int, str, float]:
    started = time.perf_counter()
    proc = subprocess.run(
        [sys.executable, "-m", "rewardgym", *args], cwd=cwd, capture_output=True, text=True, check=False
    )
    return proc.returncode, proc.stdout + proc.stderr, time.perf_counter() - started


def end_to_end(spread: Spread, tasks: int) -> None:
    print(f"\n== end to end: gym eval run --adaptive against the Bernoulli stub agent, {tasks} tasks ==")
    p = spread.draw(tasks, np.random.default_rng(7))
    truth = (p > 0) & (p < 1)
    with (
        tempfile.TemporaryDirectory(prefix="adaptive-bench-") as folder,
        start_bernoulli_agent("--delay-ms", "2") as agent,
    ):
        work = Path(folder)
        rows = [
            {"responses_create_params": {"input": f"task {i}"}, "p": float(x), "agent_ref": {"name": "agent"}}
            for i, x in enumerate(p)
        ]
        (work / "tasks.jsonl").write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in rows))
        base = ["eval", "run", "--no-serve", "--head-url", agent.url, "--input", "tasks.jsonl",
                "--concurrency", "32", "--no-health-check", "--disable-aggregation"]  # fmt: skip
        for label, extra in (("adaptive", ["--adaptive"]), ("fixed 16", ["--num-repeats", "16"])):
            out = work / label.replace(" ", "") / "rollouts.jsonl"
            code, text, wall = _gym([*base, "-o", str(out), *extra], work)
            if code != 0:
                raise SystemExit(f"{label} run failed ({code}):\n{text}")
            counts: dict[int, list[int]] = {}
            for line in out.read_bytes().splitlines():
                row = orjson.loads(line)
                task, index = row["_ng_task_index"], row["_ng_rollout_index"]
                assert row["reward"] == reward(p[task], task, index)
                counts.setdefault(task, []).append(int(row["reward"] >= 1.0))
            predicted = np.array([0 < sum(counts[t]) < len(counts[t]) for t in range(tasks)])
            total = sum(len(v) for v in counts.values())
            print(
                f"{label:>9}: {total} rollouts ({total / tasks:.2f}/task), accuracy "
                f"{np.mean(predicted == truth):.4f}, wall {wall:.1f} s"
            )
            if label == "adaptive":
                for line in text.splitlines():
                    if line.startswith(("Adaptive", "Materialized inputs", "  What it costs")):
                        print(f"           {line}")
                code, text, wall = _gym(
                    ["eval", "profile", "--inputs", str(out.with_name("rollouts_materialized_inputs.jsonl")),
                     "--rollouts", str(out)], work,
                )  # fmt: skip
                profiled = len(out.with_name("rollouts_reward_profiling.jsonl").read_bytes().splitlines())
                print(f"           gym eval profile: exit {code}, {profiled} per-task rows, {wall:.1f} s")
                for line in text.splitlines():
                    if line.startswith(("Adaptive run", "Mean reward")):
                        print(f"           {line}")
                print(f"           true mean pass rate of these tasks: {p.mean():.4f}")
                if code != 0:
                    raise SystemExit(text)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", type=int, default=2000)
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--spreads", default=",".join(SPREADS))
    parser.add_argument("--e2e-tasks", type=int, default=300, help="0 skips the end-to-end run")
    args = parser.parse_args()
    table = {name: curve(SPREADS[name], args.tasks, args.seeds) for name in args.spreads.split(",")}
    print("\n== rollouts saved at the accuracy of fixed k repeats (target: >= 40 %) ==")
    for name, savings in table.items():
        print(f"{name:>10}: " + "  ".join(f"fixed {k}: {saved:.1%}" for k, _, saved in savings))
    if args.e2e_tasks:
        end_to_end(SPREADS["balanced"], args.e2e_tasks)


if __name__ == "__main__":
    main()
