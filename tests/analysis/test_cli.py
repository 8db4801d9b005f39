"""``gym eval analyze`` on the command line: the files, the printed summary and bad input."""

from __future__ import annotations

from pathlib import Path

import orjson

from tests.analysis.helpers import inputs_for, rollout, write
from tests.profile.helpers import cli


def _run_files(tmp_path: Path) -> tuple[Path, Path]:
    rewards = {0: [1, 1, 1, 1], 1: [0, 0, 0, 0], 2: [1, 0, 1, 0]}
    rows = [
        rollout(t, r, reward=float(v), out_tokens=40 + 10 * r)
        for t, vs in rewards.items()
        for r, v in enumerate(vs)
    ]
    inputs = write(tmp_path / "run_materialized_inputs.jsonl", inputs_for(3, 4))
    return inputs, write(tmp_path / "run.jsonl", rows[::-1])


def test_analyze_writes_every_file_and_prints_the_summary(tmp_path: Path) -> None:
    inputs, rollouts = _run_files(tmp_path)
    run = cli("eval", "analyze", "--inputs", str(inputs), "--rollouts", str(rollouts), "--no-report")
    assert run.returncode == 0, run.stderr
    assert (
        "Tasks by pass rate (3 tasks; settled: ≥ 95 % posterior in the band): "
        "0 % 1 (0 settled), (40–60 %] 1 (0 settled), 100 % 1 (0 settled)" in run.stdout
    )
    assert "GRPO: informative groups at G=8:" in run.stdout
    assert "Truncation: 0.0 % of rollouts cut off" in run.stdout and "Health: healthy" in run.stdout
    doc = orjson.loads((tmp_path / "run_analysis.json").read_bytes())
    assert doc["run"]["materialized_rollouts"] == 12 and doc["run"]["tasks"] == 3
    assert doc["per_task"]["passes"] == [4, 0, 2]
    assert doc["per_rollout"]["_ng_task_index"] == [0] * 4 + [1] * 4 + [2] * 4
    assert doc["per_rollout"]["_ng_rollout_index"] == [0, 1, 2, 3] * 3
    assert [g["group_size"] for g in doc["grpo"]["groups"]] == [2, 4, 8, 16, 32, 64]
    assert doc["grpo"]["tasks_kept"] == {"all": 3, "drop_settled_0_100": 3, "drop_observed_0_100": 1}
    assert (tmp_path / "run_rollout_verdicts.jsonl").exists() and (
        tmp_path / "run_quality_summary.json"
    ).exists()


def test_threshold_and_group_flags(tmp_path: Path) -> None:
    _, rollouts = _run_files(tmp_path)
    run = cli("eval", "analyze", "--rollouts", str(rollouts), "--no-report", "--pass-threshold", "0.5",
              "--group-sizes", "2,3", "--group-size", "3", "--target-share", "0.2")  # fmt: skip
    assert run.returncode == 0, run.stderr
    doc = orjson.loads((tmp_path / "run_analysis.json").read_bytes())
    assert doc["settings"]["pass_threshold"] == 0.5 and doc["grpo"]["default_group_size"] == 3
    assert [g["group_size"] for g in doc["grpo"]["groups"]] == [2, 3]
    assert "smallest G reaching 20 %" in run.stdout


def test_bad_line_is_one_error_and_nothing_is_written(tmp_path: Path) -> None:
    inputs, rollouts = _run_files(tmp_path)
    rollouts.write_bytes(rollouts.read_bytes() + b'{"_ng_task_index": 1}\n')
    run = cli("eval", "analyze", "--inputs", str(inputs), "--rollouts", str(rollouts))
    assert run.returncode == 1
    assert run.stderr.strip() == f"Error: {rollouts}:13: missing '_ng_rollout_index'"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["run.jsonl", "run_materialized_inputs.jsonl"]


def test_bad_flags_exit_2(tmp_path: Path) -> None:
    _, rollouts = _run_files(tmp_path)
    for flags in (["--reward-range", "1"], ["--target-share", "2"], ["--group-sizes", "1,2"]):
        run = cli("eval", "analyze", "--rollouts", str(rollouts), *flags)
        assert run.returncode == 2 and run.stderr.startswith("Error: "), flags


