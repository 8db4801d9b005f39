"""Where a run goes besides tables: W&B, MLflow or an inspect_ai log — settings and dispatch.

Contract:

- :class:`TrackerSettings` holds the NeMo Gym exporter keys (``wandb_project``, ``wandb_name``,
  ``wandb_entity``, ``mlflow_tracking_uri``, ``mlflow_experiment_name``, ``mlflow_run_name``) given as
  ``++key=value`` tokens (:func:`tracker_settings`). An unknown key is a usage error with a "did you mean";
  ``wandb_api_key`` / ``mlflow_tracking_token`` are refused: a secret on the command line is visible in
  ``ps``, so the trackers' own credential mechanisms are used instead (``WANDB_API_KEY`` or
  ``wandb login``; ``MLFLOW_TRACKING_TOKEN``), and rewardgym never reads or forwards them.
- :meth:`TrackerSettings.targets` lists the trackers the keys switch on (``wandb_project`` → W&B,
  ``mlflow_tracking_uri`` → MLflow), as ``++key`` on ``gym eval profile`` does.
- :func:`export_run(target, rollouts, settings, out)` sends one run (see :mod:`.record`) and returns one
  line per place it went; an error of the tracker library (an unreachable server, a refused login) is a
  :class:`~rewardgym.errors.ServerError` of one line naming the tracker. Each tracker library is
  imported only here, on use; a missing one is a :class:`~rewardgym.errors.UsageError` naming the
  ``pip install 'rewardgym[…]'`` that adds it.
"""

from __future__ import annotations

import difflib
import importlib.util
import tempfile
from pathlib import Path

from rewardgym.errors import RewardGymError, ServerError, UsageError
from rewardgym.export.tracker_types import Target, TrackerSettings

__all__ = [
    "KEYS",
    "Target",
    "TrackerSettings",
    "export_run",
    "require",
    "tracker_settings",
]

_MODULES = {Target.WANDB: "wandb", Target.MLFLOW: "mlflow", Target.INSPECT: "inspect_ai"}
_SECRET_KEYS = {
    "wandb_api_key": "set WANDB_API_KEY in the environment or run 'wandb login'",
    "mlflow_tracking_token": "set MLFLOW_TRACKING_TOKEN in the environment",
}
KEYS = tuple(TrackerSettings.model_fields)


def tracker_settings(tokens: list[str]) -> TrackerSettings:
    """Settings from ``++key=value`` / ``+key=value`` tokens (the last of a key wins; see module doc)."""
    values: dict[str, str] = {}
    for token in tokens:
        key, sep, value = token.lstrip("+").partition("=")
        if not sep:
            raise UsageError(f"override {token!r} must be written ++key=value")
        if key in _SECRET_KEYS:
            raise UsageError(
                f"'{key}' is not accepted on the command line (visible in ps): {_SECRET_KEYS[key]}"
            )
        if key not in KEYS:
            hint = difflib.get_close_matches(key, KEYS, n=1)
            more = f" (did you mean '{hint[0]}'?)" if hint else f" (known: {', '.join(KEYS)})"
            raise UsageError(f"unknown override '{key}'{more}")
        values[key] = value
    return TrackerSettings(**values)


def require(target: Target) -> None:
    """A clear error when the optional library of ``target`` is not installed."""
    module = _MODULES.get(target)
    if module is None:
        return
    try:
        found = importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):  # a broken or half-removed install counts as absent
        found = False
    if not found:
        raise UsageError(
            f"exporting to {target.value} needs the optional extra: pip install 'rewardgym[{target.value}]'"
        )


def export_run(
    target: Target, rollouts: Path, settings: TrackerSettings, out: Path | None = None
) -> list[str]:
    """Send the run at ``rollouts`` to ``target`` (not ``tables``: :func:`.api.export_files`); one
    printable line per place it went."""
    if target is Target.TABLES:
        raise ValueError("tables are written by rewardgym.export.api.export_files")
    require(target)
    if target is Target.INSPECT:
        from rewardgym.export.inspect_log import write_inspect_log

        path, samples = write_inspect_log(rollouts, out)
        return [
            f"Wrote {path} ({samples} samples; browse with: inspect view --log-dir {path.parent.resolve()})"
        ]
    from rewardgym.export.record import run_record

    with tempfile.TemporaryDirectory(prefix="rewardgym-export-") as tables:
        record = run_record(rollouts, Path(tables))
        try:
            if target is Target.WANDB:
                from rewardgym.export.wandb_sink import send_to_wandb

                return send_to_wandb(record, settings)
            from rewardgym.export.mlflow_sink import send_to_mlflow

            return send_to_mlflow(record, settings)
        except RewardGymError:
            raise
        except Exception as exc:  # the tracker library's own errors (unreachable server, refused login…)
            first = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
            raise ServerError(f"{target.value} export failed: {type(exc).__name__}: {first}") from exc
