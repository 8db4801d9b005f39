"""``gym eval compare`` on real files: rollouts with materialized inputs (made by the real materializer),
profiles written by ``gym eval profile``, three runs, matching by field, and bad input (unmatched tasks,
missing files, a missing task-key field) — one ``Error:`` line naming the file, non-zero exit, no output."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import orjson
import pytest

from tests.compare.helpers import task_rows, write_run
from tests.profile.helpers import cli

TASKS = 20
# Per task of run A and run B: passes out of 8 repeats.
A_PASSES = [0, 8, 1, 4, 2] + [3] * 15
B_PASSES = [8, 0, 8, 4, 3] + [3] * 15


def _outcomes(passes: list[int]) -> list[list[int]]:
    return [[1] * s + [0] * (8 - s) for s in passes]


@pytest.fixture
def runs(tmp_path: Path) -> tuple[Path, Path]:
    rows = task_rows(TASKS, uuid=True)
    a = write_run(tmp_path / "ckpt_a", "rollouts", rows, _outcomes(A_PASSES), seed=True)
    # B: the same tasks in reverse order (other task indices), collected without per-repeat seeds.
    reverse = list(range(TASKS - 1, -1, -1))
    b = write_run(tmp_path / "ckpt_b", "rollouts", rows, _outcomes(B_PASSES), seed=False, order=reverse)
    return a, b


def _doc(path: Path) -> Any:
    return orjson.loads(path.read_bytes())


def test_two_rollouts_runs(tmp_path: Path, runs: tuple[Path, Path]) -> None:
    a, b = runs
    run = cli("eval", "compare", str(a), str(b), "-o", str(tmp_path / "compare.json"))
    assert run.returncode == 0, run.stderr
    assert "ckpt_b/rollouts vs ckpt_a/rollouts" in run.stdout  # equal stems: labelled by folder
    assert "Matched 20 tasks by content (0 unmatched" in run.stdout
    doc = _doc(tmp_path / "compare.json")
    assert (tmp_path / "compare.html").read_bytes().startswith(b"<!DOCTYPE html>")
    c = doc["comparisons"][0]
    assert c["transitions"] == {
        "newly_solved": 1, "newly_failed": 1, "improved": 1, "regressed": 0, "unchanged": 17,
    }  # fmt: skip
    assert c["observed"] == {"up": 3, "down": 1, "same": 16}
    assert c["overall"]["diff"] == pytest.approx((sum(B_PASSES) - sum(A_PASSES)) / 8 / TASKS)
    assert c["overall"]["verdict"] == "no detectable change"  # 1 of 20 tasks up by 8/8 is not enough
    mdd = 100 * c["overall"]["minimum_detectable_difference"]
    assert (
        f"no change larger than ±{mdd:.1f} pp (a true difference of ±{mdd:.1f} pp is found with 80 % power)"
        in run.stdout
    )
    assert c["band_matrix"]["counts"][0][6] == 1 and c["band_matrix"]["counts"][6][0] == 1
    per_task = doc["per_task"]
    assert per_task["runs"][0]["task"] == list(range(TASKS))  # in A's task order
    assert per_task["runs"][1]["task"] == [TASKS - 1 - t for t in range(TASKS)]  # B's own indices
    assert per_task["runs"][0]["passes"] == A_PASSES and per_task["runs"][1]["passes"] == B_PASSES
    assert per_task["shown"][0] == "question 0?"
    assert per_task["comparisons"][0]["transition"][:3] == [0, 1, 2]
    assert per_task["comparisons"][0]["p_b_better"][0] > 0.99


def test_profiles_give_the_same_comparison(tmp_path: Path, runs: tuple[Path, Path]) -> None:
    profiles = []
    for rollouts in runs:
        inputs = rollouts.with_name("rollouts_materialized_inputs.jsonl")
        assert cli("eval", "profile", "--inputs", str(inputs), "--rollouts", str(rollouts)).returncode == 0
        profiles.append(rollouts.with_name("rollouts_reward_profiling.jsonl"))
    out = tmp_path / "from_profiles.json"
    run = cli("eval", "compare", str(profiles[0]), str(runs[1]), "-o", str(out), "--no-html",
              "--label", "A", "--label", "B")  # fmt: skip
    assert run.returncode == 0, run.stderr
    assert not out.with_suffix(".html").exists()
    reference = tmp_path / "from_rollouts.json"
    assert cli("eval", "compare", str(runs[0]), str(runs[1]), "-o", str(reference)).returncode == 0
    mixed, plain = _doc(out), _doc(reference)
    assert [r["kind"] for r in mixed["runs"]] == ["profile", "rollouts"]
    assert mixed["comparisons"][0]["overall"] == plain["comparisons"][0]["overall"]
    assert mixed["per_task"]["runs"] == plain["per_task"]["runs"]


def test_three_runs_against_the_baseline_or_the_previous(tmp_path: Path, runs: tuple[Path, Path]) -> None:
    a, b = runs
    c = write_run(tmp_path / "ckpt_c", "rollouts", task_rows(TASKS, uuid=True), _outcomes([8] * TASKS))
    out = tmp_path / "three.json"
    run = cli("eval", "compare", str(a), str(b), str(c), "--label", "A", "--label", "B", "--label", "C",
              "-o", str(out), "--no-html")  # fmt: skip
    assert run.returncode == 0, run.stderr
    doc = _doc(out)
    assert [(x["a"], x["b"]) for x in doc["comparisons"]] == [("A", "B"), ("A", "C")]
    assert doc["comparisons"][1]["overall"]["verdict"] == "improved"
    assert len(doc["per_task"]["comparisons"]) == 2
    assert "C vs A: improved" in run.stdout
    run = cli("eval", "compare", str(a), str(b), str(c), "--against", "previous", "-o", str(out), "--no-html")
    assert run.returncode == 0, run.stderr
    assert [(x["a_run"], x["b_run"]) for x in _doc(out)["comparisons"]] == [(0, 1), (1, 2)]


def test_task_key_and_ignore_key(tmp_path: Path) -> None:
    rows = task_rows(TASKS, uuid=True)
    a = write_run(tmp_path / "a", "a", rows, _outcomes(A_PASSES))
    changed = copy.deepcopy(rows)
    for row in changed:
        row["responses_create_params"]["temperature"] = 0.7
    b = write_run(tmp_path / "b", "b", changed, _outcomes(B_PASSES))
    out = tmp_path / "c.json"
    by_content = cli("eval", "compare", str(a), str(b), "-o", str(out))
    assert by_content.returncode == 1 and not out.exists()
    assert "tasks do not match across the runs" in by_content.stderr
    # The message names the differing field, its two values and the exact flag that leaves it out.
    assert "differ in responses_create_params.temperature (absent vs 0.7)" in by_content.stderr
    assert "add --ignore-key responses_create_params.temperature;" in by_content.stderr
    for flags in (["--task-key", "uuid"], ["--ignore-key", "responses_create_params.temperature"]):
        run = cli("eval", "compare", str(a), str(b), "-o", str(out), "--no-html", *flags)
        assert run.returncode == 0, run.stderr
        assert _doc(out)["comparisons"][0]["transitions"]["newly_solved"] == 1
    assert _doc(out)["matching"]["by"] == "content"
    cli("eval", "compare", str(a), str(b), "-o", str(out), "--no-html", "--task-key", "uuid")
    assert _doc(out)["matching"]["by"] == "field uuid"
    assert _doc(out)["per_task"]["shown"][:2] == ["id-0", "id-1"]


def test_unmatched_tasks_are_an_error_unless_allowed(tmp_path: Path) -> None:
    rows = task_rows(TASKS)
    a = write_run(tmp_path / "a", "a", rows, _outcomes(A_PASSES))
    b = write_run(tmp_path / "b", "b", rows[:18], _outcomes(B_PASSES[:18]))
    out = tmp_path / "c.json"
    out.write_bytes(b'{"earlier": true}\n')
    run = cli("eval", "compare", str(a), str(b), "-o", str(out))
    assert run.returncode == 1
    assert run.stderr.startswith("Error: tasks do not match across the runs")
    assert f"'{a}' (a): 2 of 20 tasks" in run.stderr and "question 18?" in run.stderr
    assert run.stderr.count("\n") == 1
    assert "differ in" not in run.stderr  # missing tasks, not a differing field: the general advice
    assert out.read_bytes() == b'{"earlier": true}\n' and not out.with_suffix(".html").exists()
    run = cli("eval", "compare", str(a), str(b), "-o", str(out), "--allow-unmatched")
    assert run.returncode == 0, run.stderr
    doc = _doc(out)
    assert doc["matching"]["matched_tasks"] == 18 and doc["runs"][0]["unmatched_tasks"] == 2
    assert [e["task"] for e in doc["runs"][0]["unmatched_examples"]] == [18, 19]
    assert "a: 2 unmatched" in run.stdout


def test_bad_input_names_the_file_and_writes_nothing(tmp_path: Path, runs: tuple[Path, Path]) -> None:
    a, b = runs
    out = tmp_path / "c.json"

    def refused(*args: str, code: int = 1) -> str:
        run = cli("eval", "compare", *args, "-o", str(out))
        assert run.returncode == code, (args, run.stdout, run.stderr)
        assert run.stderr.startswith("Error: ") and "Traceback" not in run.stderr
        assert not out.exists() and not out.with_suffix(".html").exists()
        assert not [p for p in tmp_path.rglob("*") if ".rgtmp-" in p.name]
        return run.stderr

    missing = tmp_path / "nowhere.jsonl"
    assert f"Rollouts file not found: '{missing}'" in refused(str(a), str(missing))
    assert "Profile not found" in refused(str(a), str(tmp_path / "x_reward_profiling.jsonl"))
    lonely = tmp_path / "lonely.jsonl"
    lonely.write_bytes(b.read_bytes())
    stderr = refused(str(a), str(lonely))
    assert "no materialized inputs beside" in stderr and "lonely_materialized_inputs.jsonl" in stderr
    stderr = refused(str(a), str(b), "--task-key", "nope")
    assert "rollouts_materialized_inputs.jsonl:1: the row has no field 'nope' (--task-key)" in stderr
    broken = tmp_path / "ckpt_b" / "rollouts.jsonl"
    broken.write_bytes(broken.read_bytes() + b"{not json\n")
    assert f"{broken}:161: malformed JSON" in refused(str(a), str(broken))


def test_bad_flags_exit_2(tmp_path: Path, runs: tuple[Path, Path]) -> None:
    a, b = runs
    for args, message in (
        ([str(a)], "at least two runs"),
        ([str(a), str(b), "--against", "sideways"], "--against"),
        ([str(a), str(b), "--inputs", str(a)], "--inputs given 1 times for 2 rollouts run(s)"),
        ([str(a), str(b), "--label", "x"], "--label given 1 times for 2 runs"),
        ([str(a), str(b), "--fdr", "0"], "--fdr"),
        ([str(a), str(b), "-o", str(a)], "--output"),
    ):
        run = cli("eval", "compare", *args)
        assert run.returncode == 2, (args, run.stderr)
        assert message in run.stderr, run.stderr


def test_inputs_given_explicitly(tmp_path: Path, runs: tuple[Path, Path]) -> None:
    a, b = runs
    moved = tmp_path / "a_inputs.jsonl"
    a.with_name("rollouts_materialized_inputs.jsonl").rename(moved)
    out = tmp_path / "c.json"
    other = b.with_name("rollouts_materialized_inputs.jsonl")
    run = cli("eval", "compare", str(a), str(b), "--inputs", str(moved), "--inputs", str(other),
              "-o", str(out), "--no-html")  # fmt: skip
    assert run.returncode == 0, run.stderr
    assert _doc(out)["runs"][0]["inputs"] == str(moved)
    assert _doc(out)["comparisons"][0]["transitions"]["newly_failed"] == 1


def test_the_outputs_go_beside_the_first_run_by_default(runs: tuple[Path, Path]) -> None:
    a, b = runs
    run = cli("eval", "compare", str(a), str(b))
    assert run.returncode == 0, run.stderr
    assert f"Wrote {a.parent / 'compare.json'}" in run.stdout
    assert (a.parent / "compare.json").is_file() and (a.parent / "compare.html").is_file()
    assert not (b.parent / "compare.json").exists()
