"""``gym eval profile`` on the command line: options, printed summary and our pass-rate table."""

from __future__ import annotations

from pathlib import Path

from tests.profile.helpers import cli, gym, rows_and_results, write_jsonl


def test_help_lists_the_options() -> None:
    run = gym("eval", "profile", "--help")
    assert run.returncode == 0
    for option in ("--inputs", "--rollouts", "--allow-partial-rollouts"):
        assert option in run.stdout


def test_summary_lines_and_pass_rate_table(tmp_path: Path) -> None:
    rows, results = rows_and_results({0: [1.0, 1.0], 1: [0.0, 0.0], 2: [1.0, 0.0], 3: [0.0, 1.0]})
    inputs = write_jsonl(tmp_path / "run_materialized_inputs.jsonl", rows)
    rollouts = write_jsonl(tmp_path / "run.jsonl", results[::-1])
    run = cli("eval", "profile", "--inputs", str(inputs), "--rollouts", str(rollouts))
    assert run.returncode == 0, run.stderr
    lines = run.stdout.splitlines()
    assert lines[:7] == [
        "Profiling outputs:",
        "Reward profile completion: 8/8 rollout rows (100.00%)",
        "Input rows: 4 total; 4 complete; 0 partial; 0 without rollouts dropped from output.",
        "Masked from quality metrics: 0 rollout rows (kept in completion accounting above).",
        f"Reward profiling outputs: {tmp_path / 'run_reward_profiling.jsonl'}",
        f"Agent-level metrics: {tmp_path / 'run_agent_metrics.json'}",
        f"Repeat-level metrics: {tmp_path / 'run_repeat_level_metrics.json'}",
    ]
    table = "\n".join(lines[7:])
    for band, count in (("0 %", 1), ("(40–60 %]", 2), ("100 %", 1)):
        (line,) = [line for line in lines if line.strip().startswith(band + " ")]
        assert line.split()[-3] == str(count)
    assert "Mean reward: 0.5000 (95 % CI" in table and "t-interval over 4 tasks" in table
    assert "Profiled 8 rollouts in " in table
