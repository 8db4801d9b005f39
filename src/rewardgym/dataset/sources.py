"""Reading profiles (and their health files) into one table of tasks, merged by content.

Contract:

- :func:`resolve_source` turns what a user names — a ``<stem>_reward_profiling.jsonl`` file or a run
  folder holding exactly one — into a :class:`Source`: the profile and, when it sits beside it, the
  analysis' ``<stem>_quality_summary.json`` (the health file with per-task flags).
- :func:`read_tasks` reads every source's profile rows in order. Per row: the training row is ``sample``
  without any top-level ``_ng_*`` key and without the per-rollout seed the collector adds
  (``responses_create_params.metadata.extra_body`` ``seed`` equal to the row's lowest rollout index, see
  :func:`training_row`); the measured rollouts are ``rollout_infos`` (a reward that is a number or a
  boolean is counted; it passes when ``reward >= pass_threshold``, as in ``gym eval analyze``).
- **Identity across profiles** is the content of that training row (keys sorted, hashed): the same task
  in two profiles — or twice in one — is one task. ``duplicates="pool"`` adds their rollouts up (the
  first occurrence's row is kept); ``"refuse"`` stops at the second occurrence naming both places.
- ``drop_run_params``: the ``responses_create_params`` keys the run added to every row (recorded in
  ``<stem>_run.json`` under ``settings.materialize.create_params``: ``--temperature``,
  ``++max_output_tokens``…) are removed; a source without a run file is then an error.
- Health flags are the task flags of the quality summary (``tasks[<_ng_task_index>].flags``); a merged
  task carries the union. Its unhealthy rollouts are the summary's ``tasks[<index>].unhealthy`` counts,
  added up over the merged rows (a summary without that count counts 0). A summary that is not JSON,
  or has no entry for a profile task, is an error.
- Every file is hashed (sha256) over exactly the bytes that were parsed. Bad input is a
  :class:`~rewardgym.errors.DataError` naming ``file:line`` (or the file).
"""

from __future__ import annotations

import hashlib
import math
import os
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import numpy as np
import orjson

from rewardgym.analysis.design import adaptive_policy, design_estimates
from rewardgym.errors import DataError, UsageError
from rewardgym.io.inputs import refuse_special_input
from rewardgym.io.jsonl import parse_line
from rewardgym.stats.adaptive import AdaptivePolicy

PROFILE_SUFFIX = "_reward_profiling.jsonl"
SUMMARY_SUFFIX = "_quality_summary.json"
RUN_SUFFIX = "_run.json"
Duplicates = Literal["pool", "refuse"]


@dataclass(frozen=True)
class Source:
    """One profile, its health file and its run file (None when there is none beside it)."""

    profile: Path
    health: Path | None
    run: Path | None = None


@dataclass(slots=True)
class Task:
    """One distinct training row and its pooled measurements."""

    data: bytes
    """The training row as compact JSON, keys in their original order (bytes: a tenth of a parsed dict)."""
    key: bytes
    where: str
    """``file:line`` of its first occurrence."""
    labels: tuple[str, ...]
    """The row's value of each requested field (:func:`field_value`)."""
    n: int = 0
    passes: int = 0
    occurrences: int = 1
    flags: set[str] = field(default_factory=set)
    unhealthy: int = 0
    """Rollouts of the task with an unhealthy verdict (from the health files)."""
    estimate_sum: float = 0.0
    """Sum over occurrences of the pass-rate estimate of its run's design (s / n, or the estimate unbiased
    under an adaptive run's stopping rule: :mod:`rewardgym.analysis.design`)."""
    estimate_count: int = 0
    adaptive: bool = False
    """Some occurrence comes from an adaptive run: the task's rate is the mean of the occurrences'
    estimates (pooled s / n would carry the stopping rule's bias)."""

    @property
    def rate(self) -> float:
        """The task's pass-rate estimate (NaN without a counted rollout)."""
        if self.adaptive:
            return self.estimate_sum / self.estimate_count if self.estimate_count else float("nan")
        return self.passes / self.n if self.n else float("nan")


@dataclass(frozen=True)
class ReadResult:
    tasks: list[Task]
    hashes: dict[Path, str]
    """sha256 of every file read, in reading order."""
    rows_read: int
    merged: int
    """Profile rows that were a task already seen (pooled into it)."""
    health_read: bool
    """Every source had a health file (flags are known for every task)."""


