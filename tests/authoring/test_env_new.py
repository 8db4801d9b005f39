"""``gym env new``: the scaffolded environment's own tests pass as written, it collects end to end through
``gym eval run`` (real processes, the scripted model as upstream), and nothing existing is overwritten."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import orjson
import pytest

REPO_ROOT = Path(__file__).resolve().parents[2]


def gym(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT), "PYTHONUNBUFFERED": "1"}
    return subprocess.run(
        [sys.executable, "-m", "rewardgym", *args], cwd=cwd, env=env, capture_output=True, text=True,
        timeout=300, check=False, stdin=subprocess.DEVNULL,
    )  # fmt: skip


@pytest.fixture
def scaffolded(tmp_path: Path) -> Path:
    made = gym("env", "new", "capital_quiz", "--dir", str(tmp_path), cwd=tmp_path)
    assert made.returncode == 0, made.stdout + made.stderr
    assert "Created capital_quiz/" in made.stdout
    return tmp_path


def test_the_scaffold_holds_every_part_and_its_tests_pass(scaffolded: Path) -> None:
    folder = scaffolded / "capital_quiz"
    files = sorted(str(p.relative_to(folder)) for p in folder.rglob("*") if p.is_file())
    assert files == [
        "README.md", "__init__.py", "app.py", "configs/capital_quiz.yaml", "data/example.jsonl",
        "tests/__init__.py", "tests/test_capital_quiz.py", "verifier_cases.jsonl",
    ]  # fmt: skip
    assert '@environment("capital_quiz")' in (folder / "app.py").read_text()
    assert "class CapitalQuiz(ResourcesServer[CapitalQuizConfig])" in (folder / "app.py").read_text()
    assert not [p for p in scaffolded.iterdir() if p.name.startswith(".")]  # no staging folder left
    tests = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "capital_quiz"],
        cwd=scaffolded, capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    assert tests.returncode == 0, tests.stdout + tests.stderr
    assert "6 passed" in tests.stdout


def test_the_scaffold_collects_end_to_end_with_the_scripted_model(scaffolded: Path) -> None:
    # One flag for the model: the scripted model type answers in its own server process (no upstream).
    model = [
        "--model-type", "scripted",
        '++policy_model.responses_api_models.scripted.answers=["Let me think. Answer: Paris"]',
    ]  # fmt: skip
    run = gym(
        "eval", "run", "--config", "capital_quiz/configs/capital_quiz.yaml", *model,
        "--agent", "capital_quiz_simple_agent", "--input", "capital_quiz/data/example.jsonl",
        "--output", "out/rollouts.jsonl", "--num-repeats", "2",
        cwd=scaffolded,
    )  # fmt: skip
    assert run.returncode == 0, run.stdout + run.stderr
    rows = [orjson.loads(line) for line in (scaffolded / "out" / "rollouts.jsonl").read_bytes().splitlines()]
    assert len(rows) == 6
    rewards = {(r["_ng_task_index"], r["_ng_rollout_index"]): r["reward"] for r in rows}
    # Only the capital question (task 1) is answered right by "Paris".
    assert rewards == {(t, k): float(t == 1) for t in range(3) for k in range(2)}
    assert {r["extracted_answer"] for r in rows} == {"Paris"}


@pytest.mark.parametrize(
    ("name", "message"),
    [
        ("mcqa", "'mcqa' is a built-in environment"),
        ("My-Env", "must be a lowercase Python identifier"),
        ("taken", "already exists"),
    ],
)
def test_refusals_touch_nothing(tmp_path: Path, name: str, message: str) -> None:
    (tmp_path / "taken").mkdir()
    (tmp_path / "taken" / "mine.txt").write_text("keep me")
    before = sorted(p.name for p in tmp_path.rglob("*"))
    made = gym("env", "new", name, "--dir", str(tmp_path), cwd=tmp_path)
    assert made.returncode == 2
    assert message in made.stderr
    assert "Traceback" not in made.stderr
    assert sorted(p.name for p in tmp_path.rglob("*")) == before
    assert (tmp_path / "taken" / "mine.txt").read_text() == "keep me"
