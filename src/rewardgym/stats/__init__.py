"""The statistics every decision of rewardgym rests on: one posterior model, the tests, the design rules.

A ground-floor package (numpy and scipy's special functions only; no file, no server, nothing of
rewardgym above it):

- ``prior``       — the pool's prior over a task's pass probability, fitted to the pool (empirical Bayes:
  point masses at 0 and 1 plus a Beta, then the nonparametric grid prior), and the priors its data cannot
  rule out;
- ``posterior``   — each task's posterior under a prior: E[p], P(no GRPO signal at G), pass@k, band
  probabilities;
- ``adaptive``    — the stopping rule of ``gym eval run --adaptive`` and its allocation;
- ``sequential``  — per-task estimates unbiased under that rule (Rao–Blackwell), replaying it from a run;
- ``simulate``    — task pools with known p and fixed / adaptive runs of them (the calibration suite's
  truth); ``design_cost`` — what an adaptive design costs against fixed repeats;
- ``clustered``   — the within-task permutation test; ``signed_rank`` — Wilcoxon; ``tinterval`` — the
  Student-t interval of NeMo Gym's files; ``special`` — scipy's special functions without the package.

docs/analysis.md § "Which number uses which model" maps every printed number to one of these.
"""

from __future__ import annotations

import importlib
from typing import Any

_PUBLIC = {
    "GridPrior": "prior",
    "Prior": "prior",
    "PriorFit": "prior",
    "fit_pool_prior": "prior",
    "fit_prior": "prior",
    "fit_priors": "prior",
    "TaskPosterior": "posterior",
    "posterior": "posterior",
}
__all__ = [
    "GridPrior",
    "Prior",
    "PriorFit",
    "TaskPosterior",
    "fit_pool_prior",
    "fit_prior",
    "fit_priors",
    "posterior",
]


def __getattr__(name: str) -> Any:
    # Lazy: a module that needs only ``special`` or ``tinterval`` does not load the posterior model.
    module = _PUBLIC.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"rewardgym.stats.{module}"), name)
