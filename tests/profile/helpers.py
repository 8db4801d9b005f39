"""Small helpers for the profile tests: writing JSONL files and running ``gym eval profile``."""

from __future__ import annotations

import contextlib
import io
import os
import subprocess
import sys
import sysconfig
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

REPO = Path(__file__).resolve().parents[2]


def write_jsonl(path: Path, rows: list[dict[str, Any]]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"".join(orjson.dumps(row) + b"\n" for row in rows))
    return path


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    return [orjson.loads(line) for line in path.read_bytes().splitlines()]


def gym(*args: str, cwd: Path | None = None, user: int | None = None) -> subprocess.CompletedProcess[str]:
    """Run the CLI in a fresh interpreter (as ``user`` when given: then with the system interpreter of the
    same Python version and this environment's packages, since a virtualenv may live in a private home)."""
    env = dict(os.environ)
    env["PYTHONPATH"] = str(REPO / "src")
    env.pop("REWARDGYM_DEBUG", None)
    executable = sys.executable
    preexec = None
    if user is not None:
        executable = f"/usr/bin/python{sys.version_info.major}.{sys.version_info.minor}"
        env["PYTHONPATH"] += os.pathsep + sysconfig.get_paths()["purelib"]

        def preexec() -> None:
            os.setgid(user)
            os.setuid(user)

    return subprocess.run(
        [executable, "-m", "rewardgym", *args],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        cwd=cwd,
        env=env,
        preexec_fn=preexec,
    )


@dataclass
class CliRun:
    """What an in-process CLI run returned and printed."""

    returncode: int
    stdout: str
    stderr: str


def cli(*args: str, cwd: Path | None = None) -> CliRun:
    """Run ``gym`` in this process (fast); same exit codes and output as the console script."""
    from rewardgym.cli.main import main

    out, err = io.StringIO(), io.StringIO()
    previous = Path.cwd()
    try:
        if cwd is not None:
            os.chdir(cwd)
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            code = main(list(args))
    finally:
        os.chdir(previous)
    return CliRun(code, out.getvalue(), err.getvalue())


def rows_and_results(
    rewards: dict[int, list[Any]], agent: str = "agent", extra: dict[str, Any] | None = None
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Materialized rows and rollouts for ``{task: [reward per rollout]}`` (rollouts in key order)."""
    rows, results = [], []
    for task, values in rewards.items():
        for rollout, reward in enumerate(values):
            key = {"_ng_task_index": task, "_ng_rollout_index": rollout}
            rows.append({"prompt": f"p{task}", "agent_ref": {"name": agent}, **key})
            results.append(
                {"response": {}, "reward": reward, **(extra or {}), **key, "agent_ref": {"name": agent}}
            )
    return rows, results
