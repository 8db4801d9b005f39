"""Names of the files a collection run writes next to its ``--output`` (NeMo Gym's naming), and how a row
is stored: :func:`stored_line` masks every known secret (an API key or token the config registered) in
the row's JSON as it is written — an upstream that echoes the key in a normal answer must not put it into
``rollouts.jsonl`` and from there into reports, Parquet or trackers. Only registered values are masked:
text that merely looks like a credential is data and stays."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

from rewardgym.config.secrets import mask_known_secrets


def stored_line(row: Any) -> bytes:
    """``row`` as one stored JSONL line (without the newline), known secrets masked."""
    return mask_known_secrets(orjson.dumps(row))


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
