"""``gym data select`` on real runs (materialized by the collector's code, profiled and analyzed through
the CLI): filters, quotas, stratification, orders, annotation, merging across profiles, the manifest and
``--check``, and that the dataset is valid input to ``gym eval run``."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path
from typing import Any

import orjson
import pytest

from rewardgym.collect.materialize import MaterializeOptions, iter_materialized
from tests.dataset.run import CUT_OFF, IDENTICAL, PASSES, build_deep_run, build_run, materialized, task_row
from tests.profile.helpers import cli, gym


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("runs")
    build_run(folder / "main")
    build_deep_run(folder / "deep")
    return folder


def _rows(path: Path) -> list[dict[str, Any]]:
    return [orjson.loads(line) for line in path.read_bytes().splitlines()]


def _select(runs: Path, out: Path, *args: str, sources: tuple[str, ...] = ("main",)) -> list[dict[str, Any]]:
    done = cli("data", "select", *(str(runs / s) for s in sources), "--output", str(out), *args)
    assert done.returncode == 0, done.stderr
    return _rows(out)


def _questions(rows: list[dict[str, Any]]) -> list[int]:
    return [int(r["responses_create_params"]["input"][0]["content"].split()[1]) for r in rows]


def test_rows_are_the_original_rows_and_rematerialize_exactly(runs: Path, tmp_path: Path) -> None:
    """No _ng_* key and no collector seed: the collector materializes the dataset into the very rows the
    run was collected with (same seeds, same key order)."""
    out = tmp_path / "all.jsonl"
    rows = _select(runs, out)
    assert _questions(rows) == list(range(len(PASSES)))
    assert rows[3] == {**task_row(3), "agent_ref": {"name": "a"}}
    assert all(not any(k.startswith("_ng_") for k in r) for r in rows)
    again = list(iter_materialized(out, MaterializeOptions(num_repeats=8, add_seed=True)))
    original = materialized(runs / "main" / "run_materialized_inputs.jsonl")
    assert [orjson.dumps(r) for r in again] == [orjson.dumps(r) for r in original]


def test_pass_rate_range_bands_and_flags(runs: Path, tmp_path: Path) -> None:
    rows = _select(runs, tmp_path / "a.jsonl", "--min-pass-rate", "0.25", "--max-pass-rate", "0.75")
    assert _questions(rows) == [t for t, p in enumerate(PASSES) if 2 <= p <= 6]
    rows = _select(runs, tmp_path / "b.jsonl", "--band", "0", "--band", "(80–100 %)", "--band", "100")
    assert _questions(rows) == [0, 1, 9, 10, 11]
    rows = _select(runs, tmp_path / "c.jsonl", "--drop-flagged")
    assert _questions(rows) == [t for t in range(len(PASSES)) if t not in (CUT_OFF, IDENTICAL)]
    manifest = orjson.loads((tmp_path / "c.manifest.json").read_bytes())
    assert manifest["counts"]["dropped_by_reason"] == {"flagged": 2}
    assert manifest["counts"]["kept_with_flags"] == 0
    done = cli("data", "select", str(runs / "main"), "-o", str(tmp_path / "d.jsonl"))
    assert "Note: 2 kept tasks have task-level health flags (--drop-flagged drops them)" in done.stdout
    assert manifest["counts"]["per_band"]["0 %"] == {"kept": 1, "dropped": 1}


def test_drop_unhealthy_rollouts_drops_tasks_the_task_flags_keep(runs: Path, tmp_path: Path) -> None:
    summary = orjson.loads((runs / "main" / "run_quality_summary.json").read_bytes())
    sick = sorted(int(k) for k, v in summary["tasks"].items() if v["unhealthy"] > 0)
    flagged = sorted(int(k) for k, v in summary["tasks"].items() if v["flags"])
    assert set(sick) - set(flagged), "the fixture needs a task with unhealthy rollouts but no task flag"
    done = cli("data", "select", str(runs / "main"), "-o", str(tmp_path / "k.jsonl"), "--drop-flagged")
    assert f"Note: {len(set(sick) - set(flagged))} kept tasks have unhealthy rollouts" in done.stdout
    assert "(--drop-unhealthy-rollouts drops them)" in done.stdout
    rows = _select(runs, tmp_path / "u.jsonl", "--drop-flagged", "--drop-unhealthy-rollouts")
    assert _questions(rows) == [t for t in range(len(PASSES)) if t not in set(sick) | set(flagged)]
    manifest = orjson.loads((tmp_path / "u.manifest.json").read_bytes())
    assert manifest["counts"]["dropped_by_reason"] == {
        "flagged": len(flagged), "unhealthy_rollouts": len(set(sick) - set(flagged)),
    }  # fmt: skip
    assert manifest["counts"]["kept_with_unhealthy_rollouts"] == 0


def test_settled_only_and_pooling_across_profiles(runs: Path, tmp_path: Path) -> None:
    out = tmp_path / "s.jsonl"
    rows = _select(runs, out, "--settled-only", "--annotate", "measured", sources=("main", "deep"))
    # task 5 (74 of 158 pooled) is near the edge of (40–60 %]: not settled under every plausible prior
    assert _questions(rows) == [100, 101]
    assert [r["measured"]["band"] for r in rows] == ["(40–60 %]", "0 %"]
    assert all(r["measured"]["settled"] for r in rows)
    manifest = orjson.loads((tmp_path / "s.manifest.json").read_bytes())
    assert manifest["counts"]["merged_duplicates"] == 1  # task 5 is in both profiles
    assert manifest["counts"]["tasks"] == len(PASSES) + 2
    pooled = _select(runs, tmp_path / "p.jsonl", "--annotate", "m", sources=("main", "deep"))
    five = next(r for r in pooled if _questions([r]) == [5])
    assert (five["m"]["passes"], five["m"]["repeats"]) == (4 + 70, 8 + 150)
    assert five["m"]["pass_rate"] == pytest.approx(74 / 158)
    assert five["m"]["low"] < five["m"]["pass_rate"] < five["m"]["high"]
    refused = cli("data", "select", str(runs / "main"), str(runs / "deep"), "-o", str(tmp_path / "r.jsonl"),
                  "--duplicates", "refuse")  # fmt: skip
    assert refused.returncode == 1
    assert "deep_reward_profiling.jsonl:3: the same task as" in refused.stderr
    assert "run_reward_profiling.jsonl:6" in refused.stderr
    assert not (tmp_path / "r.jsonl").exists()


def test_quota_and_stratification(runs: Path, tmp_path: Path) -> None:
    rows = _select(runs, tmp_path / "q.jsonl", "--by", "domain", "--quota", "2", "--order", "hardest-first")
    by_domain: dict[str, list[int]] = {}
    for row, t in zip(rows, _questions(rows), strict=True):
        by_domain.setdefault(row["domain"], []).append(t)
    # hardest two of each domain: math 0,3,6,9 / geo 1,4,7,10 / code 2,5,8,11
    assert by_domain == {"math": [0, 3], "geo": [1, 4], "code": [2, 5]}
    rows = _select(
        runs, tmp_path / "st.jsonl", "--stratify", "domain", "--limit", "7", sources=("main", "deep")
    )
    counts: dict[str, int] = {}
    for row in rows:
        counts[row["domain"]] = counts.get(row["domain"], 0) + 1
    # 13 tasks: math 4, geo 4, code 4 (task 5 pooled), logic 2 -> 7 * share, largest remainders
    assert sorted(counts.values()) == [1, 2, 2, 2] and sum(counts.values()) == 7
    manifest = orjson.loads((tmp_path / "st.manifest.json").read_bytes())
    assert manifest["counts"]["per_domain"]["field"] == "domain"
    assert {k: v["kept"] for k, v in manifest["counts"]["per_domain"]["values"].items()} == counts


def test_orders_and_curriculum(runs: Path, tmp_path: Path) -> None:
    rows = _select(runs, tmp_path / "h.jsonl", "--order", "hardest-first", "--annotate", "m")
    rates = [r["m"]["pass_rate"] for r in rows]
    assert rates == sorted(rates)
    rows = _select(runs, tmp_path / "c.jsonl", "--schedule", "curriculum", "--stages", "3", "--annotate", "m")
    assert [r["m"]["stage"] for r in rows] == [1] * 4 + [2] * 4 + [3] * 4
    stage_rates = [[r["m"]["pass_rate"] for r in rows if r["m"]["stage"] == s] for s in (1, 2, 3)]
    assert min(stage_rates[0]) >= max(stage_rates[1]) and min(stage_rates[1]) >= max(stage_rates[2])


def test_same_inputs_and_args_give_byte_identical_output(runs: Path, tmp_path: Path) -> None:
    args = ("--schedule", "gaussian", "--stages", "3", "--seed", "7", "--annotate", "m")
    first, second, other = tmp_path / "1.jsonl", tmp_path / "2.jsonl", tmp_path / "3.jsonl"
    _select(runs, first, *args)
    _select(runs, second, *args)
    assert first.read_bytes() == second.read_bytes()
    _select(runs, other, *args[:4], "--seed", "8", "--annotate", "m")
    assert other.read_bytes() != first.read_bytes()


def test_manifest_records_enough_to_rebuild_and_check_passes(runs: Path, tmp_path: Path) -> None:
    out = tmp_path / "train.jsonl"
    _select(runs, out, "--max-pass-rate", "0.9", "--drop-flagged", "--seed", "3", "--order", "random")
    manifest = orjson.loads((tmp_path / "train.manifest.json").read_bytes())
    assert manifest["output"]["sha256"] == hashlib.sha256(out.read_bytes()).hexdigest()
    assert manifest["output"]["rows"] == len(_rows(out))
    profile = runs / "main" / "run_reward_profiling.jsonl"
    health = runs / "main" / "run_quality_summary.json"
    assert [(i["role"], i["path"], i["sha256"]) for i in manifest["inputs"]] == [
        ("profile", os.path.relpath(profile, tmp_path), hashlib.sha256(profile.read_bytes()).hexdigest()),
        ("health", os.path.relpath(health, tmp_path), hashlib.sha256(health.read_bytes()).hexdigest()),
    ]
    assert manifest["seed"] == 3 and manifest["settings"]["order"] == "random"
    assert manifest["rewardgym_version"] and manifest["created"].endswith("Z")
    assert "--drop-flagged" in manifest["command"] and "--seed 3" in manifest["command"]
    done = cli("data", "select", "--check", str(tmp_path / "train.manifest.json"))
    assert done.returncode == 0, done.stderr
    assert "rebuilt byte-identical" in done.stdout


def test_check_fails_on_a_changed_input_or_dataset(runs: Path, tmp_path: Path) -> None:
    run = tmp_path / "run"
    build_run(run)
    out = tmp_path / "train.jsonl"
    assert cli("data", "select", str(run), "-o", str(out)).returncode == 0
    manifest = tmp_path / "train.manifest.json"
    original = out.read_bytes()
    out.write_bytes(original.replace(b"question 3", b"question 33"))
    done = cli("data", "select", "--check", str(manifest))
    assert done.returncode == 1
    assert f"dataset '{out}' differs from its manifest" in done.stderr
    out.write_bytes(original)
    profile = run / "run_reward_profiling.jsonl"
    lines = profile.read_bytes().splitlines(keepends=True)
    profile.write_bytes(b"".join(lines[:-1]))  # a task removed from the profile
    done = cli("data", "select", "--check", str(manifest))
    assert done.returncode == 1
    assert f"input profile '{profile}' changed since the dataset was built" in done.stderr
    assert "does not match its manifest" in done.stderr


def test_check_detects_a_different_rebuild(runs: Path, tmp_path: Path) -> None:
    out = tmp_path / "train.jsonl"
    _select(runs, out, "--limit", "5", "--order", "random")
    path = tmp_path / "train.manifest.json"
    manifest = orjson.loads(path.read_bytes())
    manifest["settings"]["seed"] = 99  # the recorded settings no longer give this dataset
    path.write_bytes(orjson.dumps(manifest))
    done = cli("data", "select", "--check", str(path))
    assert done.returncode == 1
    assert "rebuilding from the recorded inputs and settings gives a different dataset" in done.stderr


def test_bad_input_names_file_and_line_and_writes_nothing(runs: Path, tmp_path: Path) -> None:
    bad = tmp_path / "bad_reward_profiling.jsonl"
    lines = (runs / "main" / "run_reward_profiling.jsonl").read_bytes().splitlines(keepends=True)
    bad.write_bytes(b"".join(lines[:2]) + b'{"_ng_task_index": 2, "sample": \n' + b"".join(lines[3:]))
    out = tmp_path / "out.jsonl"
    done = cli("data", "select", str(bad), "-o", str(out))
    assert done.returncode == 1
    assert done.stderr.startswith(f"Error: {bad}:3: malformed JSON")
    assert not out.exists() and not (tmp_path / "out.manifest.json").exists()
    bad.write_bytes(b"".join(lines[:4]) + b'{"_ng_task_index": 4, "rollout_infos": []}\n')
    done = cli("data", "select", str(bad), "-o", str(out))
    assert done.returncode == 1 and f"{bad}:5: profile row has no 'sample' object" in done.stderr
    assert list(tmp_path.iterdir()) == [bad]


def test_outputs_are_guarded(runs: Path, tmp_path: Path) -> None:
    profile = runs / "main" / "run_reward_profiling.jsonl"
    before = profile.read_bytes()
    done = cli("data", "select", str(profile), "-o", str(profile))
    assert done.returncode == 2 and "it is the profile file" in done.stderr
    link = tmp_path / "link.jsonl"
    os.link(runs / "main" / "run_quality_summary.json", tmp_path / "hard.json")
    done = cli(
        "data",
        "select",
        str(profile),
        "-o",
        str(tmp_path / "x.jsonl"),
        "--manifest",
        str(tmp_path / "hard.json"),
    )
    assert done.returncode == 2 and "a hard link to the same file" in done.stderr
    link.symlink_to(tmp_path / "elsewhere")
    done = cli("data", "select", str(profile), "-o", str(link))
    assert done.returncode == 1 and "not a regular file" in done.stderr
    assert profile.read_bytes() == before


def test_usage_errors(runs: Path, tmp_path: Path) -> None:
    out = str(tmp_path / "o.jsonl")
    for args, message in [
        (("--quota", "3"), "--by FIELD and --quota N go together"),
        (("--stratify", "domain"), "--stratify FIELD needs --limit N"),
        (("--band", "30-50"), "not a band"),
        (("--min-pass-rate", "0.8", "--max-pass-rate", "0.2"), "is above --max-pass-rate"),
        (("--order", "random", "--schedule", "curriculum"), "give one of them"),
        (("--annotate", "_ng_x"), "does not start with _ng_"),
    ]:
        done = cli("data", "select", str(runs / "main"), "-o", out, *args)
        assert done.returncode == 2, args
        assert message in done.stderr, (args, done.stderr)
    done = cli("data", "select", str(runs / "main"), "-o", out, "--annotate", "domain")
    assert done.returncode == 1 and "already has a key 'domain'" in done.stderr
    done = cli("data", "select", str(runs / "main"), "-o", out, "--min-pass-rate", "0.3", "--band", "0")
    assert done.returncode == 1
    assert "no task is left to write: all 12 were dropped (pass_rate 4, band 8)" in done.stderr
    done = cli("data", "select", str(tmp_path), "-o", out)
    assert done.returncode == 2 and "no *_reward_profiling.jsonl files" in done.stderr
    assert not Path(out).exists()


def test_drop_flagged_needs_the_health_file(tmp_path: Path) -> None:
    profile = build_run(tmp_path / "run")
    (tmp_path / "run" / "run_quality_summary.json").unlink()
    done = cli("data", "select", str(profile), "-o", str(tmp_path / "o.jsonl"), "--drop-flagged")
    assert done.returncode == 1
    assert "--drop-flagged: no health file beside" in done.stderr and "gym eval analyze" in done.stderr


def test_console_script_end_to_end(runs: Path, tmp_path: Path) -> None:
    """The installed entry point, in its own process, then --check in another."""
    out = tmp_path / "train.jsonl"
    done = gym(
        "data", "select", str(runs / "main"), "-o", str(out), "--schedule", "gaussian", "--stages", "2"
    )
    assert done.returncode == 0, done.stderr
    assert f"Wrote {out} (12 rows)" in done.stdout and "Stage 2: 6 rows" in done.stdout
    done = gym("data", "select", "--check", str(tmp_path / "train.manifest.json"))
    assert done.returncode == 0, done.stderr
    # Another process (another hash seed) gives the same bytes.
    again = tmp_path / "again.jsonl"
    _select(runs, again, "--schedule", "gaussian", "--stages", "2")
    assert again.read_bytes() == out.read_bytes()


def test_drop_run_params_removes_what_the_run_added(tmp_path: Path) -> None:
    profile = build_run(tmp_path / "run")
    out = tmp_path / "o.jsonl"
    done = cli("data", "select", str(profile), "-o", str(out), "--drop-run-params")
    assert done.returncode == 1 and "--drop-run-params: no run file beside" in done.stderr
    run_file = tmp_path / "run" / "run_run.json"
    run_file.write_bytes(orjson.dumps({"settings": {"materialize": {"create_params": {"temperature": 1.0}}}}))
    assert cli("data", "select", str(profile), "-o", str(out), "--drop-run-params").returncode == 0
    rows = _rows(out)
    assert rows[0]["responses_create_params"] == {"input": [{"role": "user", "content": "question 0"}]}
    manifest = orjson.loads((tmp_path / "o.manifest.json").read_bytes())
    assert [i["role"] for i in manifest["inputs"]] == ["profile", "health", "run"]
    run_file.write_bytes(orjson.dumps({"settings": {"materialize": {"create_params": {"top_p": 1.0}}}}))
    done = cli("data", "select", "--check", str(tmp_path / "o.manifest.json"))
    assert done.returncode == 1 and f"input run '{run_file}' changed" in done.stderr


def test_a_failed_manifest_write_leaves_the_dataset_alone(runs: Path, tmp_path: Path) -> None:
    out = tmp_path / "train.jsonl"
    out.write_bytes(b"earlier\n")
    done = cli(
        "data", "select", str(runs / "main"), "-o", str(out), "--manifest", str(tmp_path / "no" / "m.json")
    )
    assert done.returncode == 1 and "output folder does not exist" in done.stderr
    assert out.read_bytes() == b"earlier\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["train.jsonl"]  # no temp file left


def test_annotations_equal_the_analysis_numbers(runs: Path, tmp_path: Path) -> None:
    """The selection's pass rates, intervals, bands and settled are gym eval analyze's, task by task."""
    from rewardgym.profile import BAND_LABELS

    rows = _select(runs, tmp_path / "a.jsonl", "--annotate", "m", "--pass-threshold", "1.0")
    per_task = orjson.loads((runs / "main" / "run_analysis.json").read_bytes())["per_task"]
    assert [r["m"]["repeats"] for r in rows] == per_task["n"]
    assert [r["m"]["passes"] for r in rows] == per_task["passes"]
    assert [r["m"]["pass_rate"] for r in rows] == per_task["pass_rate"]
    assert [r["m"]["low"] for r in rows] == per_task["low"]
    assert [r["m"]["high"] for r in rows] == per_task["high"]
    assert [r["m"]["band"] for r in rows] == [BAND_LABELS[b] for b in per_task["band"]]
    assert [r["m"]["settled"] for r in rows] == per_task["settled"]
    summary = orjson.loads((runs / "main" / "run_quality_summary.json").read_bytes())["tasks"]
    assert [r["m"]["flags"] for r in rows] == [sorted(summary[str(t)]["flags"]) for t in range(len(rows))]


def test_a_moved_folder_still_checks(tmp_path: Path) -> None:
    """Paths in the manifest are relative to it: the run and the dataset can move together."""
    import shutil

    build_run(tmp_path / "a" / "run")
    assert (
        cli("data", "select", str(tmp_path / "a" / "run"), "-o", str(tmp_path / "a" / "t.jsonl")).returncode
        == 0
    )
    shutil.move(tmp_path / "a", tmp_path / "b")
    done = cli("data", "select", "--check", str(tmp_path / "b" / "t.manifest.json"))
    assert done.returncode == 0, done.stderr
