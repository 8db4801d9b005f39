"""The tables of one run, read from its files (each read completely before anything is written).

Contract:

- :func:`tasks_table`: one row per line of ``<stem>_reward_profiling.jsonl``, flattened by
  :func:`rewardgym.export.frames.flatten` (``sample`` and every list, e.g. ``rollout_infos``, as JSON text).
- :func:`rollouts_table`: one row per rollout (read by the analysis reader,
  :func:`rewardgym.analysis.scan.scan_rollouts`, so tokens and the cut-off mark are exactly the analysis's)
  plus one per line of the failures sidecar (reward, tokens, cut-off and text null; its failure class —
  ``unknown`` when the line names none — and reason), sorted by (task, rollout), rollouts before failures.
  Columns: :data:`ROLLOUT_COLUMNS`.
- :func:`analysis_tables`: from ``<stem>_analysis.json``, the ``per_task`` arrays as one row per task
  (plus ``band_label``) and every other field flattened into a one-row summary (lists as JSON text).
- A line that cannot be read is a :class:`~rewardgym.errors.DataError` naming ``file:line``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import orjson
import polars as pl

from rewardgym.analysis.extract import FIELDS, extract_row, response_text
from rewardgym.analysis.scan import scan_rollouts
from rewardgym.errors import DataError
from rewardgym.export.frames import flatten, frame, rows_frame
from rewardgym.io.jsonl import iter_jsonl
from rewardgym.protocol.keys import FAILURE_CLASS, ROLLOUT_INDEX, TASK_INDEX

ROLLOUT_COLUMNS = (
    TASK_INDEX,
    ROLLOUT_INDEX,
    "agent",
    "reward",
    "input_tokens",
    "output_tokens",
    "total_tokens",
    "cut_off",
    "failure_class",
    "failure_reason",
    "response_text",
)
_AGENT = FIELDS.index("agent")
_SUMMARY_SKIP = ("per_task", "per_rollout")


def tasks_table(path: Path) -> pl.DataFrame:
    rows: list[dict[str, Any]] = []
    for line, row in iter_jsonl(path, what="Profile file"):
        try:
            rows.append(flatten(row, as_text=("sample",)))
        except ValueError as exc:
            raise DataError(f"{path}:{line}: {exc}") from None
    return rows_frame(rows)


def _tokens(name: str, values: np.ndarray) -> pl.Series:
    """A token column from the analysis's floats (NaN = absent → null); whole numbers stay integers."""
    series = pl.Series(name, values, dtype=pl.Float64, nan_to_null=True)
    finite = values[np.isfinite(values)]
    if bool(np.all(finite == np.floor(finite))) and (finite.size == 0 or float(np.abs(finite).max()) < 2**53):
        return series.cast(pl.Int64)
    return series


def _texts(path: Path, offsets: np.ndarray, has_response: np.ndarray) -> list[str | None]:
    """The visible response text of the lines at ``offsets`` (read in file order)."""
    texts: list[str | None] = [None] * len(offsets)
    with open(path, "rb") as handle:
        for index in np.argsort(offsets, kind="stable").tolist():
            if not has_response[index]:
                continue
            handle.seek(int(offsets[index]))
            texts[index] = response_text(orjson.loads(handle.readline()))[0]
    return texts


def _failures(path: Path) -> list[tuple[int, int, str | None, str, str | None]]:
    """``(task, rollout, agent, class, reason)`` per line of the failures sidecar (none when absent)."""
    if not path.exists():
        return []
    out = []
    for line, row in iter_jsonl(path, what="Failures file"):
        fields = extract_row(row)  # the analysis's key checks: integer task and rollout indices
        if isinstance(fields, str):
            raise DataError(f"{path}:{line}: {fields}")
        kind, reason, agent = row.get(FAILURE_CLASS), row.get("_ng_failure_reason"), fields[_AGENT]
        out.append(
            (
                fields[0],
                fields[1],
                agent if isinstance(agent, str) else None,
                kind if isinstance(kind, str) else "unknown",
                reason if isinstance(reason, str) else None,
            )
        )
    return out


