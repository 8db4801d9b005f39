"""The multi-process path (byte-range chunks read by workers, per-task lines written by workers) gives
exactly the single-process output, and reports a bad line with its true line number."""

from __future__ import annotations

import itertools
import json
import random
import warnings
from pathlib import Path
from typing import Any

import orjson
import pytest

from rewardgym.errors import DataError
from rewardgym.profile import profile_files
from rewardgym.profile.tuning import Tuning
from tests.profile.helpers import write_jsonl

PARALLEL = Tuning(workers=2, chunk_bytes=1 << 16, parallel_from=0, parallel_groups=1, piece_groups=64)
SERIAL = Tuning(workers=1)


def _collection(folder: Path, tasks: int = 1500, repeats: int = 3) -> tuple[Path, Path]:
    rng = random.Random(11)
    rows: list[dict[str, Any]] = []
    results: list[dict[str, Any]] = []
    for task in range(0, 2 * tasks, 2):  # non-contiguous task indices
        agent = "beta" if task % 6 == 0 else "alpha"
        for rollout in range(repeats):
            key = {"_ng_task_index": task, "_ng_rollout_index": rollout}
            rows.append(
                {
                    "responses_create_params": {
                        "input": [{"role": "user", "content": "x" * rng.randint(10, 200)}]
                    },
                    "agent_ref": {"name": agent},
                    **key,
                }
            )
            result: dict[str, Any] = {
                "response": {"output": [{"text": "y" * rng.randint(0, 300)}]},
                "reward": float(rng.random() < 0.4),
            }
            if rng.random() < 0.9:
                result["response"]["usage"] = {
                    "input_tokens": rng.randint(1, 900),
                    "output_tokens": rng.randint(1, 90),
                }
            if rng.random() < 0.1:
                result["score"] = rng.random()
            result["mask_sample"] = rng.random() < 0.03
            results.append({**result, **key, "agent_ref": {"name": agent}})
    rng.shuffle(results)
    return write_jsonl(folder / "c_materialized_inputs.jsonl", rows), write_jsonl(folder / "c.jsonl", results)


def _outputs(rollouts: Path) -> list[bytes]:
    stem = rollouts.with_suffix("")
    return [
        Path(f"{stem}{suffix}").read_bytes()
        for suffix in ("_reward_profiling.jsonl", "_agent_metrics.json", "_repeat_level_metrics.json")
    ]


def test_parallel_output_equals_serial_output(tmp_path: Path) -> None:
    inputs, rollouts = _collection(tmp_path)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        serial = profile_files(inputs, rollouts, tuning=SERIAL)
        first = _outputs(rollouts)
        parallel = profile_files(inputs, rollouts, tuning=PARALLEL)
    assert _outputs(rollouts) == first
    assert first[0].count(b"\n") == serial.task_row_count == parallel.task_row_count == 1500
    assert serial.completion == parallel.completion
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]  # no temporary file left


@pytest.mark.parametrize("which", ["inputs", "rollouts"])
def test_bad_line_in_a_late_chunk_has_its_true_line_number(tmp_path: Path, which: str) -> None:
    inputs, rollouts = _collection(tmp_path)
    target = inputs if which == "inputs" else rollouts
    lines = target.read_bytes().splitlines(keepends=True)
    bad = len(lines) - 7
    lines[bad] = lines[bad][:40] + b"\n"
    target.write_bytes(b"".join(lines))
    with pytest.raises(DataError, match=rf"^{target}:{bad + 1}: malformed JSON"):
        profile_files(inputs, rollouts, tuning=PARALLEL)


def test_sample_is_written_by_orjson_whatever_the_input_formatting(tmp_path: Path) -> None:
    """Compact lines with the indices last are copied byte for byte; any other formatting is re-parsed."""
    compact_in, rollouts = _collection(tmp_path, tasks=40)
    rows = [orjson.loads(line) for line in compact_in.read_bytes().splitlines()]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        profile_files(compact_in, rollouts, tuning=SERIAL)
        compact_out = _outputs(rollouts)[0]
        # The same rows written with spaces, and with the indices first on every other task.
        reordered = [
            {"_ng_rollout_index": r["_ng_rollout_index"], "_ng_task_index": r["_ng_task_index"], **r}
            if r["_ng_task_index"] % 4 == 0
            else r
            for r in rows
        ]
        compact_in.write_text("".join(json.dumps(r) + "\n" for r in reordered))
        profile_files(compact_in, rollouts, tuning=SERIAL)
        spaced_out = _outputs(rollouts)[0]
    for a, b in zip(compact_out.splitlines(), spaced_out.splitlines(), strict=True):
        row_a, row_b = orjson.loads(a), orjson.loads(b)
        assert row_a["sample"] == row_b["sample"]
        if row_a["_ng_task_index"] % 4:
            assert a == b
        else:  # the sample keeps the row's own key order
            assert list(row_b["sample"]) == ["responses_create_params", "agent_ref"]
    assert b'": ' not in spaced_out  # always compact orjson output


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_byte_range_chunks_cover_every_line_once(tmp_path: Path, seed: int) -> None:
    from rewardgym.profile.read.scan_inputs import scan_inputs
    from rewardgym.profile.read.scan_results import scan_results

    inputs, rollouts = _collection(tmp_path, tasks=60, repeats=2)
    rng = random.Random(seed)
    for path, scan in ((inputs, scan_inputs), (rollouts, scan_results)):
        size = path.stat().st_size
        whole = scan(str(path), 0, size)
        cuts = sorted({0, size, *(rng.randrange(size) for _ in range(9))})
        parts = [scan(str(path), a, b) for a, b in itertools.pairwise(cuts)]
        assert sum(p.lines for p in parts) == whole.lines == len(path.read_bytes().splitlines())
        assert [t for p in parts for t in p.task.tolist()] == whole.task.tolist()
        assert [r for p in parts for r in p.rollout.tolist()] == whole.rollout.tolist()
