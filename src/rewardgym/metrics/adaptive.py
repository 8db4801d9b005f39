"""The decision rule of adaptive repeats (``gym eval run --adaptive``): which tasks need more rollouts.

Contract (pure; numpy in, numpy out; no files, no servers):

- Each task has ``n`` counted rollouts (stored, with a reward) of which ``s`` passed (``reward >=
  pass_threshold``), and ``allocated`` materialized rows (counted, failed for good or still pending).
- **Default decision, "is the task informative for GRPO"** (is its pass probability p in (0, 1)?):
  a task with at least one pass and one fail is settled (informative: no amount of data can change that).
  An all-fail task is settled as "never solved" once P(p > 0 | 0 of n) <= 1 - confidence, an all-pass
  task as "always solved" once P(p < 1 | n of n) <= 1 - confidence. Those posteriors come from an
  empirical-Bayes prior over p fitted to the run's own tasks every round: a point mass at 0 (weight
  π0), one at 1 (π1) and a Beta(a, b) for the tasks in between (πm = 1 − π0 − π1), so
  P(p > 0 | 0 of n) = πm·B(a, b + n)/B(a, b) / (π0 + πm·B(a, b + n)/B(a, b)) — "how likely is a task
  that can be solved to show no pass in n trials, given how the run's tasks spread". The fit is a
  posterior mode with weak pseudo-counts (:data:`PSEUDO_TASKS` tasks spread evenly over the three
  parts, a log-normal prior around a = b = 1), so a run of few tasks stays close to a uniform prior and
  needs many repeats before it calls a task never / always solved.
- **Band boundary** (``boundary=b``): is p above b? Settled once the Jeffreys posterior Beta(s + ½,
  n − s + ½) — the interval of :mod:`rewardgym.analysis.uncertainty` — puts at least ``confidence`` of
  its mass on one side of b.
- A task with ``allocated >= max_per_task`` is never given more (it stays unsettled if undecided).
- :func:`allocate` gives every unsettled task below the cap ``step`` more rollouts (fewer at the cap);
  with a ``budget`` (total materialized rollouts of the run, the initial round included) the tasks with
  the fewest rollouts are served first, ties by task order, and a round never exceeds what is left.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from rewardgym.profile.compute.special import ufuncs

IntArray = npt.NDArray[np.int64]
FloatArray = npt.NDArray[np.float64]
BoolArray = npt.NDArray[np.bool_]

PSEUDO_TASKS = 6.0
"""Weight of the prior of the prior: as if six more tasks had been seen, two in each part."""
_SHAPE_GRID = np.geomspace(0.05, 50.0, 41)
"""Beta shapes the fit considers: 0.05 (mass piled at the edges) to 50 (a narrow bump)."""


@dataclass(frozen=True)
class AdaptivePolicy:
    """How ``--adaptive`` spends repeats (every field is recorded in the run fingerprint)."""

    initial: int = 2
    """Rollouts every task gets first (``--adaptive-initial``): two already settle half of the p = ½ tasks."""
    max_per_task: int = 16
    """Never more materialized rollouts per task (``--adaptive-max``)."""
    budget: int | None = None
    """Total materialized rollouts of the run, initial round included (``--adaptive-budget``)."""
    step: int | None = None
    """Rollouts added per unsettled task and round (``--adaptive-step``; default: ``initial``)."""
    confidence: float = 0.95
    """Posterior probability a decision needs (``--adaptive-confidence``)."""
    boundary: float | None = None
    """Decide "is p above this pass rate" instead of "is p in (0, 1)" (``--adaptive-boundary``)."""
    pass_threshold: float = 1.0
    """A rollout passes when ``reward >= pass_threshold`` (as in ``gym eval analyze``)."""

    @property
    def round_step(self) -> int:
        return self.step if self.step is not None else self.initial

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, value: dict[str, Any]) -> AdaptivePolicy:
        known = {k: v for k, v in value.items() if k in cls.__dataclass_fields__}
        return cls(**known)

    def problems(self) -> list[str]:
        """What is wrong with these settings, in command-line terms (empty when valid)."""
        found = []
        least = 1 if self.boundary is not None else 2
        if self.initial < least:
            # One rollout per task cannot tell a task that is sometimes solved from one never solved, so
            # the prior fitted to the run would be a guess.
            why = "" if least == 1 else " (one rollout per task says nothing about tasks in between)"
            found.append(f"--adaptive-initial must be >= {least}, got {self.initial}{why}")
        if self.max_per_task < self.initial:
            found.append(
                f"--adaptive-max ({self.max_per_task}) must be >= --adaptive-initial ({self.initial})"
            )
        if self.budget is not None and self.budget < 1:
            found.append(f"--adaptive-budget must be >= 1, got {self.budget}")
        if self.step is not None and self.step < 1:
            found.append(f"--adaptive-step must be >= 1, got {self.step}")
        if not 0.5 < self.confidence < 1:
            found.append(f"--adaptive-confidence must be in (0.5, 1), got {self.confidence}")
        if self.boundary is not None and not 0 < self.boundary < 1:
            found.append(f"--adaptive-boundary must be a pass rate in (0, 1), got {self.boundary}")
        return found


@dataclass(frozen=True)
class Prior:
    """The empirical-Bayes prior over p: point masses at 0 and 1 and a Beta(a, b) in between."""

    never: float
    always: float
    a: float
    b: float

    @property
    def between(self) -> float:
        return max(0.0, 1.0 - self.never - self.always)


UNIFORM_PRIOR = Prior(1 / 3, 1 / 3, 1.0, 1.0)


def fit_prior(n: IntArray, s: IntArray) -> Prior:
    """Posterior-mode fit of :class:`Prior` to tasks with ``n`` counted rollouts and ``s`` passes.

    The Beta shape is searched on a log grid (:data:`_SHAPE_GRID`, steps of 19 %), the three weights by EM
    for the best shape, alternately until both stop changing — plain numpy over the distinct (n, s)
    pairs, so a round of 10^6 tasks costs milliseconds (and no optimizer import).
    """
    seen = n > 0
    if not np.any(seen):
        return UNIFORM_PRIOR
    betaln, gammaln = ufuncs().betaln, ufuncs().gammaln  # scipy's, without importing scipy.special

    pairs, counts_ = np.unique(np.stack([n[seen], s[seen]], axis=1), axis=0, return_counts=True)
    counts = counts_.astype(np.float64)
    nn = pairs[:, 0].astype(np.float64)
    ss = pairs[:, 1].astype(np.float64)
    log_choose = gammaln(nn + 1) - gammaln(ss + 1) - gammaln(nn - ss + 1)
    a = _SHAPE_GRID[:, None, None]
    b = _SHAPE_GRID[None, :, None]
    # log P(s | n, Beta(a, b)) for every grid shape and pair; the shapes' log-normal prior around 1
    middle = (log_choose + betaln(a + ss, b + nn - ss) - betaln(a, b)).reshape(-1, len(nn))
    shape_prior = -0.5 * (np.log(a) ** 2 + np.log(b) ** 2).reshape(-1)
    lik_zero = (ss == 0).astype(np.float64)
    lik_one = (ss == nn).astype(np.float64)
    pseudo = PSEUDO_TASKS / 3
    weights = np.full(3, 1 / 3)
    best = -1
    for _ in range(200):
        with np.errstate(divide="ignore"):
            fixed = np.logaddexp(np.log(weights[0] * lik_zero), np.log(weights[1] * lik_one))
        score = np.logaddexp(fixed, np.log(weights[2]) + middle) @ counts + shape_prior
        chosen = int(np.argmax(score))
        parts = np.stack([weights[0] * lik_zero, weights[1] * lik_one, weights[2] * np.exp(middle[chosen])])
        share = parts / parts.sum(axis=0)
        updated = (share @ counts + pseudo) / (counts.sum() + 3 * pseudo)
        if chosen == best and np.allclose(updated, weights, atol=1e-7):
            break
        weights, best = updated, chosen
    a_best, b_best = np.unravel_index(best, (len(_SHAPE_GRID), len(_SHAPE_GRID)))
    return Prior(float(weights[0]), float(weights[1]), float(_SHAPE_GRID[a_best]), float(_SHAPE_GRID[b_best]))


def p_solvable_given_all_fail(n: IntArray, prior: Prior) -> FloatArray:
    """P(p > 0 | no pass in n rollouts) under ``prior``."""
    betaln = ufuncs().betaln
    between = prior.between * np.exp(betaln(prior.a, prior.b + n) - betaln(prior.a, prior.b))
    return np.asarray(between / (prior.never + between), dtype=np.float64)


def p_failable_given_all_pass(n: IntArray, prior: Prior) -> FloatArray:
    """P(p < 1 | n passes in n rollouts) under ``prior``."""
    mirrored = Prior(prior.always, prior.never, prior.b, prior.a)
    return p_solvable_given_all_fail(n, mirrored)


def unsettled(n: IntArray, s: IntArray, policy: AdaptivePolicy, prior: Prior | None = None) -> BoolArray:
    """Whether each task's decision is still open (see the module doc). ``n == 0`` is always open."""
    doubt = 1.0 - policy.confidence
    if policy.boundary is not None:
        betainc = ufuncs().betainc
        below = betainc(s + 0.5, n - s + 0.5, policy.boundary)  # Jeffreys P(p <= boundary)
        return np.asarray((n == 0) | ((below < policy.confidence) & (below > doubt)), dtype=np.bool_)
    prior = prior if prior is not None else fit_prior(n, s)
    open_fail = (s == 0) & (p_solvable_given_all_fail(n, prior) > doubt)
    open_pass = (s == n) & (p_failable_given_all_pass(n, prior) > doubt)
    return np.asarray((n == 0) | open_fail | open_pass, dtype=np.bool_)


