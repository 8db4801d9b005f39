"""The whole job over real processes against the stub upstream: run (serving) → reverify → profile.

`gym eval run` starts a model server (openai_model → stub), an exact-match environment and simple_agent,
collects the mcqa example rows with repeats, stops everything; `gym eval reverify` re-scores the stored
responses through the environment's /verify and must reproduce every reward; `gym eval aggregate --serve`
starts the stack again for the merge.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import orjson

from rewardgym.launch.serve import ThreadedServer
from tests.conftest import EXAMPLES, REPO_ROOT

API_KEY = "sk-collect-e2e-SECRET-4242"
STACK = """\
policy_model:
  responses_api_models:
    openai_model:
      openai_base_url: ${policy_base_url}
      openai_api_key: ${policy_api_key}
      openai_model: ${policy_model_name}
mcqa:
  resources_servers:
    tests.stubs.environments:ExactMatchServer:
      domain: knowledge
mcqa_simple_agent:
  responses_api_agents:
    simple_agent:
      resources_server: {type: resources_servers, name: mcqa}
      model_server: {type: responses_api_models, name: policy_model}
"""


def _gym(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT), "PYTHONUNBUFFERED": "1"}
    return subprocess.run(
        [sys.executable, "-m", "rewardgym", *args], cwd=cwd, env=env, capture_output=True, text=True,
        timeout=300, check=False,
    )  # fmt: skip


def _rows(path: Path) -> list[dict[str, object]]:
    return [orjson.loads(line) for line in path.read_bytes().splitlines()]


def test_run_then_reverify_reproduces_rewards(tmp_path: Path, upstream: ThreadedServer) -> None:
    (tmp_path / "stack.yaml").write_text(STACK)
    model = ["--model-url", f"{upstream.url}/v1", "--model", "stub", "--model-api-key", API_KEY]
    run = _gym(
        "eval", "run", "--config", "stack.yaml", *model, "--input", str(EXAMPLES / "mcqa" / "example.jsonl"),
        "--agent", "mcqa_simple_agent", "--num-repeats", "3", "--output", "out/rollouts.jsonl",
        cwd=tmp_path,
    )  # fmt: skip
    assert run.returncode == 0, run.stdout + run.stderr
    assert "Key metrics for mcqa_simple_agent" in run.stdout
    rollouts = _rows(tmp_path / "out" / "rollouts.jsonl")
    materialized = _rows(tmp_path / "out" / "rollouts_materialized_inputs.jsonl")

    def key(r: dict[str, Any]) -> tuple[int, int]:
        return r["_ng_task_index"], r["_ng_rollout_index"]

    assert sorted(map(key, rollouts)) == sorted(map(key, materialized))
    assert len(rollouts) == 15
    # The stub always answers B: reward 1 exactly on the rows whose expected answer is B.
    expected = {key(r): float(r["expected_answer"] == "B") for r in materialized}
    assert {key(r): r["reward"] for r in rollouts} == expected

    again = _gym(
        "eval", "reverify", "--config", "stack.yaml", *model,
        "--inputs", "out/rollouts_materialized_inputs.jsonl", "--rollouts", "out/rollouts.jsonl",
        "-o", "out/rescored.jsonl",
        cwd=tmp_path,
    )  # fmt: skip
    assert again.returncode == 0, again.stdout + again.stderr
    rescored = _rows(tmp_path / "out" / "rescored.jsonl")
    assert {key(r): r["reward"] for r in rescored} == expected

    # ATIF: the rollouts exported as trajectories re-score to the same rewards (the responses rebuilt)
    exported = _gym("eval", "export", "--rollouts", "out/rollouts.jsonl", "--format", "atif", cwd=tmp_path)
    assert exported.returncode == 0 and "(15 trajectories)" in exported.stdout, exported.stderr
    from_atif = _gym(
        "eval", "reverify", "--config", "stack.yaml", *model, "--disable-aggregation",
        "--inputs", "out/rollouts_materialized_inputs.jsonl", "--rollouts", "out/rollouts_atif.jsonl",
        "-o", "out/from_atif.jsonl",
        cwd=tmp_path,
    )  # fmt: skip
    assert from_atif.returncode == 0, from_atif.stdout + from_atif.stderr
    assert {key(r): r["reward"] for r in _rows(tmp_path / "out" / "from_atif.jsonl")} == expected

    # --limit N: only the first N rollouts of the rollouts file (NeMo Gym's flag)
    first = _gym(
        "eval", "reverify", "--config", "stack.yaml", *model, "--limit", "4",
        "--inputs", "out/rollouts_materialized_inputs.jsonl", "--rollouts", "out/rollouts.jsonl",
        "-o", "out/first4.jsonl", "--disable-aggregation",
        cwd=tmp_path,
    )  # fmt: skip
    assert first.returncode == 0, first.stdout + first.stderr
    assert sorted(map(key, _rows(tmp_path / "out" / "first4.jsonl"))) == sorted(map(key, rollouts[:4]))

    # aggregate --serve starts the stack for the merge (no running `gym env start` needed).
    merged = _gym(
        "eval", "aggregate", "--serve", "--config", "stack.yaml", *model, "--input", "out/rollouts.jsonl",
        "-o", "merged/all.jsonl", cwd=tmp_path,
    )  # fmt: skip
    assert merged.returncode == 0, merged.stdout + merged.stderr
    assert "Starting 3 servers" in merged.stdout and "Merged 15 rollouts from 1 file(s)" in merged.stdout
    assert sorted(map(key, _rows(tmp_path / "merged" / "all.jsonl"))) == sorted(map(key, rollouts))
    assert (tmp_path / "merged" / "all_aggregate_metrics.json").is_file()

    # No secret in anything written or printed.
    written = b"".join(p.read_bytes() for p in (tmp_path / "out").rglob("*") if p.is_file())
    assert API_KEY.encode() not in written
    printed = run.stdout + run.stderr + again.stdout + again.stderr + merged.stdout + merged.stderr
    assert API_KEY not in printed


def test_split_collects_the_datasets_the_config_lists(tmp_path: Path, upstream: ThreadedServer) -> None:
    # NeMo Gym's `gym eval run --split`: the agent's datasets of that split, each repeated num_repeats times
    # line after line, with the agent stamped; a NeMo Gym repository path finds the built-in environment.
    datasets = (
        "      datasets:\n"
        "      - {name: example, type: example, num_repeats: 2,"
        " jsonl_fpath: resources_servers/mcqa/data/example.jsonl}\n"
        "      - {name: other, type: train, jsonl_fpath: nowhere.jsonl}\n"
    )
    (tmp_path / "stack.yaml").write_text(STACK + datasets)
    model = ["--model-url", f"{upstream.url}/v1", "--model", "stub", "--model-api-key", API_KEY]
    run = _gym(
        "eval", "run", "--config", "stack.yaml", *model, "--split", "example", "--output", "s/rollouts.jsonl",
        "--no-health-check", cwd=tmp_path,
    )  # fmt: skip
    assert run.returncode == 0, run.stdout + run.stderr
    source = (EXAMPLES / "mcqa" / "example.jsonl").read_bytes().splitlines()
    collated = _rows(tmp_path / "s" / "rollouts" / "preprocessed_datasets" / "example.jsonl")
    assert len(collated) == 2 * len(source)
    assert collated[0] == collated[1] != collated[2]  # "aabb": each line twice, in order
    assert {r["agent_ref"]["name"] for r in collated} == {"mcqa_simple_agent"}  # type: ignore[index]
    rollouts = _rows(tmp_path / "s" / "rollouts.jsonl")
    # byte-identical lines are one task: each source row is a task with two rollouts
    assert sorted((r["_ng_task_index"], r["_ng_rollout_index"]) for r in rollouts) == [
        (t, i) for t in range(len(source)) for i in range(2)
    ]
    missing = _gym(
        "eval", "run", "--config", "stack.yaml", *model, "--split", "train", "-o", "t/rollouts.jsonl",
        cwd=tmp_path,
    )  # fmt: skip
    assert missing.returncode == 1 and "jsonl_fpath 'nowhere.jsonl' not found" in missing.stderr
    both = _gym(
        "eval",
        "run",
        "--config",
        "stack.yaml",
        *model,
        "--split",
        "example",
        "--input",
        "x.jsonl",
        cwd=tmp_path,
    )
    assert both.returncode == 2 and "--split and --input" in both.stderr


def test_reverify_judge_failed_only_recovers_the_judge_failures(
    tmp_path: Path, upstream: ThreadedServer
) -> None:
    # The judge is down for the rows expecting "B" during the run: they are judge failures in the sidecar,
    # with their responses. With the judge back, --judge-failed-only re-scores just those and keeps the rest.
    flaky = STACK.replace(
        "tests.stubs.environments:ExactMatchServer:", "tests.stubs.environments:FlakyJudgeServer:"
    )
    (tmp_path / "down.yaml").write_text(
        flaky.replace("domain: knowledge", "domain: knowledge\n      judge_down_for: B")
    )
    (tmp_path / "up.yaml").write_text(flaky)
    model = ["--model-url", f"{upstream.url}/v1", "--model", "stub", "--model-api-key", API_KEY]
    run = _gym(
        "eval", "run", "--config", "down.yaml", *model, "--input", str(EXAMPLES / "mcqa" / "example.jsonl"),
        "--agent", "mcqa_simple_agent", "--output", "out/rollouts.jsonl", "--no-health-check",
        "++max_attempts=1", cwd=tmp_path,
    )  # fmt: skip
    materialized = _rows(tmp_path / "out" / "rollouts_materialized_inputs.jsonl")
    failed = _rows(tmp_path / "out" / "rollouts_failures.jsonl")
    b_rows = [r for r in materialized if r["expected_answer"] == "B"]
    assert b_rows and len(failed) == len(b_rows), run.stdout + run.stderr
    assert all(f["_ng_failure_class"] == "judge_failed" and "response" in f for f in failed)
    before = _rows(tmp_path / "out" / "rollouts.jsonl")
    assert len(before) == len(materialized) - len(b_rows)
    again = _gym(
        "eval", "reverify", "--config", "up.yaml", *model, "--judge-failed-only",
        "--inputs", "out/rollouts_materialized_inputs.jsonl", "--rollouts", "out/rollouts.jsonl",
        "-o", "out/recovered.jsonl", cwd=tmp_path,
    )  # fmt: skip
    assert again.returncode == 0, again.stdout + again.stderr
    recovered = _rows(tmp_path / "out" / "recovered.jsonl")
    assert recovered[: len(before)] == before  # the successes, as they were
    rescored = recovered[len(before) :]
    assert sorted((r["_ng_task_index"], r["_ng_rollout_index"]) for r in rescored) == sorted(
        (r["_ng_task_index"], r["_ng_rollout_index"]) for r in b_rows
    )
    assert all(r["reward"] == 1.0 for r in rescored)  # the stub answers B: right, now that the judge is up
    assert "Recovery: " + str(len(b_rows)) in again.stdout