def resolve_source(path: Path) -> Source:
    """The profile named by ``path`` (a profile file or a run folder) and its health file."""
    refuse_special_input(path, "profile")
    if path.is_dir():
        found = sorted(path.glob(f"*{PROFILE_SUFFIX}"))
        if len(found) != 1:
            what = "no" if not found else f"{len(found)}"
            names = "" if not found else ": " + ", ".join(p.name for p in found)
            raise UsageError(
                f"'{path}': {what} *{PROFILE_SUFFIX} files in this folder{names}; "
                "name the profile file itself (run 'gym eval profile' first if there is none)"
            )
        path = found[0]
    elif not path.exists():
        raise DataError(f"profile not found: '{path}'")
    if not path.name.endswith(PROFILE_SUFFIX):
        raise UsageError(f"'{path}' is not a profile: expected a *{PROFILE_SUFFIX} file or a run folder")
    stem = path.name[: -len(PROFILE_SUFFIX)]
    summary, run = path.with_name(stem + SUMMARY_SUFFIX), path.with_name(stem + RUN_SUFFIX)
    return Source(path, summary if summary.is_file() else None, run if run.is_file() else None)


def training_row(
    sample: dict[str, Any], lowest_rollout: int | None, drop_params: frozenset[str] = frozenset()
) -> dict[str, Any]:
    """``sample`` as a training row: no ``_ng_*`` keys, no per-rollout seed, none of ``drop_params``.

    The collector's ``--num-repeats-add-seed`` writes the rollout index as ``seed`` into
    ``responses_create_params.metadata.extra_body``; ``sample`` is the row of the task's lowest measured
    rollout index, so a seed equal to that index is the collector's and is removed (an ``extra_body`` or
    ``metadata`` left empty goes too). A seed of any other value is the user's own and stays.
    ``drop_params``: ``responses_create_params`` keys the run added to every row (``--drop-run-params``)."""
    row = {k: v for k, v in sample.items() if not k.startswith("_ng_")}
    params = row.get("responses_create_params")
    if not isinstance(params, dict):
        return row
    new_params = {k: v for k, v in params.items() if k not in drop_params}
    metadata = new_params.get("metadata")
    raw = metadata.get("extra_body") if isinstance(metadata, dict) else None
    extra: Any = None
    if isinstance(raw, str) and lowest_rollout is not None:
        try:
            extra = orjson.loads(raw)
        except orjson.JSONDecodeError:
            extra = None
    seed = extra.get("seed") if isinstance(extra, dict) else None
    if (
        isinstance(metadata, dict)
        and isinstance(extra, dict)
        and type(seed) is int
        and seed == lowest_rollout
    ):
        rest = {k: v for k, v in extra.items() if k != "seed"}
        new_metadata = {k: v for k, v in metadata.items() if k != "extra_body"}
        if rest:
            new_metadata["extra_body"] = orjson.dumps(rest).decode()
        del new_params["metadata"]
        if new_metadata:
            new_params["metadata"] = new_metadata
    if new_params == params and list(new_params) == list(params):
        return row
    # Keep the key order of the row: the parameters stay where they were.
    return {k: (new_params if k == "responses_create_params" else v) for k, v in row.items()}


MISSING = "(missing)"


def field_value(row: dict[str, Any], path: str) -> str:
    """A dotted field's value as a group label: text as is, else its JSON; absent: ``(missing)``."""
    value: Any = row
    for part in path.split("."):
        if not isinstance(value, dict) or part not in value:
            return MISSING
        value = value[part]
    return value if isinstance(value, str) else orjson.dumps(value, option=orjson.OPT_SORT_KEYS).decode()


def content_key(row: dict[str, Any]) -> bytes:
    """The identity of a training row: a digest of its JSON with sorted keys."""
    return hashlib.blake2b(orjson.dumps(row, option=orjson.OPT_SORT_KEYS), digest_size=16).digest()


@dataclass
class _Outcomes:
    """Counted rollouts of one source, for its design's estimate: task position, rollout index, passed."""

    position: list[int] = field(default_factory=list)
    rollout: list[int] = field(default_factory=list)
    passed: list[bool] = field(default_factory=list)


