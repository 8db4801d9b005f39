"""No secret reaches a tracker: a real ``gym eval run ++wandb_project=… ++mlflow_tracking_uri=…`` (W&B
offline, MLflow file store) whose model API key sits in ``env.yaml`` beside a ``wandb_api_key`` (NeMo
Gym's place for it), then ``gym eval profile ++wandb_project=…`` with the key in
``$REWARDGYM_MODEL_API_KEY`` and the run exported as an inspect_ai log — then every file any of them wrote
(the W&B run file, its media, staging and logs; the MLflow store; the log; Parquet tables unpacked) is
searched for the key.

The stub's request log proves the key really went upstream, and the tracker files are checked to hold the
run (its config and metrics), so the search is not vacuous.
"""

from __future__ import annotations

import io
from pathlib import Path

import orjson
import polars as pl
import pytest

from tests.export import wandb_file
from tests.reliability.secrets.test_secrets import (
    API_KEY,
    MCQA,
    RUN,
    gym,
    leaks,
    upstream,
    write_env_yaml,
    written_files,
)
from tests.stubs.openai_stub import OpenAIStub

__all__ = ["upstream"]  # the module-scoped stub upstream fixture, shared with test_secrets

pytestmark = pytest.mark.slow


def searchable(data: bytes) -> bytes:
    """What a file holds, unpacked: a Parquet table's rows as CSV (its compressed pages would hide a key
    from the search)."""
    if data[:4] == b"PAR1":
        return pl.read_parquet(io.BytesIO(data)).write_csv().encode()
    return data


def test_trackers_and_inspect_log_hold_no_key(
    tmp_path: Path, upstream: tuple[str, OpenAIStub], monkeypatch: pytest.MonkeyPatch
) -> None:
    url, stub = upstream
    write_env_yaml(tmp_path, f"{url}/v1")
    with (tmp_path / "env.yaml").open("a") as env_yaml:  # NeMo Gym keeps the tracker key there too
        env_yaml.write(f"wandb_api_key: {API_KEY}\n")
    monkeypatch.setenv("WANDB_MODE", "offline")
    for name in ("WANDB_DIR", "WANDB_DATA_DIR", "WANDB_CACHE_DIR", "WANDB_CONFIG_DIR"):
        (tmp_path / name.lower()).mkdir()
        monkeypatch.setenv(name, str(tmp_path / name.lower()))
    monkeypatch.delenv("WANDB_API_KEY", raising=False)
    store = (tmp_path / "mlruns").as_uri()
    run = gym("eval", "run", *RUN, "--input", str(MCQA), "--num-repeats", "2", "-o", "out/rollouts.jsonl",
              "--log-dir", "out/logs", "++wandb_project=secrets", f"++mlflow_tracking_uri={store}",
              cwd=tmp_path)  # fmt: skip
    assert run.returncode == 0, run.stdout + run.stderr
    assert "to W&B" in run.stdout and "to MLflow" in run.stdout, run.stdout + run.stderr
    assert f"Bearer {API_KEY}" in {r["headers"].get("authorization") for r in stub.requests}

    monkeypatch.setenv("REWARDGYM_MODEL_API_KEY", API_KEY)  # in the environment the trackers start in
    profile = gym("eval", "profile", "--inputs", "out/rollouts_materialized_inputs.jsonl",
                  "--rollouts", "out/rollouts.jsonl", "++wandb_project=secrets-profile",
                  cwd=tmp_path)  # fmt: skip
    assert profile.returncode == 0, profile.stdout + profile.stderr
    inspect = gym("eval", "export", "--rollouts", "out/rollouts.jsonl", "--to", "inspect", cwd=tmp_path)
    assert inspect.returncode == 0, inspect.stdout + inspect.stderr

    run_files = sorted((tmp_path / "wandb_dir").rglob("run-*.wandb"))
    projects = {wandb_file.by_kind(path)["run"][0].project: path for path in run_files}
    assert set(projects) == {"secrets", "secrets-profile"}
    run_file = projects["secrets"]
    assert (
        "wandb_project"
        not in orjson.loads((tmp_path / "out/rollouts_run.json").read_bytes())["settings"]["config"]
    )
    assert wandb_file.config(run_file)["run.materialize.num_repeats"] == 2  # the run's settings went
    assert wandb_file.summary(run_file)["profile/tasks"] > 0
    assert any((tmp_path / "mlruns").rglob("metrics/profile/mean_reward"))
    assert (tmp_path / "out/rollouts_inspect.json").stat().st_size > 0

    files = {name: searchable(data) for name, data in written_files(tmp_path).items()}
    assert any(name.startswith("wandb_data_dir/") for name in files)  # the artifact staging is searched
    assert b"mcqa" in files["out/rollouts_inspect.json"]  # the samples are searched
    assert any(b"_ng_task_index" in data for name, data in files.items() if name.endswith(".parquet"))
    leaked = {name: leaks(data) for name, data in files.items() if leaks(data)}
    assert not leaked, leaked
    assert not leaks(
        run.stdout + run.stderr + profile.stdout + profile.stderr + inspect.stdout + inspect.stderr
    )