def test_missing_rollouts_file(tmp_path: Path) -> None:
    run = cli("eval", "analyze", "--rollouts", str(tmp_path / "nope.jsonl"))
    assert run.returncode == 1 and "Input file not found" in run.stderr


def test_profile_report_adds_files_and_keeps_profile_outputs_identical(tmp_path: Path) -> None:
    inputs, rollouts = _run_files(tmp_path)
    plain = cli("eval", "profile", "--inputs", str(inputs), "--rollouts", str(rollouts))
    assert plain.returncode == 0, plain.stderr
    names = ("run_reward_profiling.jsonl", "run_agent_metrics.json", "run_repeat_level_metrics.json")
    before = {name: (tmp_path / name).read_bytes() for name in names}
    run = cli("eval", "profile", "--inputs", str(inputs), "--rollouts", str(rollouts), "--report")
    assert run.returncode == 0, run.stderr
    assert {name: (tmp_path / name).read_bytes() for name in names} == before
    assert run.stdout.startswith(plain.stdout.split("Profiled ")[0])
    assert "GRPO: informative groups at G=8" in run.stdout and "Health: healthy" in run.stdout
    for name in (
        "run_analysis.json",
        "run_rollout_verdicts.jsonl",
        "run_quality_summary.json",
        "run_report.html",
    ):
        assert (tmp_path / name).exists(), name
    html = (tmp_path / "run_report.html").read_text()
    assert "<h3>a</h3>" in html and "<td>reward</td>" in html  # the profile's agent metrics of agent "a"
    assert "<h3>Repeat level</h3>" in html


def test_run_file_is_shown_with_secrets_masked(tmp_path: Path) -> None:
    inputs, rollouts = _run_files(tmp_path)
    secret = "sk-abcdefghijklmnop1234"
    run_file = {"version": 1, "settings": {"model": {"policy_api_key": secret, "temperature": 0.7}}}
    (tmp_path / "run_run.json").write_bytes(orjson.dumps(run_file))
    run = cli("eval", "analyze", "--inputs", str(inputs), "--rollouts", str(rollouts))
    assert run.returncode == 0, run.stderr
    doc = orjson.loads((tmp_path / "run_analysis.json").read_bytes())
    assert doc["run"]["run_file"]["settings"]["model"] == {"policy_api_key": "***", "temperature": 0.7}
    for name in ("run_analysis.json", "run_report.html", "run_quality_summary.json"):
        assert secret not in (tmp_path / name).read_text(), name
    assert "run settings (_run.json)" in (tmp_path / "run_report.html").read_text()


def test_profile_report_on_bad_input_writes_nothing(tmp_path: Path) -> None:
    inputs, rollouts = _run_files(tmp_path)
    rollouts.write_bytes(rollouts.read_bytes() + b"{broken\n")
    run = cli("eval", "profile", "--inputs", str(inputs), "--rollouts", str(rollouts), "--report")
    assert run.returncode == 1
    assert run.stderr.startswith(f"Error: {rollouts}:13") and run.stderr.count("\n") == 1
    assert sorted(p.name for p in tmp_path.iterdir()) == ["run.jsonl", "run_materialized_inputs.jsonl"]


def test_profile_report_on_an_index_beyond_64_bits_is_the_profile_error(tmp_path: Path) -> None:
    """The analysis' record of the row fails to pack such an index: it must give way to the profile's own
    one-line error for the line, not a traceback."""
    inputs, rollouts = _run_files(tmp_path)
    rollouts.write_bytes(rollouts.read_bytes() + orjson.dumps(rollout(2**63, 0)) + b"\n")
    run = cli("eval", "profile", "--inputs", str(inputs), "--rollouts", str(rollouts), "--report")
    assert run.returncode == 1
    assert (
        run.stderr == f"Error: {rollouts}:13: '_ng_task_index' is out of the 64-bit integer range: {2**63}\n"
    )
    assert sorted(p.name for p in tmp_path.iterdir()) == ["run.jsonl", "run_materialized_inputs.jsonl"]
