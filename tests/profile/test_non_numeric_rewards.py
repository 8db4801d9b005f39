"""A measured rollout whose ``reward`` is not a number is an error naming file:line, unless
``--allow-non-numeric-rewards`` / ``++allow_non_numeric_rewards=true`` asks for NeMo Gym 0.7.0's behaviour
(the reward is left out of the statistics, ``rollout_infos`` keeps it as written)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import pytest

from rewardgym.errors import DataError
from rewardgym.profile import profile_files, profile_rows
from rewardgym.profile.tuning import Tuning
from tests.profile.helpers import gym, write_jsonl

BAD_REWARDS: list[Any] = ["high", "0.5", None, [1], {"value": 1}]


def _collection(folder: Path, bad: Any, tasks: int = 3) -> tuple[Path, Path]:
    rows = [
        {"q": f"task {t}", "agent_ref": {"name": "a"}, "_ng_task_index": t, "_ng_rollout_index": r}
        for t in range(tasks)
        for r in range(2)
    ]
    results: list[dict[str, Any]] = [
        {"_ng_task_index": t, "_ng_rollout_index": r, "reward": float((t + r) % 2), "response": {}}
        for t in range(tasks)
        for r in range(2)
    ]
    results[3]["reward"] = bad  # line 4
    results.insert(1, {"_ng_task_index": 0, "_ng_rollout_index": 9, "reward": bad, "mask_sample": True})
    rows.append({"q": "task 0", "agent_ref": {"name": "a"}, "_ng_task_index": 0, "_ng_rollout_index": 9})
    return write_jsonl(folder / "r_materialized_inputs.jsonl", rows), write_jsonl(folder / "r.jsonl", results)


@pytest.mark.parametrize("bad", BAD_REWARDS, ids=["string", "numeric-string", "null", "list", "object"])
@pytest.mark.parametrize("parallel", [False, True], ids=["one-process", "workers"])
def test_a_non_numeric_reward_names_its_line(tmp_path: Path, bad: Any, parallel: bool) -> None:
    """The masked rollout on line 2 is not measured, so its reward is not looked at; line 5 is the first."""
    inputs, rollouts = _collection(tmp_path, bad)
    tuning = Tuning(workers=2, parallel_from=0) if parallel else None
    with pytest.raises(DataError, match=rf"^{rollouts}:5: 'reward' must be a number, got ") as caught:
        profile_files(inputs, rollouts, tuning=tuning)
    assert "--allow-non-numeric-rewards" in str(caught.value)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["r.jsonl", "r_materialized_inputs.jsonl"]


def test_the_opt_in_reproduces_nemo_gym_and_the_api_is_strict_by_default(tmp_path: Path) -> None:
    """With the opt-in the file profile equals the in-memory one (which the reference-equivalence tests
    hold to NeMo Gym's pandas code): the string reward is in ``rollout_infos``, not in the statistics."""
    inputs, rollouts = _collection(tmp_path, "high")
    result = profile_files(inputs, rollouts, allow_non_numeric_rewards=True)
    rows = [orjson.loads(line) for line in inputs.read_bytes().splitlines()]
    results = [orjson.loads(line) for line in rollouts.read_bytes().splitlines()]
    in_memory = profile_rows(rows, results, allow_non_numeric_rewards=True)
    assert result.paths is not None
    written = result.paths.reward_profiling.read_bytes()
    assert written == b"".join(orjson.dumps(row) + b"\n" for row in in_memory.task_rows)
    task1 = in_memory.task_rows[1]
    assert task1["mean/reward"] == 1.0  # only the numeric reward of task 1 (the other one is "high")
    assert [info["reward"] for info in task1["rollout_infos"]] == [1.0, "high"]
    with pytest.raises(DataError, match=r"^results\[4\]: 'reward' must be a number, got the string 'high'"):
        profile_rows(rows, results)


def test_the_cli_flag_and_override(tmp_path: Path) -> None:
    inputs, rollouts = _collection(tmp_path, [1])
    refused = gym("eval", "profile", "--inputs", str(inputs), "--rollouts", str(rollouts))
    assert refused.returncode == 1
    assert refused.stderr == (
        f"Error: {rollouts}:5: 'reward' must be a number, got a list (NeMo Gym leaves such a reward out of "
        "the statistics without a word: --allow-non-numeric-rewards or ++allow_non_numeric_rewards=true "
        "does the same)\n"
    )
    for extra in (["--allow-non-numeric-rewards"], ["++allow_non_numeric_rewards=True"]):
        done = gym("eval", "profile", "--inputs", str(inputs), "--rollouts", str(rollouts), *extra)
        assert done.returncode == 0, done.stderr
        assert (tmp_path / "r_reward_profiling.jsonl").exists()
    both = ["--allow-non-numeric-rewards", "++allow_non_numeric_rewards=false"]
    contradiction = gym("eval", "profile", "--inputs", str(inputs), "--rollouts", str(rollouts), *both)
    assert contradiction.returncode == 2
    assert "--allow-non-numeric-rewards contradicts ++allow_non_numeric_rewards=false" in contradiction.stderr
