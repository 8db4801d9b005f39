"""``gym eval export --to wandb|mlflow|inspect`` and ``gym eval profile ++wandb_project=…``: each run read
back with the tool's own reader — W&B offline (the run file), MLflow from a local file store (its client),
inspect_ai (``read_eval_log``) — and compared with the run's files."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
import polars as pl
import pytest

from tests.export import wandb_file
from tests.export.run import FAILURE, REWARDS, build_run
from tests.profile.helpers import REPO, gym

pytestmark = pytest.mark.slow  # real CLI processes and tracker libraries (~5-10 s each)


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A profiled and analyzed run with its HTML report: ``run.jsonl`` in the returned folder."""
    folder = tmp_path_factory.mktemp("run")
    inputs, rollouts = build_run(folder)
    done = gym("eval", "analyze", "--inputs", str(inputs), "--rollouts", str(rollouts))
    assert done.returncode == 0, done.stderr
    assert (folder / "run_report.html").is_file()
    return folder


@pytest.fixture
def wandb_env(tmp_path: Path) -> Iterator[Path]:
    """W&B offline, every folder it writes inside ``tmp_path / "wandb"``."""
    root = tmp_path / "wandb"
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("WANDB_MODE", "offline")
        for name, sub in (("WANDB_DIR", "runs"), ("WANDB_DATA_DIR", "data"), ("WANDB_CACHE_DIR", "cache")):
            (root / sub).mkdir(parents=True)
            patch.setenv(name, str(root / sub))
        patch.setenv("WANDB_CONFIG_DIR", str(root / "config"))
        patch.delenv("WANDB_API_KEY", raising=False)
        yield root


def _task_means() -> dict[int, float]:
    return {task: sum(values) / len(values) for task, values in REWARDS.items()}


def test_wandb_offline_run_holds_metrics_tables_and_report(run: Path, wandb_env: Path) -> None:
    done = gym("eval", "export", "--rollouts", str(run / "run.jsonl"), "--to", "wandb",
               "++wandb_project=rg-tests", "++wandb_name=nightly")  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "to W&B" in done.stdout
    [run_file] = list((wandb_env / "runs").rglob("run-*.wandb"))
    records = wandb_file.by_kind(run_file)
    header = records["run"][0]
    assert (header.project, header.display_name) == ("rg-tests", "nightly")
    assert "environment" not in records, "machine metadata (command line, host…) was captured"

    summary = wandb_file.summary(run_file)
    means = _task_means()
    assert summary["profile/mean_reward"] == pytest.approx(sum(means.values()) / 3)
    assert summary["profile/tasks"] == 3
    assert summary["profile/band/0"] == 1 and summary["profile/band/60-80"] == 2
    for agent, values in _agent_metrics(run).items():
        assert summary[f"agent/{agent}/mean/reward"] == values["mean/reward"]
    assert summary["analysis/uncertainty.tasks"] == 3
    assert summary["analysis/run.failures.total"] == 1
    assert summary["analysis/health.verdict"] == _verdict(run)
    assert wandb_file.config(run_file)["analysis.pass_threshold"] == 1.0

    tables = {p.name.split("_")[0]: p for p in (run_file.parent / "files/media/table").glob("*.table.json")}
    assert set(tables) == {"bands", "tasks"}
    tasks = orjson.loads(tables["tasks"].read_bytes())
    column = tasks["columns"].index("mean/reward")
    assert {row[0]: row[column] for row in tasks["data"]} == pytest.approx(means)
    bands = orjson.loads(tables["bands"].read_bytes())
    assert [row[1] for row in bands["data"]] == [1, 0, 0, 0, 2, 0, 0]
    assert "report" in summary or "report._type" in summary  # the HTML report as media

    [artifact] = [a for a in records["artifact"] if a.type == "evaluation"]
    assert artifact.name == "run-results"
    contents = {c.path: c for c in artifact.manifest.contents}
    assert {"run_report.html", "run_tasks.parquet", "run_rollouts.parquet", "run_analysis.json"} <= set(
        contents
    )
    assert contents["run_report.html"].size == (run / "run_report.html").stat().st_size