def _measure(
    row: dict[str, Any], where: str, threshold: float, outcomes: _Outcomes | None = None, position: int = 0
) -> tuple[int, int, int | None]:
    """``(counted, passes, lowest rollout index)`` of one profile row (its counted rollouts added to
    ``outcomes`` when given)."""
    infos = row.get("rollout_infos")
    if not isinstance(infos, list):
        raise DataError(f"{where}: profile row has no 'rollout_infos' list (is this a reward profile?)")
    n = passes = 0
    lowest: int | None = None
    for info in infos:
        if not isinstance(info, dict):
            raise DataError(f"{where}: an entry of 'rollout_infos' is not an object")
        index = info.get("_ng_rollout_index")
        if type(index) is int and (lowest is None or index < lowest):
            lowest = index
        reward = info.get("reward")
        if isinstance(reward, int | float):  # as the analysis counts (booleans too): others are unmeasured
            if outcomes is not None:
                outcomes.position.append(position)
                outcomes.rollout.append(index if type(index) is int else n)
                outcomes.passed.append(float(reward) >= threshold)
            n += 1
            passes += float(reward) >= threshold
    return n, passes, lowest


def _adaptive(source: Source) -> AdaptivePolicy | None:
    """The adaptive policy the source's run recorded (None: fixed repeats, or no run file)."""
    if source.run is None:
        return None
    try:
        return adaptive_policy(orjson.loads(source.run.read_bytes()))
    except (OSError, orjson.JSONDecodeError):
        return None


def _add_estimates(rows: list[Task], outcomes: _Outcomes, policy: AdaptivePolicy, threshold: float) -> None:
    """Each row's estimate under the source's adaptive design (one entry per occurrence)."""
    count = len(rows)
    estimate = design_estimates(
        policy, np.array(outcomes.position, np.int64), count, np.array(outcomes.rollout, np.int64),
        np.ones(len(outcomes.position), np.bool_), np.array(outcomes.passed, np.bool_), threshold,
    )  # fmt: skip
    assert estimate is not None  # a policy gives an estimate
    for task, value in zip(rows, estimate.tolist(), strict=True):
        task.adaptive = True
        if not math.isnan(value):  # the occurrence had a counted rollout
            task.estimate_sum += value
            task.estimate_count += 1


def _iter_profile(path: Path, hasher: Any) -> Iterator[tuple[int, dict[str, Any]]]:
    """The profile's rows, streamed; ``hasher`` sees exactly the bytes parsed."""
    refuse_special_input(path, "profile")
    try:
        handle = open(path, "rb")  # noqa: SIM115 - closed below
    except OSError as exc:
        raise DataError(f"profile cannot be read: '{path}': {exc.strerror}") from None
    number = 0
    with handle:
        for number, raw in enumerate(handle, start=1):
            hasher.update(raw)
            yield number, parse_line(raw, path, number)
    if number == 0:
        raise DataError(f"{path}: the profile has no rows")


def _read_flags(path: Path, hashes: dict[Path, str]) -> dict[str, tuple[list[str], int]]:
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise DataError(f"health file cannot be read: '{path}': {exc.strerror}") from None
    hashes[path] = hashlib.sha256(data).hexdigest()
    try:
        summary = orjson.loads(data)
    except orjson.JSONDecodeError as exc:
        raise DataError(f"{path}: not JSON ({exc.msg}); rerun 'gym eval analyze'") from None
    tasks = summary.get("tasks") if isinstance(summary, dict) else None
    if not isinstance(tasks, dict):
        raise DataError(f"{path}: no 'tasks' object: not a quality summary of 'gym eval analyze'")
    flags: dict[str, tuple[list[str], int]] = {}
    for key, entry in tasks.items():
        listed = entry.get("flags") if isinstance(entry, dict) else None
        if not isinstance(listed, list) or not all(isinstance(f, str) for f in listed):
            raise DataError(f"{path}: task {key!r} has no 'flags' list")
        sick = entry.get("unhealthy", 0)
        if type(sick) is not int or sick < 0:
            raise DataError(f"{path}: task {key!r}: 'unhealthy' is not a count of rollouts")
        flags[key] = (listed, sick)
    return flags


