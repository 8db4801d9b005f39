"""The pool's prior over a task's pass probability p, fitted to the pool itself (empirical Bayes).

Contract:

- :class:`Prior` is a mixture: a point mass at p = 0 (weight ``never``: tasks no rollout can solve), one at
  p = 1 (``always``) and a Beta(a, b) for the tasks in between (weight ``between``). Pools users have are
  like that — many tasks never or always solved, the rest spread — and a plain Beta cannot hold mass *at*
  0 or 1, which is why a Jeffreys-only forecast was 5–14 points off on them.
- :func:`fit_prior(n, s)` fits it to tasks with ``n`` counted rollouts and ``s`` passes by maximum
  marginal likelihood: P(s | n) = never·[s = 0] + always·[s = n] + between·C(n, s)·B(a + s, b + n − s) /
  B(a, b), summed in log over the tasks. The weights are found by EM for each Beta shape, the shape on a
  log grid (0.05 … 50, 41 points: steps of 19 %) refined by a finer grid around the best point; both over
  the distinct (n, s) pairs only, so 10^6 tasks cost milliseconds.
- **Few tasks**: the fit adds :data:`PSEUDO_TASKS` weak pseudo-tasks (spread evenly over the three parts)
  and a log-normal prior on the shapes around a = b = 1, so a pool of a handful of tasks stays close to
  :data:`UNIFORM_PRIOR` (a third never, a third always, a uniform Beta) rather than declaring every
  unsolved task impossible; from a few hundred tasks on the data decide. No task seen: the uniform prior.
- **Non-binary rewards** enter as pass / fail at the caller's pass threshold (the prior is over the pass
  probability); callers that need the distribution of a continuous reward do not use this model.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from rewardgym.stats.arrays import FloatArray, IntArray
from rewardgym.stats.special import ufuncs

PSEUDO_TASKS = 6.0
"""Weight of the prior of the prior: as if six more tasks had been seen, two in each part."""
_SHAPE_GRID = np.geomspace(0.05, 50.0, 41)
"""Beta shapes the coarse search considers: 0.05 (mass piled at the edges) to 50 (a narrow bump)."""
_REFINE = np.geomspace(1 / 1.19, 1.19, 13)
"""Factors of the fine search around the best coarse shape (steps of 3 %)."""


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

    def as_dict(self) -> dict[str, float]:
        return {"never": self.never, "always": self.always, "between": self.between, "a": self.a, "b": self.b}

    def mirrored(self) -> Prior:
        """The prior of 1 − p (passes and failures swapped)."""
        return Prior(self.always, self.never, self.b, self.a)


UNIFORM_PRIOR = Prior(1 / 3, 1 / 3, 1.0, 1.0)


def _pairs(n: IntArray, s: IntArray) -> tuple[FloatArray, FloatArray, FloatArray]:
    """Distinct ``(n, s)`` of the tasks with ``n > 0`` and how many tasks have each."""
    seen = n > 0
    nn, ss = n[seen].astype(np.int64), s[seen].astype(np.int64)
    base = int(nn.max(initial=0)) + 1
    keys, counts = np.unique(nn * base + ss, return_counts=True)  # one integer per pair: a 1-d unique
    return ((keys // base).astype(np.float64), (keys % base).astype(np.float64), counts.astype(np.float64))


def _fit_weights(
    middle: FloatArray, lik_zero: FloatArray, lik_one: FloatArray, counts: FloatArray
) -> tuple[FloatArray, FloatArray]:
    """EM for the three weights at every shape at once (``middle``: log P(s | n, Beta) per shape and pair).

    Returns the weights per shape and the penalized log marginal likelihood per shape."""
    pseudo = PSEUDO_TASKS / 3
    shapes = middle.shape[0]
    weights = np.full((shapes, 3), 1 / 3)
    beta_lik = np.exp(middle)
    for _ in range(300):
        parts = np.stack(
            [
                weights[:, :1] * lik_zero[None, :],
                weights[:, 1:2] * lik_one[None, :],
                weights[:, 2:] * beta_lik,
            ],
            axis=1,
        )
        total = parts.sum(axis=1, keepdims=True)
        share = parts / np.where(total > 0, total, 1.0)
        updated = (share @ counts + pseudo) / (counts.sum() + 3 * pseudo)
        done = bool(np.allclose(updated, weights, atol=1e-8))
        weights = updated
        if done:
            break
    with np.errstate(divide="ignore"):
        mixture = np.log(
            weights[:, :1] * lik_zero[None, :]
            + weights[:, 1:2] * lik_one[None, :]
            + weights[:, 2:] * beta_lik
        )
    score = mixture @ counts + pseudo * np.log(weights).sum(axis=1)
    return weights, score


def _log_beta_binomial(nn: FloatArray, ss: FloatArray, a: FloatArray, b: FloatArray) -> FloatArray:
    """log C(n, s) B(a + s, b + n − s) / B(a, b) for every shape (rows) and pair (columns)."""
    betaln, gammaln = ufuncs().betaln, ufuncs().gammaln  # scipy's, without importing scipy.special
    log_choose = gammaln(nn + 1) - gammaln(ss + 1) - gammaln(nn - ss + 1)
    value = log_choose[None, :] + betaln(a[:, None] + ss, b[:, None] + nn - ss) - betaln(a, b)[:, None]
    return np.asarray(value, dtype=np.float64)


@dataclass(frozen=True)
class _Scored:
    """Every candidate shape's weights (by EM) and penalized log marginal likelihood."""

    a: FloatArray
    b: FloatArray
    weights: FloatArray
    score: FloatArray

    def prior(self, k: int) -> Prior:
        return Prior(float(self.weights[k, 0]), float(self.weights[k, 1]), float(self.a[k]), float(self.b[k]))


