"""``gym eval run ++wandb_project=… / ++mlflow_tracking_uri=…``: NeMo Gym-style exporters after a run.

Contract:

- :func:`trackers_of(cfg)`: the tracker settings (:class:`rewardgym.export.trackers.TrackerSettings`) from
  the config's top-level tracker keys — given as ``++key=value``, in a config file or in ``env.yaml`` — and
  the trackers they switch on, each one's optional extra checked; ``None`` when none is switched on.
  Called before any server starts, so a missing extra costs nothing.
- :func:`export_after_run(rollouts, trackers)`: profiles the finished run (a partial collection allowed:
  a run with failures still has a profile), analyzes it (analysis JSON, health files, HTML report) and
  sends it to each tracker, printing one line each. A failure here never changes the run's exit code —
  the run's files are complete —: it prints what failed and the ``gym eval export`` command that retries.
- ``wandb_api_key`` / ``mlflow_tracking_token`` in the config (NeMo Gym keeps them in ``env.yaml``) are
  handed to the tracker library as ``WANDB_API_KEY`` / ``MLFLOW_TRACKING_TOKEN`` (unless already set)
  after the run's servers stopped, so no server inherits them; they are never printed or sent as data.
- :func:`after_run_files`: every file the run writes after its collection (health files; with trackers
  the profile and the whole analysis), labelled for the run's one output-safety check.
- :func:`without_tracker_keys`: the run fingerprint leaves the tracker keys out, so a ``--resume`` may
  name another tracker run without being refused as a changed config.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer

from rewardgym.config import GymConfig
from rewardgym.config.secrets import redact_text
from rewardgym.errors import RewardGymError

if TYPE_CHECKING:
    from rewardgym.export.trackers import Target, TrackerSettings

_CREDENTIALS = {"wandb_api_key": "WANDB_API_KEY", "mlflow_tracking_token": "MLFLOW_TRACKING_TOKEN"}
TRACKER_KEYS = (
    "wandb_project",
    "wandb_name",
    "wandb_entity",
    "mlflow_tracking_uri",
    "mlflow_experiment_name",
    "mlflow_run_name",
)


def without_tracker_keys(config: dict[str, Any]) -> dict[str, Any]:
    return {key: value for key, value in config.items() if key not in TRACKER_KEYS}


def after_run_files(rollouts: Path, *, health: bool, trackers: bool) -> list[tuple[Path, str]]:
    if not (health or trackers):
        return []  # nothing is written after the run: the analysis and profile stacks stay unloaded
    from rewardgym.analysis.sidecars import output_paths, written_files
    from rewardgym.profile.write.output import output_paths as profile_paths

    files = written_files(output_paths(rollouts), health_only=not trackers)
    if trackers:
        profile = profile_paths(rollouts)
        files += [
            (path, "profile output (written next to --output)")
            for path in (profile.reward_profiling, profile.agent_metrics, profile.repeat_level_metrics)
        ]
    return files


def trackers_of(cfg: GymConfig) -> tuple[TrackerSettings, list[Target]] | None:
    tokens = [f"++{key}={cfg.get(key)}" for key in TRACKER_KEYS if cfg.get(key) not in (None, "")]
    if not tokens:
        return None
    from rewardgym.export.trackers import require, tracker_settings

    settings = tracker_settings(tokens)
    targets = settings.targets()
    for target in targets:
        require(target)
    return (settings, targets) if targets else None


def export_after_run(rollouts: Path, trackers: tuple[TrackerSettings, list[Target]], cfg: GymConfig) -> None:
    from rewardgym.analysis.api import analyze_files
    from rewardgym.export.trackers import export_run
    from rewardgym.profile import profile_files

    settings, targets = trackers
    for key, variable in _CREDENTIALS.items():
        # NeMo Gym's env.yaml keys; handed to the tracker library the way it reads them, only now that
        # every server of the run (which inherits this environment) has stopped.
        value = cfg.get(key)
        if value and not os.environ.get(variable):
            os.environ[variable] = str(value)
    inputs = rollouts.with_name(rollouts.name.removesuffix(".jsonl") + "_materialized_inputs.jsonl")
    try:
        profile_files(inputs, rollouts, allow_partial=True)
        analyze_files(inputs, rollouts)
        for target in targets:
            for line in export_run(target, rollouts, settings):
                typer.echo(line)
    except (RewardGymError, OSError) as exc:
        retry = " ".join(f"--to {t.value}" for t in targets)
        typer.echo(
            f"Tracker export failed ({redact_text(str(exc))}); the run's files are complete. Retry with: "
            f"gym eval profile --inputs {inputs} --rollouts {rollouts} --report && "
            f"gym eval export --rollouts {rollouts} {retry} ++…",
            err=True,
        )
