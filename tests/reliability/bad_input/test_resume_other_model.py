"""``--resume`` in ``--no-serve`` mode onto servers of another model is refused.

Before, the fingerprint held only the local config, which in ``--no-serve`` mode does not say which model
the running servers serve: a resume onto another model silently mixed two policies in one rollouts file.
Now the head registry reports each model server's model name (never a URL or a key) and the run
fingerprint records it; a resume onto another model is refused naming the change (``--force`` overrides).

Real processes: two ``gym env start`` stacks (``vllm_model`` → the fault upstream, model names A and B) and
``gym eval run --no-serve`` against each.
"""

from __future__ import annotations

import signal
from collections.abc import Iterator
from pathlib import Path

import orjson
import pytest

from tests.stubs.fault_upstream import FaultUpstream, start_fault_upstream
from tests.stubs.processes import (
    GymProcess,
    get_json,
    jsonl_rows,
    kill_marked,
    new_marker,
    no_marked_processes,
    start_env,
)
from tests.stubs.reliability_stack import AGENT, API_KEY, EXAMPLE, gym

MODEL_A = "policy-a-7b"
MODEL_B = "policy-b-70b"


@pytest.fixture(scope="module")
def upstream() -> Iterator[FaultUpstream]:
    with start_fault_upstream() as running:
        yield running


@pytest.fixture(scope="module")
def heads(upstream: FaultUpstream, tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, str]]:
    """Head URL of a running stack per model name."""
    marker = new_marker()
    envs: list[GymProcess] = []
    found: dict[str, str] = {}
    try:
        for model in (MODEL_A, MODEL_B):
            root = tmp_path_factory.mktemp(f"env-{model}")
            env, head = start_env(
                ["--resources-server", "mcqa", "--model-type", "vllm_model", "--model-url",
                 f"{upstream.url}/v1", "--model", model, "--model-api-key", API_KEY,
                 "--log-dir", str(root / "logs")],
                cwd=root, marker=marker,
            )  # fmt: skip
            envs.append(env)
            found[model] = head
        yield found
    finally:
        for env in envs:
            env.signal(signal.SIGTERM)
            env.finish(30)
        assert not no_marked_processes(marker)
        kill_marked(marker)


def _run(head: str, folder: Path, *extra: str) -> tuple[int, str]:
    done = gym(
        ["eval", "run", "--no-serve", "--head-url", head, "--input", str(EXAMPLE), "--agent", AGENT,
         "--num-repeats", "2", "-o", "out/rollouts.jsonl", "--disable-aggregation", *extra],
        cwd=folder,
    )  # fmt: skip
    return done.code, done.output


def test_the_head_registry_reports_model_names_and_no_secret(heads: dict[str, str]) -> None:
    for model, head in heads.items():
        records = get_json(f"{head}/server_instances")
        models = {r["name"]: r["model"] for r in records if r["kind"] == "responses_api_models"}
        assert models == {"policy_model": model}
        assert all(r["model"] is None for r in records if r["kind"] != "responses_api_models")
        assert API_KEY not in orjson.dumps(records).decode()


def test_resume_onto_another_model_is_refused_naming_it(heads: dict[str, str], tmp_path: Path) -> None:
    code, output = _run(heads[MODEL_A], tmp_path)
    assert code == 0, output
    rollouts = tmp_path / "out/rollouts.jsonl"
    fingerprint = orjson.loads((tmp_path / "out/rollouts_run.json").read_bytes())
    assert fingerprint["settings"]["models"] == {
        "policy_model": {"implementation": "vllm_model", "model": MODEL_A}
    }
    before = rollouts.read_bytes()
    # Drop the last rollouts, as a crash would have, so the resume has work left.
    lines = before.splitlines(keepends=True)
    rollouts.write_bytes(b"".join(lines[:4]))
    partial = rollouts.read_bytes()

    code, output = _run(heads[MODEL_B], tmp_path, "--resume")
    assert code != 0
    assert "Traceback" not in output
    assert f"settings.models.policy_model.model: '{MODEL_A}' → '{MODEL_B}'" in output, output
    assert "--force" in output
    assert rollouts.read_bytes() == partial  # nothing written by the refused resume

    code, output = _run(heads[MODEL_A], tmp_path, "--resume")  # the same model: resumes
    assert code == 0, output
    assert len(jsonl_rows(rollouts)) == len(lines)


def test_force_resumes_onto_another_model_with_a_warning(heads: dict[str, str], tmp_path: Path) -> None:
    code, output = _run(heads[MODEL_A], tmp_path)
    assert code == 0, output
    rollouts = tmp_path / "out/rollouts.jsonl"
    lines = rollouts.read_bytes().splitlines(keepends=True)
    rollouts.write_bytes(b"".join(lines[:4]))
    code, output = _run(heads[MODEL_B], tmp_path, "--resume", "--force")
    assert code == 0, output
    assert (
        f"Warning: resuming although these changed: settings.models.policy_model.model: '{MODEL_A}'" in output
    )
    fingerprint = orjson.loads((tmp_path / "out/rollouts_run.json").read_bytes())
    assert fingerprint["settings"]["models"]["policy_model"]["model"] == MODEL_B
