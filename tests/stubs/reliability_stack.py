"""The real stack of the reliability suite: mcqa + simple_agent + ``vllm_model`` → an upstream we control.

Shared by ``tests/reliability`` and ``benchmarks/reliability``:

- :func:`write_mcqa_rows` writes N distinct mcqa tasks (the 5 example questions, each variant's prompt made
  unique), so every model call has its own body and the fault upstream can follow its retries;
- :func:`env_args` / :func:`run_args` are the ``gym env start`` / ``gym eval run`` arguments of the stack
  (``--resources-server mcqa``, ``--model-type vllm_model`` at the upstream, the model server's read timeout
  small so a hung upstream ends by a timeout);
- :func:`check_partition` is the suite's oracle: rollouts ∪ failures == materialized keys, disjoint, no
  duplicates, every line valid JSON, every reward the verifier's (the upstream always answers
  ``\\boxed{B}``, so reward == 1.0 exactly when ``expected_answer`` is B) and no failure carrying a reward;
- :func:`retry_levels` splits the retries between the levels (model server → upstream, agent → model
  server, collector → agent) from the upstream's counters, the model server's log and the collector summary.
"""

from __future__ import annotations

import re
import subprocess
import sys
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from tests.stubs.processes import REPO_ROOT, gym_environ, jsonl_rows, row_key

EXAMPLE = REPO_ROOT / "src/rewardgym/environments/mcqa/data/example.jsonl"
AGENT = "mcqa_simple_agent"
MODEL = "policy_model"
API_KEY = "sk-reliability-FAKE-KEY-4b1d-0042"
"""A recognisable fake upstream key: it must never show up in anything written or printed."""
FAILURE_CLASSES = frozenset(
    {"timeout", "connection", "http_5xx", "rate_limited", "verifier_error", "judge_failed", "invalid_request"}
    | {"invalid_response", "unknown_agent", "http_4xx"}
)
_SUMMARY = re.compile(r"Rollouts this run: (\d+) succeeded, (\d+) failed, (\d+) retries")


def write_mcqa_rows(path: Path, tasks: int) -> list[dict[str, Any]]:
    """``tasks`` distinct mcqa rows (unique prompt and uuid each); returns them."""
    examples = [orjson.loads(line) for line in EXAMPLE.read_bytes().splitlines()]
    rows = []
    for i in range(tasks):
        row = orjson.loads(orjson.dumps(examples[i % len(examples)]))
        message = row["responses_create_params"]["input"][0]
        message["content"] = f"{message['content']}\n(variant {i})"
        row["uuid"] = f"reliability-{i}"
        rows.append(row)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in rows))
    return rows


RECOVERING = ("500", "502", "503", "504", "429", "429_bare", "hang", "reset", "malformed", "missing")
"""Fault kinds a directed row gets once (then its call passes): the model server or the agent retries them."""
PERMANENT = {"500": "http_5xx", "malformed": "http_5xx", "hang": "timeout"}
"""Fault kinds a directed row gets on every attempt, and the failure class the collector must record."""


def write_directed_rows(path: Path, *, clean: int = 4) -> list[dict[str, Any]]:
    """mcqa rows asking the fault upstream for each kind: two rows per :data:`RECOVERING` kind (once), one
    per :data:`PERMANENT` kind (always), and ``clean`` rows without a fault."""
    directives: list[str | None] = [f"[[fault:{k}:1]]" for k in RECOVERING for _ in range(2)]
    directives += [f"[[fault:{k}:0]]" for k in PERMANENT] + [None] * clean
    rows = write_mcqa_rows(path, len(directives))
    for row, directive in zip(rows, directives, strict=True):
        if directive:
            row["responses_create_params"]["input"][0]["content"] += f" {directive}"
    path.write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in rows))
    return rows


def failed_kinds(out_dir: Path) -> dict[str, dict[str, Any]]:
    """The failure record of each directed row that failed, by the fault kind its prompt asked for."""
    materialized = {row_key(r): r for r in jsonl_rows(out_dir / "rollouts_materialized_inputs.jsonl")}
    failed = {}
    for failure in jsonl_rows(out_dir / "rollouts_failures.jsonl"):
        content = materialized[row_key(failure)]["responses_create_params"]["input"][0]["content"]
        failed[content.rsplit("[[fault:", 1)[1].split(":")[0]] = failure
    return failed


def model_override(field_path: str, value: Any) -> str:
    return f"++{MODEL}.responses_api_models.vllm_model.{field_path}={value}"


def env_args(
    upstream_url: str, log_dir: Path, *, read_timeout_s: float = 2.0, extra: tuple[str, ...] = ()
) -> list[str]:
    """Arguments of ``gym env start`` (and of a serving ``gym eval run``) for the stack."""
    return [
        "--resources-server", "mcqa", "--model-type", "vllm_model",
        "--model-url", f"{upstream_url}/v1", "--model", "fault-model", "--model-api-key", API_KEY,
        "--log-dir", str(log_dir), model_override("http.read_timeout_s", read_timeout_s), *extra,
    ]  # fmt: skip


def run_args(
    output: Path,
    *,
    input_path: Path | None = None,
    head_url: str | None = None,
    concurrency: int = 32,
    repeats: int = 1,
    resume: bool = False,
    extra: tuple[str, ...] = (),
) -> list[str]:
    """Arguments of ``gym eval run`` (``--no-serve`` when ``head_url`` is given)."""
    args = [
        "eval",
        "run",
        "--output",
        str(output),
        "--concurrency",
        str(concurrency),
        "--disable-aggregation",
    ]
    if head_url is not None:
        args += ["--no-serve", "--head-url", head_url]
    if resume:
        args.append("--resume")
    else:
        assert input_path is not None
        args += ["--input", str(input_path), "--agent", AGENT, "--num-repeats", str(repeats)]
        if repeats > 1:
            args.append("--num-repeats-add-seed")
    return [*args, *extra]