def _scored(nn: FloatArray, ss: FloatArray, counts: FloatArray, a: FloatArray, b: FloatArray) -> _Scored:
    lik_zero = (ss == 0).astype(np.float64)
    lik_one = (ss == nn).astype(np.float64)
    middle = _log_beta_binomial(nn, ss, a, b)
    weights, score = _fit_weights(middle, lik_zero, lik_one, counts)
    score = score - 0.5 * (np.log(a) ** 2 + np.log(b) ** 2)  # the shapes' weak log-normal prior around 1
    return _Scored(a, b, weights, np.asarray(score, dtype=np.float64))


@dataclass(frozen=True, eq=False)
class PriorFit:
    """The fitted prior and the priors the data cannot tell from it."""

    best: Prior
    plausible: FloatArray
    """Rows ``(never, always, a, b)`` of the priors whose log marginal likelihood is within
    :data:`PLAUSIBLE_DROP` of the best (the best first): a likelihood-ratio region. With few rollouts per
    task a point mass at 0 and a Beta piled near 0 explain the data almost equally well; decisions that
    must not be talked into a mistake by that ambiguity take the least favourable of these."""

    @staticmethod
    def single(prior: Prior) -> PriorFit:
        return PriorFit(prior, np.array([[prior.never, prior.always, prior.a, prior.b]], np.float64))


PLAUSIBLE_DROP = 3.0
"""Log-likelihood drop that still counts as plausible (≈ the 95 % likelihood-ratio region of the two
Beta shapes, χ²₂(0.95) / 2)."""


def fit_priors(n: IntArray, s: IntArray) -> PriorFit:
    """:class:`PriorFit` of tasks with ``n`` counted rollouts and ``s`` passes (see module doc)."""
    if not np.any(n > 0):
        return PriorFit.single(UNIFORM_PRIOR)
    nn, ss, counts = _pairs(n, s)
    grid_a, grid_b = np.meshgrid(_SHAPE_GRID, _SHAPE_GRID, indexing="ij")
    coarse = _scored(nn, ss, counts, grid_a.reshape(-1), grid_b.reshape(-1))
    top = int(np.argmax(coarse.score))
    fine_a, fine_b = np.meshgrid(coarse.a[top] * _REFINE, coarse.b[top] * _REFINE, indexing="ij")
    fine = _scored(nn, ss, counts, fine_a.reshape(-1), fine_b.reshape(-1))
    best_k = int(np.argmax(fine.score))
    best = fine.prior(best_k)
    near = coarse.score >= float(fine.score[best_k]) - PLAUSIBLE_DROP
    rows = np.column_stack([coarse.weights[near, 0], coarse.weights[near, 1], coarse.a[near], coarse.b[near]])
    first = np.array([[best.never, best.always, best.a, best.b]], np.float64)
    return PriorFit(best, np.asarray(np.concatenate([first, rows]), dtype=np.float64))


def fit_prior(n: IntArray, s: IntArray) -> Prior:
    """Maximum (penalized) marginal likelihood fit of :class:`Prior` (see module doc)."""
    return fit_priors(n, s).best