def _run_params(source: Source, hashes: dict[Path, str]) -> frozenset[str]:
    """The ``responses_create_params`` keys the run put into every row (its ``--temperature``…)."""
    if source.run is None:
        raise DataError(
            f"--drop-run-params: no run file beside '{source.profile}' (its *{RUN_SUFFIX}, written by "
            "'gym eval run'); without it the parameters the run added are not known"
        )
    try:
        data = source.run.read_bytes()
        document = orjson.loads(data)
    except OSError as exc:
        raise DataError(f"run file cannot be read: '{source.run}': {exc.strerror}") from None
    except orjson.JSONDecodeError as exc:
        raise DataError(f"{source.run}: not JSON ({exc.msg})") from None
    hashes[source.run] = hashlib.sha256(data).hexdigest()
    settings = document.get("settings") if isinstance(document, dict) else None
    materialize = settings.get("materialize") if isinstance(settings, dict) else None
    params = materialize.get("create_params") if isinstance(materialize, dict) else None
    if not isinstance(params, dict):
        raise DataError(
            f"{source.run}: no settings.materialize.create_params: not a run file of 'gym eval run'"
        )
    return frozenset(params)


def read_tasks(
    sources: list[Source],
    *,
    pass_threshold: float,
    duplicates: Duplicates,
    drop_run_params: bool = False,
    fields: tuple[str, ...] = (),
    annotate: str | None = None,
) -> ReadResult:
    """Every task of every source, merged by content (see module doc); ``fields`` are the row fields to
    keep a label of, ``annotate`` a key no row may have."""
    tasks: dict[bytes, Task] = {}
    hashes: dict[Path, str] = {}
    rows_read = merged = 0
    for source in sources:
        hasher = hashlib.sha256()
        hashes[source.profile] = ""  # first in the manifest's list; filled in once read
        flags = None if source.health is None else _read_flags(source.health, hashes)
        dropped = _run_params(source, hashes) if drop_run_params else frozenset()
        policy = _adaptive(source)
        outcomes = None if policy is None else _Outcomes()
        source_rows: list[Task] = []
        for number, row in _iter_profile(source.profile, hasher):
            where = f"{os.fspath(source.profile)}:{number}"
            sample = row.get("sample")
            index = row.get("_ng_task_index")
            if not isinstance(sample, dict):
                raise DataError(f"{where}: profile row has no 'sample' object (is this a reward profile?)")
            if type(index) is not int:
                raise DataError(f"{where}: profile row has no integer '_ng_task_index'")
            n, passes, lowest = _measure(row, where, pass_threshold, outcomes, len(source_rows))
            train = training_row(sample, lowest, dropped)
            key = content_key(train)
            rows_read += 1
            task = tasks.get(key)
            if task is None:
                if annotate is not None and annotate in train:
                    raise DataError(
                        f"{where}: the row already has a key {annotate!r}; choose another --annotate key"
                    )
                labels = tuple(field_value(train, name) for name in fields)
                # orjson's bytes keep their ~4 KiB write buffer: an exact-size copy is a tenth of that.
                data = memoryview(orjson.dumps(train)).tobytes()
                task = tasks[key] = Task(data, key, where, labels)
            else:
                if duplicates == "refuse":
                    raise DataError(
                        f"{where}: the same task as {task.where} (equal rows without _ng_* keys and seeds); "
                        "use --duplicates pool to add up their rollouts"
                    )
                task.occurrences += 1
                merged += 1
            task.n += n
            task.passes += passes
            source_rows.append(task)
            if policy is None and n > 0:  # a fixed occurrence's estimate is its s / n
                task.estimate_sum += passes / n
                task.estimate_count += 1
            if flags is not None:
                entry = flags.get(str(index))
                if entry is None:
                    raise DataError(
                        f"{source.health}: no entry for task {index} of {where}; "
                        "is it the health file of another run? Rerun 'gym eval analyze'"
                    )
                task.flags.update(entry[0])
                task.unhealthy += entry[1]
        if policy is not None and outcomes is not None:
            _add_estimates(source_rows, outcomes, policy, pass_threshold)
        hashes[source.profile] = hasher.hexdigest()
    health_read = all(source.health is not None for source in sources)
    return ReadResult(list(tasks.values()), hashes, rows_read, merged, health_read)
