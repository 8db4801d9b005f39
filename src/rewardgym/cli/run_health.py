"""The closing health check of ``gym eval run`` / ``gym eval reverify``: its settings (checked before
anything starts) and the check itself after the run.

Kept apart from ``analyze_cmd``: a collection imports the analysis stack only when it runs the check.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import orjson
import typer

from rewardgym.analysis.check_ids import ignored_check_ids
from rewardgym.config import GymConfig
from rewardgym.errors import UsageError

if TYPE_CHECKING:
    from rewardgym.analysis.api import AnalyzeResult

__all__ = ["closing_health", "health_after_run", "health_workers", "ignored_checks", "print_health"]


def ignored_checks(value: object, option: str, *, refuse_blank: bool = False) -> tuple[str, ...]:
    """The check ids of ``--ignore-checks`` / ``++health_check_ignored_checks`` (a usage error, exit 2,
    names an unknown one)."""
    try:
        return ignored_check_ids(value, refuse_blank=refuse_blank)
    except ValueError as exc:
        raise UsageError(f"{option}: {exc}") from None


def health_workers(value: object, option: str) -> int | None:
    """``--workers`` / ``++health_check_workers``: None (one per core, as the scan does) or an int ≥ 1."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise UsageError(f"{option}: workers must be at least 1, got {value!r}")
    return value


def closing_health(
    cfg: GymConfig, disabled: bool, workers: int | None, ignore: str | None
) -> tuple[tuple[str, ...], int | None] | None:
    """(ignored checks, workers) of the closing health check, or None when it is off (flags, else keys)."""
    setting = cfg.get("disable_health_check", False)
    if not isinstance(setting, bool):
        raise UsageError(f"disable_health_check must be true or false, got {setting!r}")
    if disabled or setting:
        return None
    ignored = ignored_checks(
        ignore if ignore is not None else cfg.get("health_check_ignored_checks"),
        "--health-check-ignore" if ignore is not None else "health_check_ignored_checks",
        refuse_blank=ignore is not None,
    )
    count = health_workers(
        workers if workers is not None else cfg.get("health_check_workers"),
        "--health-check-workers" if workers is not None else "health_check_workers",
    )
    return ignored, count


def health_after_run(rollouts: Path, *, ignored: tuple[str, ...] = (), workers: int | None = None) -> None:
    """``gym eval run``'s closing health check (never changes the run's exit code)."""
    if not rollouts.is_file():
        return
    from rewardgym.analysis.api import analyze_files
    from rewardgym.analysis.document import Settings

    try:
        settings = Settings(ignored_checks=ignored)
        result = analyze_files(None, rollouts, settings, strict=False, health_only=True, workers=workers)
    except Exception as exc:
        typer.echo(
            f"Rollout health checks failed after collection ({exc}); rollout artifacts are still available."
        )
        return
    print_health(result)


def print_health(result: AnalyzeResult) -> None:
    summary = orjson.loads(result.paths.quality.read_bytes())
    verdicts = summary["run"]["verdicts"]
    records = summary["run"]["artifacts"]["records"]
    ignored = summary["run"]["ignored_checks"]
    suffix = f" (ignored: {', '.join(ignored)})" if ignored else ""
    typer.echo(
        f"Rollout health: {records} checked, {verdicts['healthy']} healthy, "
        f"{verdicts['unhealthy']} unhealthy, {verdicts['unobserved']} unobserved{suffix}"
    )
    typer.echo(f"Quality summary: {result.paths.quality}")
    from rewardgym.analysis.summary import health_lines

    for line in health_lines(result):
        typer.echo(line)