def allocate(
    allocated: IntArray, open_: BoolArray, policy: AdaptivePolicy, *, spent: int | None = None
) -> IntArray:
    """Rollouts to add per task this round (zeros when nothing is left to do).

    ``spent`` is the run's materialized rollouts so far (default: ``allocated.sum()``), checked against
    ``policy.budget``.
    """
    room = np.maximum(policy.max_per_task - allocated, 0)
    add = np.where(open_, np.minimum(room, policy.round_step), 0).astype(np.int64)
    if policy.budget is None:
        return add
    left = policy.budget - (int(allocated.sum()) if spent is None else spent)
    if left <= 0:
        return np.zeros_like(add)
    if int(add.sum()) <= left:
        return add
    order = np.lexsort((np.arange(allocated.shape[0]), allocated))  # fewest rollouts first, then order
    wanted = add[order]
    before = np.cumsum(wanted) - wanted
    granted = np.clip(left - before, 0, wanted)
    out = np.zeros_like(add)
    out[order] = granted
    return out


def classify(n: IntArray, s: IntArray, policy: AdaptivePolicy, prior: Prior | None = None) -> list[str]:
    """A word per task for the summary: informative / never / always / above / below / open."""
    open_ = unsettled(n, s, policy, prior)
    words = []
    for count, passes, is_open in zip(n.tolist(), s.tolist(), open_.tolist(), strict=True):
        if is_open:
            words.append("open")
        elif policy.boundary is not None:
            words.append("above" if passes / count > policy.boundary else "below")
        elif 0 < passes < count:
            words.append("informative")
        else:
            words.append("never" if passes == 0 else "always")
    return words
