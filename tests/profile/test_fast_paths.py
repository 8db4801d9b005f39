"""The profiler's shortcuts give exactly what a plain orjson reading gives.

- materialized-input lines of one task that differ only in their ``"_ng_rollout_index":N}`` tail are not
  re-parsed: every odd tail (leading zeros, spaces, CRLF, huge or negative numbers, a last line without a
  newline) must still yield orjson's key, and a bad tail must still be reported;
- rollout rows are matched to compiled plans by one flat layout tuple;
- the profiler takes its key names from ``rewardgym.protocol.keys``, which loads no pydantic model, and a
  profile run does not import pydantic (the protocol's models) or the server stack.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rewardgym.profile.read import extract
from rewardgym.profile.read.scan_inputs import scan_inputs
from rewardgym.profile.read.scan_results import results_from_rows, scan_results
from tests.profile.helpers import REPO

_BODY = b'{"responses_create_params":{"input":[{"role":"user","content":"q"}]},"agent_ref":{"name":"a"},'

TAILS = [
    b'"_ng_task_index":1,"_ng_rollout_index":0}\n',
    b'"_ng_task_index":1,"_ng_rollout_index":1}\n',
    b'"_ng_task_index":1,"_ng_rollout_index":12}\r\n',
    b'"_ng_task_index":1,"_ng_rollout_index": 3}\n',
    b'"_ng_task_index":1,"_ng_rollout_index":4 }\n',
    b'"_ng_task_index":1,"_ng_rollout_index":123456789012345678}\n',
    b'"_ng_task_index":1,"_ng_rollout_index":1234567890123456789}\n',
    b'"_ng_task_index":1,"_ng_rollout_index":-5}\n',
    b'"_ng_task_index":1,"_ng_rollout_index":9223372036854775807}\n',
    b'"_ng_task_index":1,"_ng_rollout_index":6}',
]


def _expected(lines: list[bytes]) -> tuple[list[int], list[int]]:
    rows = [orjson.loads(line) for line in lines]
    return [r["_ng_task_index"] for r in rows], [r["_ng_rollout_index"] for r in rows]


@pytest.mark.parametrize("order", [1, -1])
def test_quick_tails_give_orjsons_keys(tmp_path: Path, order: int) -> None:
    lines = [_BODY + tail for tail in TAILS[:-1][::order]] + [_BODY + TAILS[-1]]
    path = tmp_path / "in.jsonl"
    path.write_bytes(b"".join(lines))
    chunk = scan_inputs(str(path), 0, path.stat().st_size)
    assert chunk.error is None
    tasks, rollouts = _expected(lines)
    assert chunk.task.tolist() == tasks
    assert chunk.rollout.tolist() == rollouts
    assert chunk.length.tolist() == [len(line) for line in lines]


@pytest.mark.parametrize(
    "tail",
    [
        b'"_ng_task_index":1,"_ng_rollout_index":01}\n',
        b'"_ng_task_index":1,"_ng_rollout_index":1}}\n',
        b'"_ng_task_index":1,"_ng_rollout_index":1,}\n',
        b'"_ng_task_index":1,"_ng_rollout_index":99999999999999999999}\n',
        b'"_ng_task_index":1,"_ng_rollout_index":"2"}\n',
        b'"_ng_task_index":1,"_ng_rollout_index":2}x\n',
    ],
)
def test_a_bad_tail_after_a_good_line_is_reported_on_its_line(tmp_path: Path, tail: bytes) -> None:
    path = tmp_path / "in.jsonl"
    path.write_bytes(_BODY + TAILS[0] + _BODY + tail)
    chunk = scan_inputs(str(path), 0, path.stat().st_size)
    assert chunk.error is not None
    assert chunk.error.line == 2
    assert chunk.task.tolist() == [1]


def test_rows_of_different_layouts_keep_their_own_plans(tmp_path: Path) -> None:
    """Same keys, different value types (a flat layout tuple must still tell them apart)."""
    rows = [
        {"reward": 1.0, "n": 3, "_ng_task_index": 0, "_ng_rollout_index": 0},
        {"reward": 0.0, "n": "3", "_ng_task_index": 0, "_ng_rollout_index": 1},
        {"reward": True, "n": 3.5, "_ng_task_index": 1, "_ng_rollout_index": 0},
        {
            "reward": 1.0,
            "response": {"usage": {"n2": 4, "d": {}}},
            "_ng_task_index": 1,
            "_ng_rollout_index": 1,
        },
        {
            "reward": 1.0,
            "response": {"usage": {"n2": "4", "d": {}}},
            "_ng_task_index": 2,
            "_ng_rollout_index": 0,
        },
    ]
    path = tmp_path / "r.jsonl"
    path.write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in rows))
    chunk = scan_results(str(path), 0, path.stat().st_size)
    assert chunk.error is None
    names = [chunk.shapes[s] for s in chunk.shape.tolist()]
    assert names == [("reward", "n"), ("reward",), ("reward", "n"), ("reward", "n2"), ("reward",)]
    assert chunk.values.tolist() == [1.0, 3.0, 0.0, 1.0, 3.5, 1.0, 4.0, 1.0]
    infos = [orjson.loads(chunk.infos[a:b]) for a, b in zip(chunk.info_start, chunk.info_end, strict=True)]
    assert infos[2] == {
        "rollout_id": "1:0",
        "_ng_task_index": 1,
        "_ng_rollout_index": 0,
        "reward": True,
        "n": 3.5,
    }
    assert infos[3]["n2"] == 4
    assert "n2" not in infos[4]


_VALUES = st.one_of(
    st.integers(-(2**63), 2**64 - 1),
    st.sampled_from([0, 1, -1, 2**53 + 1]),
    st.floats(allow_nan=False, allow_infinity=False),
    st.sampled_from([0.0, -0.0, 1.0, 0.5, 1e300, 5e-324]),
    st.booleans(),
    st.none(),
    st.text(max_size=5),
    st.sampled_from(["%d", "%b", '"}{', "1"]),
    st.just([1, "x"]),
    st.just({"a": 1}),
)
_TOP_KEYS = ["reward", "score", "passed", "rollout_id", "_private", "mask_sample", "n%d", 'q"uote', "é"]
_USAGE_KEYS = ["input_tokens", "output_tokens", "_ng_task_index", "reward_tokens", "details", "%s"]


@st.composite
def _rollout_rows(draw: st.DrawFn) -> list[dict[str, Any]]:
    """Rollouts of a few layouts (consecutive rows often share one), with JSON values of every kind."""
    layouts = draw(
        st.lists(st.tuples(st.permutations(_TOP_KEYS), st.permutations(_USAGE_KEYS)), min_size=1, max_size=3)
    )
    rows = []
    for position in range(draw(st.integers(1, 12))):
        top_keys, usage_keys = layouts[draw(st.integers(0, len(layouts) - 1))]
        row: dict[str, Any] = {}
        for key in top_keys[: draw(st.integers(0, len(top_keys)))]:
            row[key] = draw(_VALUES)
        usage_kind = draw(st.integers(0, 4))
        if usage_kind:
            usage = {key: draw(_VALUES) for key in usage_keys[: draw(st.integers(0, len(usage_keys)))]}
            row["response"] = {"usage": usage} if usage_kind > 1 else {"usage": None}
        row["_ng_task_index"] = position // 2
        row["_ng_rollout_index"] = position % 2
        rows.append(row)
    return rows


@settings(max_examples=200, deadline=None)
@given(_rollout_rows())
def test_the_file_reader_extracts_what_the_definition_says(rows: list[dict[str, Any]]) -> None:
    """Compiled layout checks, ``%`` record templates and the generic path give ``extract_result``'s
    metrics and ``orjson.dumps`` of its record, row by row, for files as for in-memory rows."""
    import tempfile

    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "r.jsonl"
        path.write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in rows))
        from_file = scan_results(str(path), 0, path.stat().st_size, allow_non_numeric_rewards=True)
        strict_file = scan_results(str(path), 0, path.stat().st_size)
    parsed = [orjson.loads(orjson.dumps(r)) for r in rows]  # the rows exactly as a file gives them
    in_memory = results_from_rows(parsed, allow_non_numeric_rewards=True)
    # By default the first measured row whose reward is not a number stops the chunk, on the fast path too.
    bad = [n for n, r in enumerate(parsed, 1) if not extract.is_masked(r) and extract.reward_problem(r)]
    for strict in (strict_file, results_from_rows(parsed)):
        if bad:
            assert strict.error is not None
            assert (strict.error.line, strict.error.message) == (
                bad[0],
                extract.reward_problem(parsed[bad[0] - 1]),
            )
        else:
            assert strict.error is None
    for chunk in (from_file, in_memory):
        assert chunk.error is None
        value_at = 0
        record = 0
        for row, shape in zip(parsed, chunk.shape.tolist(), strict=True):
            if extract.is_masked(row):
                assert shape == -1
                continue
            names, values, info = extract.extract_result(row, row["_ng_task_index"], row["_ng_rollout_index"])
            assert chunk.shapes[shape] == tuple(names)
            got = chunk.values[value_at : value_at + len(values)].tolist()
            assert got == [float(v) for v in values]
            value_at += len(values)
            start, end = int(chunk.info_start[record]), int(chunk.info_end[record])
            assert chunk.infos[start:end] == orjson.dumps(info)
            record += 1


@pytest.mark.parametrize("later", [b"", b"{not json\n"])
def test_an_index_beyond_64_bits_in_a_row_of_a_known_layout_is_reported_on_its_line(
    tmp_path: Path, later: bytes
) -> None:
    """Rows of the previous row's layout check their indices' range in bulk, when the chunk ends; the
    error still names the first such line, before any later bad line."""
    rows = [{"reward": 1.0, "_ng_task_index": t, "_ng_rollout_index": 0} for t in (0, 1, 2**63, 3)]
    path = tmp_path / "r.jsonl"
    path.write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in rows) + later)
    chunk = scan_results(str(path), 0, path.stat().st_size)
    assert chunk.error is not None
    assert chunk.error.line == 3
    assert chunk.error.message == f"'_ng_task_index' is out of the 64-bit integer range: {2**63}"


def test_importing_the_key_names_loads_no_pydantic_model() -> None:
    """``rewardgym.protocol.keys`` is the one place the contract's key names are spelled; importing it (as
    the profiler and the analysis reader do) loads neither pydantic nor any protocol model module."""
    code = (
        "import sys, rewardgym.protocol.keys; "
        "print(sorted(m for m in sys.modules if m.split('.')[0] == 'pydantic' or m.startswith('rewardgym.')))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO, check=True)
    assert out.stdout.strip() == str(["rewardgym.errors", "rewardgym.protocol", "rewardgym.protocol.keys"])


def test_the_protocol_names_still_load_on_access() -> None:
    from rewardgym import protocol

    assert protocol.Response.__name__ == "Response"
    assert protocol.keys.REWARD == "reward"
    assert sorted(protocol.__all__) == sorted(dir(protocol))


def test_the_profile_package_imports_neither_pydantic_nor_servers() -> None:
    """Start-up: ``rewardgym.profile`` (what ``gym eval profile`` runs) loads no pydantic model, no server
    code and no scipy (scipy is imported in the background once the files are being read)."""
    code = (
        "import sys, rewardgym.profile; "
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('pydantic', 'scipy') "
        "or (m.startswith(('rewardgym.protocol', 'rewardgym.servers', 'rewardgym.config')) "
        "and m not in ('rewardgym.protocol', 'rewardgym.protocol.keys'))))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO, check=True)
    assert out.stdout.strip() == "[]"