@dataclass
class Finished:
    """A finished ``gym`` command."""

    code: int
    output: str
    wall_s: float

    @property
    def summary(self) -> tuple[int, int, int] | None:
        """(succeeded, failed, retries) of the collector's summary line."""
        match = _SUMMARY.search(self.output)
        return (int(match[1]), int(match[2]), int(match[3])) if match else None


def gym(args: list[str], *, cwd: Path, marker: str | None = None, timeout: float = 600.0) -> Finished:
    """Run ``python -m rewardgym <args>`` to completion."""
    started = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-m", "rewardgym", *args], cwd=cwd, env=gym_environ(marker), capture_output=True,
        text=True, timeout=timeout, check=False, stdin=subprocess.DEVNULL,
    )  # fmt: skip
    return Finished(done.returncode, done.stdout + done.stderr, time.monotonic() - started)


@dataclass
class Partition:
    """What :func:`check_partition` found."""

    materialized: int
    succeeded: int
    failed: int
    failure_classes: Counter[str] = field(default_factory=Counter)
    reward_ones: int = 0


def check_partition(out_dir: Path, *, complete: bool = True, answer: str = "B") -> Partition:
    """Check the outputs of a run in ``out_dir`` (see the module docstring); raise AssertionError if not.

    ``complete=False`` allows keys that are in neither file (a run that was stopped).
    """
    materialized = {row_key(r): r for r in jsonl_rows(out_dir / "rollouts_materialized_inputs.jsonl")}
    rollouts = jsonl_rows(out_dir / "rollouts.jsonl")
    failures = jsonl_rows(out_dir / "rollouts_failures.jsonl")
    done = [row_key(r) for r in rollouts]
    failed = [row_key(r) for r in failures]
    assert len(done) == len(set(done)), "duplicate keys in the rollouts file"
    assert len(failed) == len(set(failed)), "duplicate keys in the failures file"
    assert not set(done) & set(failed), (
        f"keys both succeeded and failed: {sorted(set(done) & set(failed))[:5]}"
    )
    assert set(done) | set(failed) <= set(materialized), "keys that were never materialized"
    if complete:
        missing = set(materialized) - set(done) - set(failed)
        assert not missing, (
            f"{len(missing)} materialized keys neither succeeded nor failed: {sorted(missing)[:5]}"
        )
    ones = 0
    for row in rollouts:
        source = materialized[row_key(row)]
        expected = 1.0 if source["expected_answer"] == answer else 0.0
        assert isinstance(row["reward"], float), row["reward"]
        assert row["reward"] == expected, f"{row_key(row)}: reward {row['reward']}, verifier says {expected}"
        assert row["extracted_answer"] == answer and row["expected_answer"] == source["expected_answer"]
        assert row["agent_ref"] == {"name": AGENT}
        ones += int(expected)
    classes: Counter[str] = Counter()
    for row in failures:
        assert "reward" not in row, f"a failure carries a reward: {row}"
        assert row["_ng_failure_class"] in FAILURE_CLASSES, row
        assert row["attempts"] >= 1 and row["_ng_failure_reason"]
        classes[row["_ng_failure_class"]] += 1
    return Partition(len(materialized), len(done), len(failed), classes, ones)


def model_log_size(log_dir: Path) -> int:
    """The model server log's size now: pass it as ``since`` to count only what a later run logged."""
    log = log_dir / f"{MODEL}.log"
    return log.stat().st_size if log.exists() else 0


def log_warnings(log: Path, text: str, since: int = 0) -> int:
    """Warning lines of a server log (JSON lines, from byte ``since``) whose message contains ``text``."""
    if not log.exists():
        return 0
    count = 0
    with open(log, "rb") as handle:
        handle.seek(since)
        data = handle.read()
    for line in data.splitlines():
        try:
            record = orjson.loads(line)
        except orjson.JSONDecodeError:
            continue
        if isinstance(record, dict) and record.get("level") == "WARNING" and text in str(record.get("msg")):
            count += 1
    return count


@dataclass
class RetryLevels:
    """Retries per level of one run (see :func:`retry_levels`)."""

    upstream_requests: int
    model_calls: int
    model_server_retries: int
    agent_retries: int
    collector_attempts: int
    collector_retries: int


def retry_levels(upstream: dict[str, Any], log_dir: Path, finished: Finished, since: int = 0) -> RetryLevels:
    """Split retries between levels (the model server log counted from byte ``since``).

    - every upstream request is one model-server attempt; a model-server call ends either with one good
      upstream answer (``ok``) or with a logged upstream failure (502/504 to the agent), so
      ``model calls = ok + logged failures`` and the model server's retries are ``requests − calls``;
    - a model-server call is one agent attempt; each collector attempt makes one agent call (mcqa is
      single-step), so the agent's retries are ``model calls − collector attempts``;
    - the collector's attempts and retries come from its summary line.
    """
    summary = finished.summary
    assert summary is not None, finished.output[-2000:]
    succeeded, failed, retries = summary
    failed_calls = log_warnings(log_dir / f"{MODEL}.log", "/v1/responses: upstream failure", since)
    calls = int(upstream["ok"]) + failed_calls
    attempts = succeeded + failed + retries
    return RetryLevels(
        upstream_requests=int(upstream["requests"]),
        model_calls=calls,
        model_server_retries=int(upstream["requests"]) - calls,
        agent_retries=calls - attempts,
        collector_attempts=attempts,
        collector_retries=retries,
    )