def rollouts_table(rollouts: Path, failures: Path) -> pl.DataFrame:
    scan = scan_rollouts(rollouts)
    if scan.unreadable:
        line, error = scan.unreadable[0]
        raise DataError(f"{rollouts}:{line}: {error}")
    failed = _failures(failures)
    cols = scan.columns
    # Built from the analysis's numpy columns (no Python object per number): only the texts are objects.
    agents = pl.Series("agent", [*cols.agents, None], dtype=pl.String)
    measured = pl.DataFrame(
        [
            pl.Series(TASK_INDEX, cols.task, dtype=pl.Int64),
            pl.Series(ROLLOUT_INDEX, cols.rollout, dtype=pl.Int64),
            agents.gather(np.where(cols.agent < 0, len(cols.agents), cols.agent)),
            pl.Series("reward", cols.reward, dtype=pl.Float64, nan_to_null=True),
            *(_tokens(n, getattr(cols, n)) for n in ("input_tokens", "output_tokens", "total_tokens")),
            pl.Series("cut_off", cols.cut_off, dtype=pl.Boolean),
            pl.Series("failure_class", [None] * len(cols), dtype=pl.String),
            pl.Series("failure_reason", [None] * len(cols), dtype=pl.String),
            pl.Series("response_text", _texts(rollouts, cols.offset, cols.has_response), dtype=pl.String),
        ]
    )
    types = dict(measured.schema)
    lost: list[Any] = [None] * len(failed)
    values: dict[str, list[Any]] = {
        TASK_INDEX: [f[0] for f in failed],
        ROLLOUT_INDEX: [f[1] for f in failed],
        "agent": [f[2] for f in failed],
        "failure_class": [f[3] for f in failed],
        "failure_reason": [f[4] for f in failed],
    }
    unmeasured = pl.DataFrame([pl.Series(n, values.get(n, lost), dtype=types[n]) for n in ROLLOUT_COLUMNS])
    return pl.concat([measured, unmeasured]).sort([TASK_INDEX, ROLLOUT_INDEX], maintain_order=True)


def _load(path: Path) -> dict[str, Any]:
    try:
        doc = orjson.loads(path.read_bytes())
    except orjson.JSONDecodeError as exc:
        raise DataError(f"{path}:{exc.lineno}: malformed JSON ({exc.msg})") from None
    except OSError as exc:
        raise DataError(f"cannot read '{path}': {exc.strerror}") from None
    if not isinstance(doc, dict) or not isinstance(doc.get("per_task"), dict):
        raise DataError(f"{path}: no 'per_task' object; not a 'gym eval analyze' output")
    return doc


def analysis_tables(path: Path) -> tuple[pl.DataFrame, pl.DataFrame]:
    """``(per-task table, one-row summary)`` of an analysis document (see module doc)."""
    doc = _load(path)
    per_task: dict[str, Any] = doc["per_task"]
    lengths = {len(v) if isinstance(v, list) else -1 for v in per_task.values()}
    if len(lengths) > 1 or -1 in lengths:
        raise DataError(f"{path}: the 'per_task' fields must be lists of one length")
    columns: dict[str, list[Any]] = {}
    bands = doc.get("uncertainty", {}).get("bands") if isinstance(doc.get("uncertainty"), dict) else None
    labels = [b.get("band") for b in bands if isinstance(b, dict)] if isinstance(bands, list) else []
    for name, values in per_task.items():
        columns[name] = values
        if name == "band":
            columns["band_label"] = [
                labels[v] if type(v) is int and 0 <= v < len(labels) else None for v in values
            ]
    try:
        summary = flatten({k: v for k, v in doc.items() if k not in _SUMMARY_SKIP})
    except ValueError as exc:
        raise DataError(f"{path}: {exc}") from None
    return frame(columns), rows_frame([summary])
