"""The trackers' settings types: which tracker (:class:`Target`), with which keys (:class:`TrackerSettings`).

Kept apart from :mod:`.trackers` (which parses the keys and dispatches to a sink) so that the sinks
(:mod:`.wandb_sink`, :mod:`.mlflow_sink`) take their settings from here and never import the dispatcher
that imports them.
"""

from __future__ import annotations

from enum import StrEnum

from pydantic import BaseModel, ConfigDict


class Target(StrEnum):
    TABLES = "tables"
    WANDB = "wandb"
    MLFLOW = "mlflow"
    INSPECT = "inspect"


class TrackerSettings(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    wandb_project: str | None = None
    wandb_name: str | None = None
    wandb_entity: str | None = None
    mlflow_tracking_uri: str | None = None
    mlflow_experiment_name: str | None = None
    mlflow_run_name: str | None = None

    def targets(self) -> list[Target]:
        out = []
        if self.wandb_project:
            out.append(Target.WANDB)
        if self.mlflow_tracking_uri:
            out.append(Target.MLFLOW)
        return out
