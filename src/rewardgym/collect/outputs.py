"""Names of the files a collection run writes next to its ``--output`` (NeMo Gym's naming)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path


def sibling(path: Path, suffix: str, extension: str) -> Path:
    """``out/rollouts.jsonl`` + ``_failures``, ``.jsonl`` → ``out/rollouts_failures.jsonl``."""
    return path.with_name(f"{path.stem}{suffix}{extension}")


@dataclass(frozen=True)
class RunOutputs:
    """Every file of one collection run, derived from the rollouts path."""

    rollouts: Path

    @property
    def materialized(self) -> Path:
        return sibling(self.rollouts, "_materialized_inputs", ".jsonl")

    @property
    def failures(self) -> Path:
        return sibling(self.rollouts, "_failures", ".jsonl")

    @property
    def aggregate_metrics(self) -> Path:
        return sibling(self.rollouts, "_aggregate_metrics", ".json")

    @property
    def fingerprint(self) -> Path:
        return sibling(self.rollouts, "_run", ".json")

    @property
    def lock(self) -> Path:
        """The run lock (see :mod:`rewardgym.collect.runlock`)."""
        return self.rollouts.with_name(f".{self.rollouts.name}.lock")

    def labelled(self) -> list[tuple[Path, str]]:
        """Every file the run may write, each with how messages name it (for
        :func:`rewardgym.io.outputs.guard_outputs`)."""
        beside = "written next to --output"
        return [
            (self.rollouts, "--output"),
            *((path, f"output ({beside})") for path in (self.materialized, *self.stale()[1:])),
            (self.lock, f"run lock ({beside})"),
        ]

    def stale(self) -> list[Path]:
        """Outputs a fresh run replaces (the materialized file is rewritten atomically, not listed)."""
        return [self.rollouts, self.failures, self.aggregate_metrics, self.fingerprint]
