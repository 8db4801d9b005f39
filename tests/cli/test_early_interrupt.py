"""Ctrl-C at any moment of ``gym``'s start-up ends it with ``Interrupted.`` and no traceback (issue 22,
class 9): SIGINT is sent once the process has used a growing amount of CPU time (a budget in CPU time,
not wall time: the checkpoints fall in the imports, the command table, the command itself)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

from tests.conftest import REPO_ROOT

CHECKPOINTS_S = (0.0, 0.03, 0.06, 0.1, 0.15, 0.2, 0.3, 0.45)


@pytest.mark.parametrize("cpu_s", CHECKPOINTS_S)
def test_ctrl_c_early_is_one_line(cpu_s: float, tmp_path: Path) -> None:
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT)}
    proc = subprocess.Popen(
        [sys.executable, "-m", "rewardgym", "eval", "profile", "--inputs", "no", "--rollouts", "no"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, cwd=str(tmp_path),
    )  # fmt: skip
    watched = psutil.Process(proc.pid)
    while proc.poll() is None:
        try:
            times = watched.cpu_times()
        except psutil.Error:
            break
        if times.user + times.system >= cpu_s:
            proc.send_signal(signal.SIGINT)
            break
        time.sleep(0.002)  # polling the condition above, not a synchronisation by time
    out, err = proc.communicate(timeout=60)
    assert "Traceback" not in out + err, err
    # 1: it finished first ("Input file not found"); -SIGINT or 130 with nothing printed: the interpreter
    # itself was still starting (before any of our code ran, as for any Python program)
    assert proc.returncode in (1, 130, -signal.SIGINT), (proc.returncode, err)
    assert err.strip() in ("", "Interrupted.") or err.startswith("Error: "), err
