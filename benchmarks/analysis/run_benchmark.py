"""Time ``gym eval profile --report`` against ``gym eval profile`` alone on the generated benchmark set.

For the given size (rollouts = tasks × 4) the files come from ``benchmarks/profile/generate.py`` (seeded;
reused when present in ``--workdir``). Each measurement runs the CLI in a fresh interpreter and reports
its wall time and peak memory — the sampled peak of the summed PSS of the process and its forked workers
(every 50 ms), as ``benchmarks/profile/run_benchmark.py`` does — and, for ``--report``, the size of the
HTML page. The two commands alternate ``--repeat`` times so machine load hits both alike.

``--analyze`` also times ``gym eval analyze`` alone (the report generated from the set: its wall time and
peak), ``--open`` the report page in headless Chromium (Debian's ``chromium`` through Playwright, as the
browser tests drive it): seconds from ``goto`` to the task browser's first rows.

Usage::

    python benchmarks/analysis/run_benchmark.py --size 1000000 --workdir /tmp/perf12-bench --repeat 5
    python benchmarks/analysis/run_benchmark.py --size 1000000 --workdir /tmp/perf12-bench --analyze --open

Targets (issue #12): ``profile --report`` ≤ 1.5 × ``profile`` alone, ≤ 1 GiB peak; the report generated
≤ 20 s from the 10^6 set and open ≤ 5 s. The ratio is reported per pair and as the median of the pairs:
the machine's speed drifts, the two commands of one pair run back to back.
"""

from __future__ import annotations

import argparse
import json
import resource
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "profile"))

from generate import generate  # noqa: E402
from run_benchmark import run_sampled  # noqa: E402

REPEATS = 4
_ANALYZE = """
import sys, time
started = time.perf_counter()
from rewardgym.cli.main import main
code = main(["eval", "analyze", "--inputs", sys.argv[1], "--rollouts", sys.argv[2]])
print(f"BENCH {time.perf_counter() - started} {code}", file=sys.stderr)
"""
_RUNNER = """
import sys, time
started = time.perf_counter()
from rewardgym.cli.main import main
code = main(["eval", "profile", "--inputs", sys.argv[1], "--rollouts", sys.argv[2], *sys.argv[3:]])
print(f"BENCH {time.perf_counter() - started} {code}", file=sys.stderr)
"""


def run_cli(inputs: Path, rollouts: Path, extra: list[str]) -> dict[str, float]:
    """One fresh-process run: wall seconds, CPU seconds (user + system of the process and its workers) and
    peak PSS of the process tree (MiB)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    out, err, wall, peak, line = run_sampled(
        [sys.executable, "-c", _RUNNER, str(inputs), str(rollouts), *extra]
    )
    if line.split()[2] != "0":
        raise SystemExit(f"run failed:\n{out}\n{err}")
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return {"wall_s": wall, "cpu_s": cpu, "pss_peak_mib": peak / (1 << 20)}


def open_seconds(page_file: Path) -> float:
    """Seconds from ``goto`` until the report's task browser shows rows, in headless Chromium."""
    import time

    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path="/usr/bin/chromium", args=["--headless", "--no-sandbox", "--disable-gpu"]
        )
        page = browser.new_page(viewport={"width": 1300, "height": 900})
        started = time.perf_counter()
        page.goto(page_file.as_uri())
        page.wait_for_selector("#spacer .row", timeout=60_000)
        seconds = time.perf_counter() - started
        browser.close()
    return seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=1_000_000, help="rollouts (tasks × 4)")
    parser.add_argument("--workdir", type=Path, default=Path("/tmp/profile-bench"))
    parser.add_argument("--repeat", type=int, default=1, help="pairs to time (0: none)")
    parser.add_argument("--json", type=Path, help="also write the results as JSON here")
    parser.add_argument("--analyze", action="store_true", help="also time gym eval analyze alone")
    parser.add_argument("--open", action="store_true", help="also time opening the report in Chromium")
    args = parser.parse_args()
    folder = args.workdir / f"n{args.size}"
    inputs, rollouts = folder / "bench_materialized_inputs.jsonl", folder / "bench.jsonl"
    if not (inputs.exists() and rollouts.exists()):
        generate(folder, args.size // REPEATS, REPEATS, seed=args.size)
    report = folder / "bench_report.html"
    results = []
    for _ in range(args.repeat):
        plain = run_cli(inputs, rollouts, [])
        full = run_cli(inputs, rollouts, ["--report"])
        row = {
            "rollouts": args.size,
            "profile_s": round(plain["wall_s"], 2),
            "profile_cpu_s": round(plain["cpu_s"], 2),
            "profile_pss_mib": round(plain["pss_peak_mib"]),
            "profile_report_s": round(full["wall_s"], 2),
            "profile_report_cpu_s": round(full["cpu_s"], 2),
            "profile_report_pss_mib": round(full["pss_peak_mib"]),
            "ratio": round(full["wall_s"] / plain["wall_s"], 3),
            "report_mb": round(report.stat().st_size / 1e6, 1),
            "analysis_json_mb": round((folder / "bench_analysis.json").stat().st_size / 1e6, 1),
        }
        results.append(row)
        print(
            f"{args.size:,} rollouts: profile {row['profile_s']:.2f} s wall, "
            f"{row['profile_cpu_s']:.2f} s CPU "
            f"({row['profile_pss_mib']} MiB), profile --report {row['profile_report_s']:.2f} s wall, "
            f"{row['profile_report_cpu_s']:.2f} s CPU ({row['profile_report_pss_mib']} MiB), "
            f"ratio {row['ratio']:.2f}; report {row['report_mb']} MB, "
            f"analysis.json {row['analysis_json_mb']} MB",
            flush=True,
        )
    if results:
        ratios = sorted(row["ratio"] for row in results)
        middle = len(ratios) // 2
        median = ratios[middle] if len(ratios) % 2 else (ratios[middle - 1] + ratios[middle]) / 2
        print(f"median ratio {median:.2f} over {len(ratios)} pairs (range {ratios[0]:.2f}–{ratios[-1]:.2f})")
    extra: dict[str, float] = {}
    if args.analyze:
        out, err, wall, peak, line = run_sampled([sys.executable, "-c", _ANALYZE, str(inputs), str(rollouts)])
        if line.split()[2] != "0":
            raise SystemExit(f"analyze failed:\n{out}\n{err}")
        extra.update(analyze_s=round(wall, 2), analyze_pss_mib=round(peak / (1 << 20)))
        print(f"gym eval analyze alone: {wall:.2f} s wall ({extra['analyze_pss_mib']} MiB)", flush=True)
    if args.open:
        if not report.exists():
            raise SystemExit(f"{report} does not exist: run a pair or --analyze first")
        extra["open_s"] = round(open_seconds(report), 2)
        size = report.stat().st_size / 1e6
        print(f"report {size:.1f} MB: first rows {extra['open_s']:.2f} s after goto in headless Chromium")
    if args.json:
        args.json.write_text(json.dumps({"pairs": results, **extra}, indent=2) + "\n")


if __name__ == "__main__":
    main()