def test_mlflow_file_store_run_holds_metrics_params_and_artifacts(run: Path, tmp_path: Path) -> None:
    from mlflow import MlflowClient

    store = (tmp_path / "mlruns").as_uri()
    # no --to: the tracking URI alone chooses MLflow (and no tables are written)
    done = gym("eval", "export", "--rollouts", str(run / "run.jsonl"), f"++mlflow_tracking_uri={store}",
               "++mlflow_experiment_name=rg", "++mlflow_run_name=nightly")  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "to MLflow" in done.stdout and not (run / "run_tasks.parquet").exists()
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("MLFLOW_ALLOW_FILE_STORE", "true")
        client = MlflowClient(tracking_uri=store)
        experiment = client.get_experiment_by_name("rg")
        assert experiment is not None
        [found] = client.search_runs([experiment.experiment_id])
        assert found.info.run_name == "nightly" and found.info.status == "FINISHED"
        metrics, params, tags = found.data.metrics, found.data.params, found.data.tags
        assert metrics["profile/mean_reward"] == pytest.approx(sum(_task_means().values()) / 3)
        for agent, values in _agent_metrics(run).items():
            assert metrics[f"agent/{agent}/mean/reward"] == values["mean/reward"]
        assert metrics["profile/band/0"] == 1.0
        assert metrics["analysis/run.failures.total"] == 1.0
        assert params["analysis.pass_threshold"] == "1.0"
        assert params["analysis.group_sizes"] == "[2,4,8,16,32,64]"
        assert tags["analysis/health.verdict"] == _verdict(run)
        listed = {
            a.path
            for folder in ("", "tables", "report", "files")
            for a in client.list_artifacts(found.info.run_id, folder)
        }
        assert {"report/run_report.html", "tables/run_tasks.parquet", "tables/run_rollouts.parquet",
                "files/run_analysis.json", "bands.json", "tasks.json"} <= listed  # fmt: skip
        local = Path(
            client.download_artifacts(found.info.run_id, "tables/run_rollouts.parquet", str(tmp_path))
        )
        rollouts = pl.read_parquet(local)
        assert rollouts.height == 12 and rollouts["failure_class"].drop_nulls().to_list() == ["timeout"]
        report = Path(client.download_artifacts(found.info.run_id, "report/run_report.html", str(tmp_path)))
        assert report.read_bytes() == (run / "run_report.html").read_bytes()


def test_inspect_log_has_one_sample_per_rollout(run: Path, tmp_path: Path) -> None:
    from inspect_ai.log import read_eval_log

    done = gym(
        "eval", "export", "--rollouts", str(run / "run.jsonl"), "--to", "inspect", "--out", str(tmp_path)
    )
    assert done.returncode == 0, done.stderr
    log = read_eval_log(str(tmp_path / "run_inspect.json"))
    assert log.status == "success" and log.samples is not None
    scored = [s for s in log.samples if s.error is None]
    failed = [s for s in log.samples if s.error is not None]
    rows = {(r["_ng_task_index"], r["_ng_rollout_index"]): r for r in _rollouts(run / "run.jsonl")}
    assert len(scored) == len(rows) == 11
    for sample in scored:
        key = (sample.metadata["_ng_task_index"], sample.metadata["_ng_rollout_index"])
        assert (sample.id, sample.epoch) == (key[0], key[1] + 1)
        assert sample.scores is not None and sample.scores["reward"].value == rows[key]["reward"]
        assert sample.metadata["agent"] == rows[key]["agent_ref"]["name"]
        assert sample.input and sample.output.completion == _text(rows[key])
    task, rollout = FAILURE["_ng_task_index"], FAILURE["_ng_rollout_index"]
    assert isinstance(task, int) and isinstance(rollout, int)
    assert [(s.id, s.epoch) for s in failed] == [(task, rollout + 1)]
    assert failed[0].error is not None and failed[0].error.message == "timeout: no answer within 30 s"
    assert log.results is not None
    assert log.results.scores[0].metrics["mean"].value == pytest.approx(
        sum(r["reward"] for r in rows.values()) / 11
    )


def test_profile_sends_to_the_tracker_its_keys_name(run: Path, tmp_path: Path, wandb_env: Path) -> None:
    for path in run.iterdir():
        if path.name in ("run.jsonl", "run_materialized_inputs.jsonl", "run_failures.jsonl"):
            (tmp_path / path.name).write_bytes(path.read_bytes())
    done = gym("eval", "profile", "--inputs", str(tmp_path / "run_materialized_inputs.jsonl"),
               "--rollouts", str(tmp_path / "run.jsonl"), "--allow-partial-rollouts",
               "++wandb_project=rg-profile")  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "to W&B" in done.stdout
    [run_file] = list((wandb_env / "runs").rglob("run-*.wandb"))
    assert wandb_file.by_kind(run_file)["run"][0].project == "rg-profile"
    assert wandb_file.summary(run_file)["profile/tasks"] == 3


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["++wandb_projet=x"], "did you mean 'wandb_project'"),
        (["++wandb_api_key=abcdef123456"], "WANDB_API_KEY"),
        (["++mlflow_tracking_token=abcdef123456"], "MLFLOW_TRACKING_TOKEN"),
        (["--to", "tensorboard"], "tensorboard"),
    ],
)
def test_bad_tracker_arguments_exit_2_before_anything(run: Path, args: list[str], message: str) -> None:
    before = sorted(p.name for p in run.iterdir())
    done = gym("eval", "export", "--rollouts", str(run / "run.jsonl"), "--to", "wandb", *args)
    assert done.returncode == 2, done.stdout + done.stderr
    assert message in done.stderr and "abcdef123456" not in done.stderr
    assert sorted(p.name for p in run.iterdir()) == before


