"""One run as one W&B run (imports ``wandb``: only used through :func:`rewardgym.export.trackers.export_run`).

Contract of :func:`send_to_wandb(record, settings)`:

- ``wandb.init(project=wandb_project or "rewardgym", name=wandb_name or the run's stem,
  entity=wandb_entity)``; the mode, credentials and folder are W&B's own (``WANDB_MODE=offline``,
  ``WANDB_API_KEY`` / ``wandb login``, ``WANDB_DIR``; without ``WANDB_DIR`` the run folder is ``wandb/``
  beside the rollouts). System metadata, system metrics, console capture, code and git capture are off:
  the run holds what we send and nothing read from the machine (no command line, no environment).
- config: the run's redacted settings (:attr:`RunRecord.params`); summary: every metric and text of the
  record; tables: ``bands`` (band, tasks, share) and ``tasks`` (per task; when it has at most
  :data:`MAX_TABLE_ROWS` rows — the full table is always in the artifact); ``report``: the HTML report
  as ``wandb.Html``;
- one artifact ``<stem>-results`` of type ``evaluation`` with the HTML report, the Parquet tables of
  ``gym eval export`` and the analysis / aggregate-metrics JSON.
"""

from __future__ import annotations

import os
from typing import Any

import wandb

from rewardgym.export.record import RunRecord
from rewardgym.export.tracker_types import TrackerSettings

MAX_TABLE_ROWS = 10_000
"""Above this many tasks the per-task table goes only into the artifact (W&B's logged-table limit)."""


def send_to_wandb(record: RunRecord, settings: TrackerSettings) -> list[str]:
    folder = None if os.environ.get("WANDB_DIR") else record.rollouts.parent
    run = wandb.init(
        project=settings.wandb_project or "rewardgym",
        name=settings.wandb_name or record.name,
        entity=settings.wandb_entity,
        dir=None if folder is None else str(folder),
        config=dict(record.params),
        settings=wandb.Settings(
            console="off",
            save_code=False,
            disable_git=True,
            silent=True,
            x_disable_meta=True,
            x_disable_stats=True,
        ),
    )
    failed = True
    try:
        summary: dict[str, Any] = {**record.metrics, **record.texts}
        run.summary.update(summary)
        logged: dict[str, Any] = {
            "bands": wandb.Table(columns=["band", "tasks", "share"], data=[list(b) for b in record.bands])
        }
        if record.tasks.height <= MAX_TABLE_ROWS:
            logged["tasks"] = wandb.Table(
                columns=list[str | int](record.tasks.columns), data=[list(r) for r in record.tasks.rows()]
            )
        if record.report is not None:
            logged["report"] = wandb.Html(record.report.read_text(encoding="utf-8"), inject=False)
        run.log(logged)
        artifact = wandb.Artifact(f"{record.name}-results", type="evaluation")
        for path in (*(p for p, _ in record.tables.written), *record.files):
            artifact.add_file(str(path))
        if record.report is not None:
            artifact.add_file(str(record.report))
        run.log_artifact(artifact)
        where = run.dir if run.offline else run.url
        failed = False
    finally:
        run.finish(exit_code=1 if failed else 0)
    return [f"Sent {len(record.metrics)} metrics, {len(logged)} tables/media and 1 artifact to W&B: {where}"]
