"""The settings of one ``gym data select``: what to keep and in which order (plain values, so a manifest
can store them and :func:`options_from_dict` can rebuild the same selection).

Contract: :meth:`SelectOptions.validate` raises a :class:`~rewardgym.errors.UsageError` for a value out
of range or a combination that means nothing (``--quota`` without ``--by``, ``--stratify`` without
``--limit``, a Gaussian schedule without stages…), so a bad command line writes nothing.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, fields
from typing import Any, Literal

from rewardgym.errors import UsageError

Order = Literal["original", "random", "hardest-first", "easiest-first"]
Schedule = Literal["none", "curriculum", "gaussian"]
ORDERS: tuple[Order, ...] = ("original", "random", "hardest-first", "easiest-first")
SCHEDULES: tuple[Schedule, ...] = ("none", "curriculum", "gaussian")
BAND_NAMES = ("0", "0-20", "20-40", "40-60", "60-80", "80-100", "100")
"""Short names of the analysis' bands 0 %, (0–20 %], …, (80–100 %), 100 % (same order)."""


def band_index(name: str) -> int:
    """The band a short name (``0-20``) or a profile label (``(0–20 %]``) stands for."""
    from rewardgym.profile import BAND_LABELS

    cleaned = name.strip().replace("%", "").replace(" ", "").replace("–", "-")
    if cleaned in BAND_NAMES:
        return BAND_NAMES.index(cleaned)
    if name in BAND_LABELS:
        return BAND_LABELS.index(name)
    raise UsageError(f"--band {name!r}: not a band; use one of {', '.join(BAND_NAMES)}")


@dataclass(frozen=True)
class SelectOptions:
    """Every setting of a selection (the CLI flags of the same names)."""

    min_pass_rate: float | None = None
    max_pass_rate: float | None = None
    bands: tuple[str, ...] = ()
    settled_only: bool = False
    drop_flagged: bool = False
    drop_unhealthy_rollouts: bool = False
    by: str | None = None
    quota: int | None = None
    stratify: str | None = None
    limit: int | None = None
    order: Order = "original"
    schedule: Schedule = "none"
    stages: int = 4
    stage_size: int | None = None
    mean_start: float = 0.9
    mean_end: float = 0.1
    sigma: float = 0.15
    replace: bool = False
    annotate: str | None = None
    seed: int = 0
    pass_threshold: float = 1.0
    settle_epsilon: float = 0.05
    duplicates: Literal["pool", "refuse"] = "pool"
    drop_run_params: bool = False

    def validate(self) -> None:
        for name in ("min_pass_rate", "max_pass_rate", "mean_start", "mean_end"):
            value = getattr(self, name)
            if value is not None and not (0.0 <= value <= 1.0):
                raise UsageError(f"--{name.replace('_', '-')} must be within [0, 1], got {value}")
        low, high = self.min_pass_rate, self.max_pass_rate
        if low is not None and high is not None and low > high:
            raise UsageError(f"--min-pass-rate {low} is above --max-pass-rate {high}")
        for band in self.bands:
            band_index(band)
        if (self.quota is None) != (self.by is None):
            raise UsageError("--by FIELD and --quota N go together (at most N tasks per value of FIELD)")
        for name in ("quota", "limit", "stage_size"):
            value = getattr(self, name)
            if value is not None and value < 1:
                raise UsageError(f"--{name.replace('_', '-')} must be at least 1, got {value}")
        if self.stratify is not None and self.limit is None:
            raise UsageError("--stratify FIELD needs --limit N (the size of the stratified sample)")
        if self.order not in ORDERS:
            raise UsageError(f"--order must be one of {', '.join(ORDERS)}, got {self.order!r}")
        if self.schedule not in SCHEDULES:
            raise UsageError(f"--schedule must be one of {', '.join(SCHEDULES)}, got {self.schedule!r}")
        if self.schedule != "none" and self.order != "original":
            raise UsageError("--order and --schedule both set the order of the rows: give one of them")
        if self.stages < 1:
            raise UsageError(f"--stages must be at least 1, got {self.stages}")
        if not (math.isfinite(self.sigma) and self.sigma > 0):
            raise UsageError(f"--sigma must be a positive number, got {self.sigma}")
        if self.schedule != "gaussian" and (self.stage_size is not None or self.replace):
            raise UsageError("--stage-size and --replace apply to --schedule gaussian only")
        if self.annotate is not None and (not self.annotate or self.annotate.startswith("_ng_")):
            raise UsageError(f"--annotate {self.annotate!r}: give a key name that does not start with _ng_")
        if not math.isfinite(self.pass_threshold):
            raise UsageError(f"--pass-threshold must be a number, got {self.pass_threshold}")
        if not (0.0 <= self.settle_epsilon < 0.2):  # as gym eval analyze
            raise UsageError(f"--settle-epsilon must lie in [0, 0.2), got {self.settle_epsilon}")
        if type(self.seed) is not int or not 0 <= self.seed <= 2**64 - 1:
            raise UsageError(f"--seed {self.seed!r}: a seed is an integer from 0 to 2**64 - 1")
        if self.duplicates not in ("pool", "refuse"):
            raise UsageError(f"--duplicates must be pool or refuse, got {self.duplicates!r}")

    @property
    def domain_field(self) -> str:
        """The row field the manifest counts per value: ``--by``, else ``--stratify``, else the agent."""
        return self.by or self.stratify or "agent_ref.name"

    def as_dict(self) -> dict[str, Any]:
        values = asdict(self)
        values["bands"] = list(self.bands)
        return values


_INTS = ("quota", "limit", "stages", "stage_size", "seed")
_BOOLS = tuple(f.name for f in fields(SelectOptions) if f.type in ("bool", bool))
"""Every switch of the options (from their types: a new switch is checked without being listed here)."""
_TEXTS = ("by", "stratify", "annotate", "order", "schedule", "duplicates")


def _typed(name: str, value: Any) -> bool:
    if name in _INTS:
        return type(value) is int
    if name in _BOOLS:
        return type(value) is bool
    if name in _TEXTS:
        return isinstance(value, str)
    if name == "bands":
        return isinstance(value, list) and all(isinstance(b, str) for b in value)
    return type(value) in (int, float) and math.isfinite(value)


def options_from_dict(values: dict[str, Any]) -> SelectOptions:
    """The options a manifest recorded (unknown keys are an error: a manifest of another version)."""
    known = {f.name for f in fields(SelectOptions)}
    unknown = sorted(set(values) - known)
    if unknown:
        raise UsageError(f"the manifest records settings this version does not know: {', '.join(unknown)}")
    values = dict(values)
    for name, value in values.items():  # a tampered manifest: each setting of the type its flag takes
        if value is not None and not _typed(name, value):
            raise UsageError(
                f"setting {name!r} holds {value!r}, not a value --{name.replace('_', '-')} takes"
            )
    values["bands"] = tuple(values.get("bands", ()))
    options = SelectOptions(**values)
    options.validate()
    return options
