"""The curriculum: which tasks a trainer should roll out next, learned from the rewards it reports.

Contract (in process; ``gym curriculum serve`` puts the same object behind HTTP):

- ``Curriculum(rows, policy=…, group_size=8, seed=0, state_path=None, …)`` over the dataset's rows (a
  sequence of mappings, or an ``int`` for rows that are only their index). Task ``i`` is ``rows[i]``.
- :meth:`Curriculum.next_batch` ``(n, group_size=None)`` → up to ``n`` distinct rows, each a copy of the
  dataset's row with ``_ng_task_index``; every call is one *step* (the unit of the half-life).
- :meth:`Curriculum.report` ``(task_index, rewards)`` → whether the group was informative (its rewards
  not all equal: GRPO learns only from those; a trainer that drops the others is doing DAPO's dynamic
  sampling). It updates the task's discounted passes / failures (a reward ≥ ``pass_threshold`` passes).
- :meth:`Curriculum.state` → :class:`~rewardgym.curriculum.status.CurriculumState`.
- Refused, with the state unchanged: an unknown task index, a report for a task with no served group
  waiting (a duplicate), an empty group, a NaN / infinite reward or one outside ``reward_range`` —
  :mod:`rewardgym.curriculum.errors`. :meth:`Curriculum.report_groups` checks every group of a call
  before it applies any.
- With ``state_path``, every answered call is in the journal before it returns and the arrays are
  snapshotted every ``save_every`` reports (:mod:`rewardgym.curriculum.store`); a new ``Curriculum`` on the
  same path resumes where the last one stopped (same dataset: checked by a fingerprint).
- The pool prior of the posterior model starts as the profile's (cold start: fitted to its counts) or
  :data:`~rewardgym.stats.prior.UNIFORM_PRIOR`; from nothing, it is refitted every :data:`REFIT_EVERY`
  reports to the first groups of tasks never seen before (:mod:`rewardgym.curriculum.firstlook` says why).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from rewardgym.curriculum.catalog import policy_class
from rewardgym.curriculum.checks import check_counts, check_groups, check_tasks, fingerprint
from rewardgym.curriculum.errors import BadReward, DuplicateReport, StateFileError, UnknownTask
from rewardgym.curriculum.firstlook import FirstLooks
from rewardgym.curriculum.policy import Indices, Policy
from rewardgym.curriculum.state import PENDING_MAX, TaskArrays
from rewardgym.curriculum.status import CurriculumState
from rewardgym.curriculum.store import (
    FORMAT,
    Journal,
    JournalEntry,
    entries_after,
    journal_path,
    read_journal,
    read_snapshot,
    write_snapshot,
)
from rewardgym.curriculum.table import SignalTable, quantize, signal_table
from rewardgym.errors import UsageError
from rewardgym.stats.prior import GridPrior, fit_pool_prior

DEFAULT_HALF_LIFE = 400.0
"""Steps after which a reported group counts half (see docs/curriculum.md for the benchmark behind it)."""
DEFAULT_CARRY = 0.5
"""Share of a task's older evidence kept when a new group of it is reported: training on a prompt moves
that prompt's pass rate most, so its last groups say more than its first (docs/curriculum.md)."""
DEFAULT_SAVE_EVERY = 1000
DRIFT_MEMORY = 2000.0
"""Reports over which the drift estimate averages (an exponential moving average)."""
REFIT_EVERY = 2048
"""Reports between two refits of the pool prior."""

Rows = Sequence[Mapping[str, Any]] | int


