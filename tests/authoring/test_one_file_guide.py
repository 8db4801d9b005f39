"""docs/environments.md "An environment in one file": its three files, taken from the page as written, make a
working environment — registered, typed once, and collected end to end through ``gym eval run`` (real
processes, the scripted model as upstream)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import orjson

from rewardgym.launch.serve import ThreadedServer
from rewardgym.testing import OpenAIStub

REPO_ROOT = Path(__file__).resolve().parents[2]
GUIDE = REPO_ROOT / "docs" / "environments.md"
FILE_BLOCK = re.compile(r"<!-- file: (?P<name>[\w.]+) -->\n```\w+\n(?P<body>.*?)```", re.DOTALL)


def guide_files() -> dict[str, str]:
    return {m["name"]: m["body"] for m in FILE_BLOCK.finditer(GUIDE.read_text(encoding="utf-8"))}


def test_the_guide_holds_its_three_files() -> None:
    assert sorted(guide_files()) == ["exact_answer.jsonl", "exact_answer.py", "exact_answer.yaml"]


def test_the_one_file_environment_runs_as_written(
    tmp_path: Path, scripted_model: tuple[ThreadedServer, OpenAIStub]
) -> None:
    for name, body in guide_files().items():
        (tmp_path / name).write_text(body, encoding="utf-8")
    runner, stub = scripted_model
    stub.state.text = "  paris "
    # The page's command, plus the scripted model instead of the embedded one.
    command = re.search(r"```bash\n(gym eval run .*?)\n(?=gym|```)", GUIDE.read_text(), re.DOTALL)
    assert command is not None
    args = command[1].replace("\\\n", " ").split()[1:]
    model = ["--model-type", "openai_model", "--model-url", f"{runner.url}/v1", "--model", "m"]
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT), "PYTHONUNBUFFERED": "1"}
    run = subprocess.run(
        [sys.executable, "-m", "rewardgym", *args, *model, "--model-api-key", "k"],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300, check=False,
        stdin=subprocess.DEVNULL,
    )  # fmt: skip
    assert run.returncode == 0, run.stdout + run.stderr
    rows = [orjson.loads(line) for line in (tmp_path / "out" / "rollouts.jsonl").read_bytes().splitlines()]
    assert len(rows) == 8  # 2 rows x 4 repeats
    assert {(r["_ng_task_index"], r["reward"], r["extracted_answer"]) for r in rows} == {
        (0, 1.0, "paris"),
        (1, 0.0, "paris"),
    }
