"""Live check of every environment on the embedded local model (issue: environment library).

For each environment: `gym eval run` (which starts the embedded SmolLM2-135M model, the environment and its
simple_agent) on its 5 example rows × 2 repeats, then `gym eval profile`; checks that both succeed and the
profile has one row per task, and prints a table (mean reward, failures, wall time).

    .venv/bin/python benchmarks/environments/live_check.py [--only mcqa,xlam_fc] [--out /tmp/live]

Tool environments cap the agent at a few steps (the 135M model tends to call tools again and again).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

import orjson

ROOT = Path(__file__).resolve().parents[2]
ENVS = ROOT / "src/rewardgym/environments"
AGENT = {
    "equivalence_rule": "lc_equivalence_rule_simple_agent",
    "structured_outputs": "structured_outputs_v4_simple_agent",
}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", default="", help="comma-separated environment names")
    parser.add_argument("--out", type=Path, default=Path("/tmp/rewardgym-live"))
    args = parser.parse_args()
    names = sorted(p.name for p in ENVS.iterdir() if (p / "configs").is_dir())
    if args.only:
        names = [n for n in names if n in args.only.split(",")]
    gym = [sys.executable, "-m", "rewardgym"]
    rows = []
    for name in names:
        agent = AGENT.get(name, f"{name}_simple_agent")
        out = args.out / name / "rollouts.jsonl"
        started = time.monotonic()
        run = subprocess.run(
            [*gym, "eval", "run", "--resources-server", name, "--agent", agent,
             "--input", str(ENVS / name / "data" / "example.jsonl"), "--num-repeats", "2",
             "--num-repeats-add-seed", "--max-output-tokens", "96", "--concurrency", "4",
             "--output", str(out), f"++{agent}.responses_api_agents.simple_agent.max_steps=3",
             "++rollout_timeout_s=300", "--disable-aggregation"],
            capture_output=True, text=True, cwd=ROOT, env=os.environ, check=False,
        )  # fmt: skip
        profile = subprocess.run(
            [*gym, "eval", "profile", "--inputs", str(out.with_name("rollouts_materialized_inputs.jsonl")),
             "--rollouts", str(out), "++allow_partial_rollouts=True"],
            capture_output=True, text=True, cwd=ROOT, env=os.environ, check=False,
        )  # fmt: skip
        wall = time.monotonic() - started
        profiled = out.with_name("rollouts_reward_profiling.jsonl")
        tasks = profiled.read_bytes().count(b"\n") if profiled.exists() else 0
        rollouts = [orjson.loads(x) for x in out.read_bytes().splitlines()] if out.exists() else []
        failures = out.with_name("rollouts_failures.jsonl")
        failed = failures.read_bytes().count(b"\n") if failures.exists() else 0
        mean = sum(r["reward"] for r in rollouts) / len(rollouts) if rollouts else float("nan")
        ok = run.returncode == 0 and profile.returncode == 0 and tasks == 5
        rows.append((name, ok, len(rollouts), failed, tasks, mean, wall))
        status = "ok" if ok else "FAILED"
        print(f"{name:32} {status:6} rollouts {len(rollouts):2} failed {failed:2} profile rows {tasks} "
              f"mean reward {mean:.3f} ({wall:.0f} s)", flush=True)  # fmt: skip
        if not ok:
            print((run.stdout + run.stderr)[-2000:], (profile.stdout + profile.stderr)[-1000:], sep="\n")
    print("\n| environment | ok | rollouts | failed | profile rows | mean reward | wall s |")
    print("|---|---|---|---|---|---|---|")
    for name, ok, n, failed, tasks, mean, wall in rows:
        print(f"| {name} | {'yes' if ok else 'NO'} | {n} | {failed} | {tasks} | {mean:.3f} | {wall:.0f} |")
    return 0 if all(r[1] for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