class Curriculum:
    """See the module docstring."""

    def __init__(
        self,
        rows: Rows,
        policy: str = "expected-signal",
        group_size: int = 8,
        seed: int = 0,
        state_path: str | Path | None = None,
        *,
        half_life: float = DEFAULT_HALF_LIFE,
        carry: float = DEFAULT_CARRY,
        reward_range: tuple[float, float] = (0.0, 1.0),
        pass_threshold: float | None = None,
        passes: npt.ArrayLike | None = None,
        failures: npt.ArrayLike | None = None,
        save_every: int = DEFAULT_SAVE_EVERY,
        fsync: bool = False,
        domain_key: str | None = None,
        policy_options: Mapping[str, Any] | None = None,
    ) -> None:
        self.rows = rows
        size = rows if isinstance(rows, int) else len(rows)
        if size < 1:
            raise UsageError("curriculum: the dataset has no rows")
        if int(group_size) < 1:
            raise UsageError(f"curriculum: group_size must be ≥ 1, got {group_size}")
        if not half_life > 0:
            raise UsageError(
                f"curriculum: half_life must be > 0 steps (inf: no discounting), got {half_life}"
            )
        low, high = (float(v) for v in reward_range)
        if not (math.isfinite(low) and math.isfinite(high) and low < high):
            raise UsageError(
                f"curriculum: reward_range must be two finite numbers low < high, got {reward_range}"
            )
        self.reward_range = (low, high)
        self.pass_threshold = high if pass_threshold is None else float(pass_threshold)
        self.group_size = int(group_size)
        self.seed = int(seed)
        self.half_life = float(half_life)
        if not 0.0 < float(carry) <= 1.0:
            raise UsageError(f"curriculum: carry must be in (0, 1], got {carry}")
        self.carry = float(carry)
        self.save_every = max(1, int(save_every))
        self.rng = np.random.default_rng(self.seed)
        self.step = 0
        self.seq = 0
        self.reports = 0
        self.informative_total = 0
        self.arrays = TaskArrays.empty(size)
        self.fingerprint = fingerprint(rows, size)
        self._domain_key = domain_key
        self._domains: dict[str, Indices] | None = None
        self._tables: dict[tuple[int, float], SignalTable] = {}
        self.drift = 0.0
        """Mean of (a re-served task's pass share − its posterior mean before the group), recent reports
        weighted most (:data:`DRIFT_MEMORY`): how fast the tasks a trainer trains on get easier."""
        self.forecast_drift = 0.0
        """:attr:`drift` as of the last refit (to 0.01): what forecasts use, so their table changes only
        then (a table costs ~10 ms to build)."""
        self._since_save = 0
        self._since_refit = 0
        self.first_looks = FirstLooks()
        self._seeded = passes is not None or failures is not None
        if self._seeded:
            self.arrays.seed_counts(*check_counts(passes, failures, self.size))
        self.prior = self._fit_prior()
        self.policy_name = policy
        self.policy: Policy = policy_class(policy)(self, dict(policy_options or {}))
        self.state_path = Path(state_path) if state_path is not None else None
        self._journal: Journal | None = None
        if self.state_path is not None:
            self._open_store(self.state_path, fsync)

    @classmethod
    def from_profile(cls, rows: Rows, profile: str | Path, **options: Any) -> Curriculum:
        """Cold start from ``gym eval profile``'s ``*_reward_profiling.jsonl``: the pool prior fitted to its
        counts and each task's passes / failures as of step 0 (``options``: those of the constructor)."""
        from rewardgym.curriculum.cold import counts_from_profile

        return cls._cold(rows, counts_from_profile, Path(profile), options)

    @classmethod
    def from_run(cls, rows: Rows, rollouts: str | Path, **options: Any) -> Curriculum:
        """Cold start from the rollouts file of ``gym eval run`` (as :meth:`from_profile`)."""
        from rewardgym.curriculum.cold import counts_from_rollouts

        return cls._cold(rows, counts_from_rollouts, Path(rollouts), options)

    @classmethod
    def _cold(cls, rows: Rows, read: Any, path: Path, options: dict[str, Any]) -> Curriculum:
        size = rows if isinstance(rows, int) else len(rows)
        high = float(options.get("reward_range", (0.0, 1.0))[1])
        threshold = options.get("pass_threshold")
        passes, failures = read(path, size, high if threshold is None else float(threshold))
        return cls(rows, passes=passes, failures=failures, **options)

    # ---- what policies read -------------------------------------------------------------------------
    @property
    def size(self) -> int:
        return self.arrays.size

    def table(self, group: int, drift: float = 0.0) -> SignalTable:
        key = (group, round(drift, 2))
        found = self._tables.get(key)
        if found is None:
            found = self._tables[key] = signal_table(self.prior, group, key[1])
        return found

    def domain_members(self) -> dict[str, Indices] | None:
        """Task indices per domain (``rows[i][domain_key]``), or ``None`` without a ``domain_key``."""
        if self._domain_key is None or isinstance(self.rows, int):
            return None
        if self._domains is None:
            labels = np.array([str(self.rows[i].get(self._domain_key, "")) for i in range(self.size)])
            self._domains = {
                str(label): np.flatnonzero(labels == label).astype(np.int64) for label in np.unique(labels)
            }
        return self._domains

    # ---- the API ------------------------------------------------------------------------------------
    def next_indices(self, n: int, group_size: int | None = None) -> Indices:
        """:meth:`next_batch` without building the rows (for simulators and samplers)."""
        if isinstance(n, bool) or not isinstance(n, int | np.integer) or n < 1:
            raise UsageError(f"next_batch: n must be a positive integer, got {n!r}")
        group = self.group_size if group_size is None else group_size
        if isinstance(group, bool) or not isinstance(group, int | np.integer) or group < 1:
            raise UsageError(f"next_batch: group_size must be a positive integer, got {group!r}")
        tasks = np.asarray(self.policy.select(int(n), int(group)), dtype=np.int64)
        self._apply_batch(tasks)
        self._log({"op": "batch", "tasks": tasks.tolist()})
        return tasks

    def next_batch(self, n: int, group_size: int | None = None) -> list[dict[str, Any]]:
        """Up to ``n`` distinct rows to roll out next, each with its ``_ng_task_index``."""
        return [self.row(int(task)) for task in self.next_indices(n, group_size)]

    def waiting(self, task: int) -> int:
        """Groups of ``task`` served and not yet reported."""
        return int(self.arrays.pending[task])

    def row(self, task: int) -> dict[str, Any]:
        base: dict[str, Any] = {} if isinstance(self.rows, int) else dict(self.rows[task])
        base["_ng_task_index"] = task
        return base

    def report(self, task_index: int, rewards: Iterable[float]) -> bool:
        """Take one group's rewards; returns whether the group was informative (module doc)."""
        return self.report_groups([(task_index, rewards)])[0]

    def report_groups(self, groups: Iterable[tuple[int, Iterable[float]]]) -> list[bool]:
        """Several groups at once: all are checked before any is applied (one error, nothing changed)."""
        checked = check_groups(self, list(groups))
        return [self._take(task, values, log=True) for task, values in checked]

    def state(self, tasks: npt.ArrayLike | None = None) -> CurriculumState:
        """The posterior and the counters of ``tasks`` (every task by default)."""
        index = np.arange(self.size, dtype=np.int64) if tasks is None else check_tasks(self.size, tasks)
        a = self.arrays
        succ, fail = a.counts_at(index, self.step, self.half_life)
        table = self.table(self.group_size)
        qs, qf = quantize(succ), quantize(fail)
        share = self.informative_total / self.reports if self.reports else math.nan
        return CurriculumState(
            step=self.step,
            policy=self.policy_name,
            group_size=self.group_size,
            half_life=self.half_life,
            reports=self.reports,
            informative_share=share,
            prior=self.prior.as_dict(),
            tasks=index,
            served=a.served[index].astype(np.int64),
            reported=a.groups[index].astype(np.int64),
            informative=a.informative[index].astype(np.int64),
            passes=succ.astype(np.float64),
            failures=fail.astype(np.float64),
            pass_mean=table.pass_mean[qs, qf].astype(np.float64),
            p_informative=table.mean[qs, qf].astype(np.float64),
        )

    def save(self) -> None:
        """Snapshot now (atomically) and empty the journal; a no-op without ``state_path``."""
        if self.state_path is None or self._journal is None:
            return
        meta = {
            "format": FORMAT,
            "size": self.size,
            "fingerprint": self.fingerprint,
            "step": self.step,
            "seq": self.seq,
            "reports": self.reports,
            "informative_total": self.informative_total,
            "policy": self.policy_name,
            "policy_state": self.policy.state(),
            "prior_weight": self.prior.weight.tolist(),
            "drift": [self.drift, self.forecast_drift],
        }
        meta["first_looks"] = self.first_looks.count
        extra = {"first_n": self.first_looks.n, "first_s": self.first_looks.s}
        write_snapshot(self.state_path, meta, {**self.arrays.as_dict(), **extra})
        self._journal.clear()
        self._since_save = 0

    def close(self) -> None:
        """Snapshot and release the journal."""
        if self._journal is not None:
            self.save()
            self._journal.close()
            self._journal = None

    def __enter__(self) -> Curriculum:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()

    # ---- internals ----------------------------------------------------------------------------------
    def _take(self, task: int, rewards: list[float], *, log: bool) -> bool:
        passes = float(sum(1 for r in rewards if r >= self.pass_threshold))
        failures = float(len(rewards)) - passes
        informative = max(rewards) > min(rewards)
        a = self.arrays
        if not self._seeded and a.groups[task] == 0:
            self.first_looks.add(len(rewards), int(passes))
        elif a.groups[task] > 0:
            here = np.array([task])
            succ, fail = a.counts_at(here, self.step, self.half_life)
            expected = float(self.table(self.group_size).pass_mean[quantize(succ), quantize(fail)][0])
            self.drift += (passes / len(rewards) - expected - self.drift) / DRIFT_MEMORY
        a.add_group(task, self.step, self.half_life, passes, failures, self.carry)
        a.groups[task] += 1
        a.pending[task] -= 1
        if informative:
            a.informative[task] += 1
            a.streak[task] = 0
        else:
            a.streak[task] = min(int(a.streak[task]) + 1, 32767)
            a.easy[task] = passes > 0
        self.reports += 1
        self.informative_total += int(informative)
        self.policy.observe(task, passes, failures, informative)
        if log:
            self._log({"op": "report", "task": task, "rewards": rewards})
        self._since_refit += 1
        if self._since_refit >= REFIT_EVERY:
            self.prior = self._fit_prior()
            self.forecast_drift = round(self.drift, 2)
            self.table(self.group_size, self.forecast_drift)  # built here, not in the next next_batch
        self._since_save += 1
        if log and self._journal is not None and self._since_save >= self.save_every:
            self.save()
        return informative

    def _apply_batch(self, tasks: Indices) -> None:
        a = self.arrays
        a.served[tasks] += 1
        a.pending[tasks] = np.minimum(a.pending[tasks].astype(np.int64) + 1, PENDING_MAX).astype(np.uint16)
        self.step += 1

    def _log(self, entry: dict[str, Any]) -> None:
        self.seq += 1
        if self._journal is not None:
            self._journal.append({"seq": self.seq, **entry})

    def _fit_prior(self) -> GridPrior:
        """The pool prior: the first looks' once there are enough, else the cold start's counts (as of
        step 0, rounded to whole rollouts) — none: the uniform prior."""
        self._since_refit = 0
        self._tables = {}
        if not self._seeded and self.first_looks.enough:
            return fit_pool_prior(*self.first_looks.pairs())
        if self.reports > 0 and hasattr(self, "prior"):
            return self.prior
        s = np.rint(self.arrays.succ).astype(np.int64)
        return fit_pool_prior(s + np.rint(self.arrays.fail).astype(np.int64), s)

    def _open_store(self, path: Path, fsync: bool) -> None:
        journal = journal_path(path)
        if path.exists():
            self._restore(path)
        entries, valid = read_journal(journal)
        self._journal = Journal(journal, valid, fsync=fsync)
        for entry in entries_after(entries, self.seq):
            self._replay(entry, journal)
        if not path.exists() or self.seq > 0:
            self.save()

    def _restore(self, path: Path) -> None:
        snap = read_snapshot(path)
        meta = snap.meta
        if meta.get("size") != self.size or meta.get("fingerprint") != self.fingerprint:
            raise StateFileError(
                f"{path}: this state belongs to another dataset ({meta.get('size')} tasks, fingerprint "
                f"{meta.get('fingerprint')}; this one has {self.size} tasks, {self.fingerprint})"
            )
        looks = FirstLooks()
        if not looks.restore(
            snap.arrays.pop("first_n", None), snap.arrays.pop("first_s", None), meta.get("first_looks", -1)
        ):
            raise StateFileError(f"{path}: not a usable curriculum state: the first looks do not fit")
        self.first_looks = looks
        arrays = TaskArrays.from_dict(snap.arrays, self.size)
        weight = np.asarray(meta.get("prior_weight", []), dtype=np.float64)
        if isinstance(arrays, str) or weight.shape != self.prior.weight.shape:
            why = arrays if isinstance(arrays, str) else "the prior's weights do not fit"
            raise StateFileError(f"{path}: not a usable curriculum state: {why}")
        self.arrays = arrays
        self.step, self.seq = int(meta["step"]), int(meta["seq"])
        self.reports, self.informative_total = int(meta["reports"]), int(meta["informative_total"])
        self.drift, self.forecast_drift = (float(v) for v in meta.get("drift", [0.0, 0.0]))
        self.prior = GridPrior(self.prior.support, weight, self.prior.fit)
        self._tables = {}
        if meta.get("policy") == self.policy_name:
            self.policy.restore(meta.get("policy_state") or {})

    def _replay(self, entry: JournalEntry, journal: Path) -> None:
        try:
            if entry.op == "batch":
                tasks = check_tasks(self.size, np.asarray(entry.body["tasks"], dtype=np.int64))
                self._apply_batch(tasks)
                self.policy.replayed(tasks)
            else:
                task, values = check_groups(self, [(entry.body["task"], entry.body["rewards"])])[0]
                self._take(task, values, log=False)
        except (KeyError, TypeError, ValueError, UnknownTask, BadReward, DuplicateReport) as exc:
            raise StateFileError(f"{journal}: entry {entry.seq} does not replay: {exc}") from None
        self.seq = entry.seq
