"""The settings of one collection run (``gym eval run``'s flags and config, resolved)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rewardgym.collect.curriculum_feed import CurriculumFeed
from rewardgym.collect.failures import RetryPolicy
from rewardgym.collect.materialize import MaterializeOptions
from rewardgym.stats.adaptive_policy import AdaptivePolicy


@dataclass
class CollectSettings:
    """Everything that shapes one collection run."""

    output: Path
    """The rollouts file (``--output``); sibling files are derived from it."""
    input: Path | None = None
    """The input rows (``--input``); not read on ``--resume``."""
    materialize: MaterializeOptions = field(default_factory=MaterializeOptions)
    concurrency: int = 32
    """Rollouts in flight at once (``--concurrency``)."""
    retry: RetryPolicy = field(default_factory=RetryPolicy)
    rollout_timeout_s: float = 900.0
    """Timeout of one ``/run`` call (``++rollout_timeout_s``)."""
    fail_fast: bool = False
    resume: bool = False
    force: bool = False
    """Resume even though the fingerprint changed."""
    retry_failed: bool = False
    """On resume, run failed keys again regardless of the attempts they used."""
    disable_aggregation: bool = False
    shard: tuple[int, int] | None = None
    """``(i, n)`` of ``--shard i/n``: only the rows whose task index is ``i`` modulo ``n`` (all repeats of a
    task stay in one shard, so ``gym eval aggregate`` merges disjoint shards)."""
    fingerprint_settings: Mapping[str, Any] = field(default_factory=dict)
    """Redacted settings recorded in the run fingerprint (config minus secrets, repeats, overrides)."""
    live_progress: bool | None = None
    read_files: tuple[tuple[Path, str], ...] = ()
    """Other files the command reads (config files, ``--prompt-config``), each with what it is: no output
    may be one of them."""
    capture_dir: Path | None = None
    """``++model_call_capture_dir`` when ``++observability_enabled``: rows get the capture, the trajectory and
    0.7.0's ``ng_perf`` (:mod:`rewardgym.observe.projection`); None keeps rows as they are without it."""
    adaptive: AdaptivePolicy | None = None
    """``--adaptive``: materialize ``initial`` repeats, then rounds (:mod:`rewardgym.collect.adaptive`). On
    resume, None means "as the run was started" (its fingerprint says)."""
    curriculum: CurriculumFeed | None = None
    """``--from-curriculum``: the batches after the first (:mod:`rewardgym.collect.curriculum_feed`)."""
