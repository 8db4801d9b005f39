"""One run as one MLflow run (imports ``mlflow``: only used through
:func:`rewardgym.export.trackers.export_run`).

Contract of :func:`send_to_mlflow(record, settings)`:

- ``MlflowClient(tracking_uri=mlflow_tracking_uri)`` (``MLFLOW_TRACKING_URI`` when the key is absent;
  credentials are MLflow's own, e.g. ``MLFLOW_TRACKING_TOKEN``); a ``file:`` URI or a plain path opts in
  to MLflow's file store (``MLFLOW_ALLOW_FILE_STORE=true``, which MLflow 3 otherwise refuses); HTTP
  calls are retried 3 times with backoff factor 1 unless ``MLFLOW_HTTP_REQUEST_MAX_RETRIES`` /
  ``MLFLOW_HTTP_REQUEST_BACKOFF_FACTOR`` say otherwise (an unreachable server fails in seconds, not 4
  minutes); the experiment
  ``mlflow_experiment_name`` (default ``rewardgym``) is created when missing; the run is named
  ``mlflow_run_name`` or the run's stem. The client API is used, not the fluent one, so no tag is read
  from the machine (user, source file, git commit).
- params: the run's redacted settings; metrics: every metric of the record (step 0); tags: the record's
  texts. Names are mapped onto what MLflow accepts (``@`` → ``_at_``, any other character outside
  letters, digits, ``_ - . / : space`` → ``_``; over 250 characters cut in the middle); param and tag
  values are cut at MLflow's limits. A name that maps onto one already sent is left out.
- artifacts: ``report/<stem>_report.html``, ``tables/`` (the Parquet tables of ``gym eval export``),
  ``files/`` (analysis and aggregate-metrics JSON), ``bands.json`` and, for at most
  :data:`MAX_TABLE_ROWS` tasks, ``tasks.json`` (``{"columns": […], "data": [[…]]}``).
- the run ends ``FINISHED``, or ``FAILED`` when sending stopped half-way (the error is raised).
"""

from __future__ import annotations

import os
import re
import time
from typing import Any

import orjson
from mlflow import MlflowClient
from mlflow.entities import Metric, Param, RunTag

from rewardgym.export.record import RunRecord
from rewardgym.export.tracker_types import TrackerSettings

MAX_TABLE_ROWS = 10_000
_HTTP_DEFAULTS = {"MLFLOW_HTTP_REQUEST_MAX_RETRIES": "3", "MLFLOW_HTTP_REQUEST_BACKOFF_FACTOR": "1"}
"""MLflow's own defaults (7 retries, factor 2) take 4 minutes to give up on an unreachable server."""
_NAME_LIMIT = 250
_PARAM_LIMIT = 6000
_TAG_LIMIT = 8000
_BAD = re.compile(r"[^\w\-./: ]")


def mlflow_name(name: str) -> str:
    """``name`` as MLflow accepts it (see module doc)."""
    out = _BAD.sub("_", name.replace("@", "_at_"))
    out = "/".join(part if part.strip(".") else "_" * len(part) for part in out.split("/")) or "_"
    if len(out) > _NAME_LIMIT:
        keep = _NAME_LIMIT - 3
        out = out[: keep - keep // 2] + "___" + out[len(out) - keep // 2 :]
    return out


def _chunks(items: list[Any], size: int) -> list[list[Any]]:
    return [items[i : i + size] for i in range(0, len(items), size)]


def _unique(items: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in items.items():
        out.setdefault(mlflow_name(key), value)
    return out


def _param(value: Any) -> str:
    return value if isinstance(value, str) else orjson.dumps(value).decode()


def _experiment(client: MlflowClient, name: str) -> str:
    found = client.get_experiment_by_name(name)
    return found.experiment_id if found is not None else client.create_experiment(name)


def send_to_mlflow(record: RunRecord, settings: TrackerSettings) -> list[str]:
    uri = settings.mlflow_tracking_uri
    if uri is not None and (uri.startswith("file:") or "://" not in uri):
        # MLflow 3 refuses its file store unless opted in; naming one explicitly is that choice.
        os.environ.setdefault("MLFLOW_ALLOW_FILE_STORE", "true")
    for variable, value in _HTTP_DEFAULTS.items():
        os.environ.setdefault(variable, value)
    client = MlflowClient(tracking_uri=uri)
    experiment = _experiment(client, settings.mlflow_experiment_name or "rewardgym")
    run_id = client.create_run(experiment, run_name=settings.mlflow_run_name or record.name).info.run_id
    try:
        now = int(time.time() * 1000)
        params = [Param(k, _param(v)[:_PARAM_LIMIT]) for k, v in _unique(record.params).items()]
        metrics = [Metric(k, v, now, 0) for k, v in _unique(record.metrics).items()]
        tags = [RunTag(k, v[:_TAG_LIMIT]) for k, v in _unique(record.texts).items()]
        for chunk in _chunks(params, 100):
            client.log_batch(run_id, params=chunk)
        for chunk in _chunks(metrics, 1000):
            client.log_batch(run_id, metrics=chunk)
        for chunk in _chunks(tags, 100):
            client.log_batch(run_id, tags=chunk)
        client.log_dict(
            run_id,
            {"columns": ["band", "tasks", "share"], "data": [list(b) for b in record.bands]},
            "bands.json",
        )
        if record.tasks.height <= MAX_TABLE_ROWS:
            table = {"columns": record.tasks.columns, "data": [list(r) for r in record.tasks.rows()]}
            client.log_dict(run_id, table, "tasks.json")
        for path, _ in record.tables.written:
            client.log_artifact(run_id, str(path), "tables")
        for path in record.files:
            client.log_artifact(run_id, str(path), "files")
        if record.report is not None:
            client.log_artifact(run_id, str(record.report), "report")
    except BaseException:
        client.set_terminated(run_id, status="FAILED")
        raise
    client.set_terminated(run_id, status="FINISHED")
    where = f"MLflow run {run_id} ({client.tracking_uri})"
    return [f"Sent {len(metrics)} metrics, {len(params)} params and the artifacts to {where}"]