def marginal_log_likelihood(n: IntArray, s: IntArray, prior: Prior) -> float:
    """log P(every task's s | its n) under ``prior`` (for checks and for comparing priors)."""
    nn, ss, counts = _pairs(n, s)
    beta = np.exp(_log_beta_binomial(nn, ss, np.array([prior.a]), np.array([prior.b]))[0])
    with np.errstate(divide="ignore"):
        each = np.log(prior.never * (ss == 0) + prior.always * (ss == nn) + prior.between * beta)
    return float(each @ counts)


GRID_POINTS = 100
"""Interior support points of the pool prior (bin midpoints of [0, 1] in steps of 1 %)."""
_EM_STEPS = 500
GRID_PSEUDO_TASKS = 0.5
"""Weight of the parametric fit in the grid's fit: half a task. Enough to give every support point some
mass when a pool has a handful of tasks; more flattens a pool's real shape (6 pseudo-tasks put a
two-bump pool's forecast 6 points off)."""


@dataclass(frozen=True, eq=False)
class GridPrior:
    """The pool prior the posterior numbers use: weights on p = 0, on 100 points in between and on p = 1.

    Fitted by nonparametric maximum likelihood (the Kiefer–Wolfowitz NPMLE, by EM) starting from the
    parametric :class:`Prior` fit and shrunk toward it by :data:`GRID_PSEUDO_TASKS`: a single Beta
    between the point masses cannot hold a pool with two bumps (tasks near 10 % and near 90 %), which put
    its forecast 4–15 points off; the grid holds any shape the data show."""

    support: FloatArray
    weight: FloatArray
    fit: PriorFit
    """The parametric fit the grid started from, with the priors its data cannot rule out."""

    @property
    def parametric(self) -> Prior:
        return self.fit.best

    @property
    def never(self) -> float:
        return float(self.weight[0])

    @property
    def always(self) -> float:
        return float(self.weight[-1])

    def as_dict(self) -> dict[str, Any]:
        return {
            "fit": "nonparametric maximum likelihood on p = 0, 0.005, 0.015, ..., 0.995, 1",
            "never": self.never,
            "always": self.always,
            "between": max(0.0, 1.0 - self.never - self.always),
            "mean": float(self.weight @ self.support),
            "parametric": self.parametric.as_dict(),
        }


def grid_support() -> FloatArray:
    middle = (np.arange(GRID_POINTS) + 0.5) / GRID_POINTS
    return np.asarray(np.concatenate([[0.0], middle, [1.0]]), dtype=np.float64)


def discretize(prior: Prior) -> FloatArray:
    """``prior`` as weights on :func:`grid_support` (each Beta bin's mass on its midpoint)."""
    betainc = ufuncs().betainc
    edges = np.linspace(0.0, 1.0, GRID_POINTS + 1)
    mass = np.diff(betainc(prior.a, prior.b, edges))
    middle = prior.between * mass / max(float(mass.sum()), 1e-300)
    return np.asarray(np.concatenate([[prior.never], middle, [prior.always]]), dtype=np.float64)


def likelihood(n: FloatArray, s: FloatArray, support: FloatArray) -> FloatArray:
    """P(the observed sequence | p) for every (n, s) row and support point (no binomial coefficient)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        log_p = np.where(support > 0, np.log(np.where(support > 0, support, 1.0)), -np.inf)
        log_q = np.where(support < 1, np.log(np.where(support < 1, 1.0 - support, 1.0)), -np.inf)
        s_term = np.where(s[:, None] > 0, s[:, None] * log_p[None, :], 0.0)
        f_term = np.where((n - s)[:, None] > 0, (n - s)[:, None] * log_q[None, :], 0.0)
    return np.asarray(np.exp(s_term + f_term), dtype=np.float64)


def fit_pool_prior(n: IntArray, s: IntArray) -> GridPrior:
    """:class:`GridPrior` of tasks with ``n`` counted rollouts and ``s`` passes."""
    fit = fit_priors(n, s)
    support = grid_support()
    start = discretize(fit.best)
    if not np.any(n > 0):
        return GridPrior(support, start, fit)
    nn, ss, counts = _pairs(n, s)
    lik = likelihood(nn, ss, support)
    weight = start.copy()
    total = float(counts.sum())
    for _ in range(_EM_STEPS):
        joint = lik * weight[None, :]
        share = joint / np.maximum(joint.sum(axis=1, keepdims=True), 1e-300)
        updated = (counts @ share + GRID_PSEUDO_TASKS * start) / (total + GRID_PSEUDO_TASKS)
        if float(np.abs(updated - weight).max()) < 1e-9:
            weight = updated
            break
        weight = updated
    return GridPrior(support, np.asarray(weight, dtype=np.float64), fit)