def _verdict(run: Path) -> str:
    verdict = orjson.loads((run / "run_analysis.json").read_bytes())["health"]["verdict"]
    assert isinstance(verdict, str) and verdict
    return verdict


def _agent_metrics(run: Path) -> dict[str, dict[str, Any]]:
    rows = orjson.loads((run / "run_agent_metrics.json").read_bytes())
    assert rows, "no agent metrics to compare with"
    return {row["agent_ref"]["name"]: row for row in rows}


def _rollouts(path: Path) -> list[dict[str, Any]]:
    return [orjson.loads(line) for line in path.read_bytes().splitlines()]


def _text(row: dict[str, Any]) -> str:
    return "".join(
        part["text"]
        for item in row["response"]["output"]
        if item.get("type") == "message"
        for part in item["content"]
        if part.get("type") == "output_text"
    )


def _without(tmp_path: Path, *modules: str) -> dict[str, str]:
    """An environment whose interpreter cannot import ``modules`` (a ``sitecustomize`` hides them)."""
    shim = tmp_path / "shim"
    shim.mkdir(exist_ok=True)
    (shim / "sitecustomize.py").write_text(
        "import importlib.abc, sys\n"
        "class Hide(importlib.abc.MetaPathFinder):\n"
        "    def find_spec(self, name, path=None, target=None):\n"
        f"        if name.split('.')[0] in {modules!r}:\n"
        "            raise ModuleNotFoundError(name)\n"
        "        return None\n"
        "sys.meta_path.insert(0, Hide())\n"
    )
    return {**os.environ, "PYTHONPATH": os.pathsep.join((str(shim), str(REPO / "src")))}


def _gym_in(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "rewardgym", *args], env=env, capture_output=True, text=True, timeout=120,
        check=False,
    )  # fmt: skip


def test_missing_extra_names_the_pip_install(run: Path, tmp_path: Path) -> None:
    """A tracker library that cannot be imported is a usage error naming the extra, before anything is
    written."""
    env = _without(tmp_path, "mlflow", "inspect_ai")
    done = _gym_in(
        env, "eval", "export", "--rollouts", str(run / "run.jsonl"), "--to", "inspect", "--to", "mlflow"
    )
    assert done.returncode == 2, done.stdout + done.stderr
    assert "pip install 'rewardgym[inspect]'" in done.stderr
    assert not (run / "run_inspect.json").exists()


def test_run_checks_the_extra_before_collecting(tmp_path: Path) -> None:
    """``gym eval run ++wandb_project=…`` without the extra stops before materializing or asking any
    server (the head URL points nowhere)."""
    rows = tmp_path / "rows.jsonl"
    rows.write_bytes(b'{"responses_create_params": {"input": "q"}, "agent_ref": {"name": "a"}}\n')
    env = _without(tmp_path, "wandb")
    done = _gym_in(env, "eval", "run", "--no-serve", "--head-url", "http://127.0.0.1:9", "--input", str(rows),
                   "-o", str(tmp_path / "out/r.jsonl"), "++wandb_project=p")  # fmt: skip
    assert done.returncode == 2, done.stdout + done.stderr
    assert "pip install 'rewardgym[wandb]'" in done.stderr
    assert not (tmp_path / "out").exists()


def test_unreachable_tracking_server_is_one_line_in_seconds(run: Path) -> None:
    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    started = time.monotonic()
    done = gym("eval", "export", "--rollouts", str(run / "run.jsonl"), "--to", "mlflow",
               f"++mlflow_tracking_uri=http://127.0.0.1:{port}")  # fmt: skip
    assert done.returncode == 1, done.stdout + done.stderr
    assert time.monotonic() - started < 90  # MLflow's own retry defaults take about 4 minutes
    [line] = done.stderr.strip().splitlines()
    assert line.startswith("Error: mlflow export failed: ") and f"127.0.0.1:{port}" in line
