"""`gym eval run` checks every setting before it starts a server or writes a file.

Each case is a real `gym eval run` process in serving mode (a valid stack: mcqa + an openai_model in front
of a closed port) with one bad value. A server started before the check would create the log folder (each
server's log is opened as it is spawned) and the run's output folder; neither may exist afterwards, and the
error is one line naming the flag or config key.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.collect.test_cli_run import _env

_STACK = [
    "--resources-server", "mcqa", "--model-type", "openai_model", "--model-url", "http://127.0.0.1:9/v1",
    "--model", "m", "--model-api-key", "k", "--log-dir", "logs", "--output", "out/rollouts.jsonl",
]  # fmt: skip

CASES = [
    (["--num-repeats", "0"], "num_repeats must be an integer >= 1"),
    (["++num_repeats={a: 0}"], "num_repeats.a must be an integer >= 1"),
    (["--num-repeats", "20000"], "at most 10,000 rollouts per task"),
    (["++num_samples_in_parallel=0"], "num_samples_in_parallel must be an integer >= 1"),
    (["++limit=-1"], "limit must be an integer >= 0"),
    (["++max_attempts=0"], "max_attempts must be a positive number"),
    (["++rollout_timeout_s=-5"], "rollout_timeout_s must be a positive number"),
    (["++max_failure_rate=2"], "max_failure_rate must be a number in 0..1"),
    (["--shard", "3/2"], "--shard must be I/N"),
    (["--split", "nope"], "--split must be one of"),
    (["--adaptive-max", "4"], "--adaptive-max needs --adaptive"),
    (["--adaptive", "--adaptive-initial", "0"], "initial"),
    (["--adaptive", "--num-repeats", "3"], "--adaptive chooses the repeats per task itself"),
    (["--prompt-config", "missing.yaml"], "prompt config not found: 'missing.yaml' (--prompt-config)"),
    (["++health_check_workers=0"], "health_check_workers"),
    (["++fail_fast=maybe"], "fail_fast must be true or false"),
    (["--output", "in.jsonl"], "in.jsonl"),
]


@pytest.mark.slow
def test_a_bad_setting_starts_no_server_and_writes_no_file(tmp_path: Path) -> None:
    (tmp_path / "in.jsonl").write_text('{"responses_create_params": {"input": "q"}}\n')
    for args, fragment in CASES:
        source = [] if "--split" in args else ["--input", "in.jsonl"]
        command = [sys.executable, "-m", "rewardgym", "eval", "run", *source, *_STACK, *args]
        proc = subprocess.run(
            command, cwd=tmp_path, env=_env(), capture_output=True, text=True, timeout=120, check=False
        )
        output = proc.stdout + proc.stderr
        assert proc.returncode in (1, 2), (args, output)
        assert fragment in output, (args, output)
        assert len(output.strip().splitlines()) == 1, (args, output)
        assert "Starting" not in output, (args, output)  # ServedStack's first line
        assert sorted(p.name for p in tmp_path.iterdir()) == ["in.jsonl"], (args, output)
