"""math_with_judge over real HTTP: recorded rollouts with the judge on, judge failsafe, bad input, metrics.

The resources server runs in a background thread on a real port (its math-verify helper started at start-up);
the judge model is the real HTTP stub of :mod:`.judge_stub`, served by this module's event loop.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio

from rewardgym.config import load_config_from_flags
from rewardgym.environments.math_with_judge.app import MathWithJudgeServer
from rewardgym.environments.math_with_judge.judge import JUDGE_SYSTEM_MESSAGE, judge_user_message
from rewardgym.environments.math_with_judge.tests.judge_stub import JudgeStub, judge_reply, running_stub
from rewardgym.environments.math_with_judge.tests.test_math_with_judge import (
    MACHINE_DEPENDENT_ROWS,
    _recorded_pairs,
    _request,
)
from rewardgym.errors import ConfigError
from rewardgym.http.client import HttpClient
from rewardgym.launch.child_spec import server_class
from rewardgym.launch.from_config import child_specs, validate_specs
from rewardgym.launch.serve import ThreadedServer
from rewardgym.protocol import Response, dump
from rewardgym.registry import lookup
from rewardgym.testing import COLLECTOR_COLUMNS, assert_echoed, post

STAMPS = COLLECTOR_COLUMNS
POLICY = ["++policy_base_url=http://127.0.0.1:9/v1", "++policy_api_key=dummy", "++policy_model_name=m"]

module_loop = pytest.mark.asyncio(loop_scope="module")
"""Async tests share the module's event loop, which serves the judge stub."""


def server_config(judge_base_url: str, **overrides: Any) -> dict[str, Any]:
    return {
        "name": "math_with_judge",
        "log_level": "ERROR",
        "judge_model_server": {"type": "responses_api_models", "name": "judge_model"},
        "judge_responses_create_params": {"input": [], "temperature": 0.0},
        "should_use_judge": True,
        "library_verifier_timeout_seconds": 10.0,
        "library_verifier_max_concurrency": 4,
        "peers": {"judge_model": judge_base_url},
        "http": {"max_attempts": 1},
        **overrides,
    }


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def judge() -> AsyncIterator[JudgeStub]:
    async with running_stub() as stub:
        yield stub


@pytest.fixture(scope="module")
def server(judge: JudgeStub) -> Iterator[ThreadedServer]:
    base = judge.url.removesuffix("/v1/responses")
    with ThreadedServer(MathWithJudgeServer(server_config(base))) as running:
        yield running


@pytest.fixture
def fresh_judge(judge: JudgeStub) -> JudgeStub:
    judge.replies.clear()
    judge.requests.clear()
    return judge


@module_loop
async def test_http_compatibility_with_recorded_rollouts(
    server: ThreadedServer, fresh_judge: JudgeStub
) -> None:
    table = ["math_with_judge (judge on) over HTTP: row | ours reward / library / extracted / judge calls | "
             "NeMo Gym | note"]  # fmt: skip
    for index, row, rollout in _recorded_pairs():
        recorded_evals = rollout["judge_evaluations"] or []
        fresh_judge.replies.extend((200, evaluation["response"]) for evaluation in recorded_evals)
        reply = await post(f"{server.url}/verify", {**row, "response": rollout["response"]})
        assert reply.status == 200, reply.text()
        ours = reply.json()
        theirs = (
            f"{rollout['reward']} / {rollout['library_reward']} / {rollout['extracted_answer']} / "
            f"{len(recorded_evals)}"
        )
        if index in MACHINE_DEPENDENT_ROWS and ours.get("_ng_failure_class") == "judge_failed":
            # math-verify's own 5 s alarm fired on this machine (README): the judge was asked, and the stub
            # has no recorded verdict for it, so the row is a classified failure — never a made-up reward.
            assert ours["reward"] == 0.0
            table.append(
                f"  {index} | judge_failed (library timed out) | {theirs} | README: CPU-speed dependent"
            )
            continue
        assert set(ours) == set(rollout) - STAMPS
        evals = ours["judge_evaluations"] or []
        assert (ours["reward"], ours["library_reward"]) == (rollout["reward"], rollout["library_reward"])
        assert (ours["extracted_answer"], ours["expected_answer"]) == (
            rollout["extracted_answer"],
            rollout["expected_answer"],
        )
        judged = [Response.model_validate(e["response"]) for e in evals]
        assert judged == [Response.model_validate(e["response"]) for e in recorded_evals]
        assert_echoed(ours, row, rollout["response"])
        table.append(
            f"  {index} | {ours['reward']} / {ours['library_reward']} / {ours['extracted_answer']} / "
            f"{len(evals)} | {theirs} | match"
        )
        assert fresh_judge.replies == []
    print("\n" + "\n".join(table))


@module_loop
async def test_judge_decides_when_the_library_fails(server: ThreadedServer, fresh_judge: JudgeStub) -> None:
    fresh_judge.replies += [(200, judge_reply("[[A=B]]")), (200, judge_reply("equivalent: [[A=B]]"))]
    reply = await post(f"{server.url}/verify", dump(_request("Final answer: {7 / 5}", "1.4")))
    ours = reply.json()
    assert (ours["reward"], ours["library_reward"], ours["extracted_answer"]) == (1.0, 0.0, "5")
    assert len(ours["judge_evaluations"]) == 2
    first = fresh_judge.requests[0]
    assert first["temperature"] == 0.0
    assert first["input"][0]["content"] == JUDGE_SYSTEM_MESSAGE
    assert first["input"][1]["content"] == judge_user_message("Q?", "1.4", "5")


@module_loop
async def test_judge_outage_is_a_classified_failure(server: ThreadedServer, fresh_judge: JudgeStub) -> None:
    fresh_judge.replies.append((503, {"error": "overloaded"}))
    reply = await post(f"{server.url}/verify", dump(_request("$1", "x + 1")))
    assert reply.status == 200
    ours = reply.json()
    assert (ours["reward"], ours["_ng_failure_class"]) == (0.0, "judge_failed")
    assert "503" in ours["_ng_failure_judge_error"]
    assert "library_reward" not in ours  # the request dump plus the failure fields, not a scored row


@module_loop
async def test_no_assistant_message_scores_zero(server: ThreadedServer, fresh_judge: JudgeStub) -> None:
    fresh_judge.replies.append((200, judge_reply("My final verdict is different [[A!=B]]")))
    row = dump(_request(None, "4"))
    row["response"]["output"] = [{"type": "reasoning", "id": "rs_1", "summary": []}]
    reply = await post(f"{server.url}/verify", row)
    ours = reply.json()
    assert (ours["reward"], ours["library_reward"], ours["extracted_answer"]) == (0.0, 0.0, None)
    assert fresh_judge.requests[0]["input"][1]["content"] == judge_user_message("Q?", "4", "")


@pytest.mark.parametrize("missing", ["question", "expected_answer"])
@module_loop
async def test_missing_row_field_is_422_naming_it(server: ThreadedServer, missing: str) -> None:
    row = dump(_request("\\boxed{4}", "4"))
    del row[missing]
    reply = await post(f"{server.url}/verify", row)
    assert reply.status == 422
    assert ["body", missing] in [entry["loc"] for entry in reply.json()["detail"]]


@module_loop
async def test_reverify_mode_is_unknown(server: ThreadedServer) -> None:
    async with HttpClient() as http:
        reply = await http.get(f"{server.url}/reverify_mode")
    assert reply.json() == "unknown"


@module_loop
async def test_aggregate_metrics_symbolic_and_judge_accuracy(server: ThreadedServer) -> None:
    usage = {"input_tokens": 10, "output_tokens": 30, "total_tokens": 40}

    def row(task: int, rollout: int, reward: float, library: float, answer: str | None) -> dict[str, Any]:
        judged: list[dict[str, Any]] | None = [{}] if library == 0.0 else None
        return {
            "_ng_task_index": task,
            "_ng_rollout_index": rollout,
            "reward": reward,
            "library_reward": library,
            "extracted_answer": answer,
            "judge_evaluations": judged,
            "response": {"usage": usage},
        }

    rows = [
        row(0, 0, 1.0, 1.0, "2"),
        row(0, 1, 1.0, 0.0, "2.0"),
        row(1, 0, 0.0, 0.0, None),
        row(1, 1, 0, 0, "7"),
    ]
    reply = await post(f"{server.url}/aggregate_metrics", {"verify_responses": rows})
    body = reply.json()
    assert body["key_metrics"] == {
        "mean/input_tokens": 10.0,
        "mean/output_tokens": 30.0,
        "pass@1[avg-of-2]/symbolic_accuracy": 25.0,
        "pass@1[avg-of-2]/no_answer": 25.0,
        "pass@2/symbolic_accuracy": 50.0,
        "majority@2/symbolic_accuracy": 25.0,
        # judge_accuracy counts judged rollouts only: task 1 has two (both 0.0), task 0 one.
        "pass@1[avg-of-2]/judge_accuracy": 0.0,
        "pass@2/judge_accuracy": 0.0,
        "majority@2/judge_accuracy": 0.0,
    }
    assert body["agent_metrics"]["pass@1/judge_accuracy"] == 50.0


def test_a_dangling_judge_reference_fails_at_construction() -> None:
    with pytest.raises(ConfigError, match=r"math_with_judge\.judge_model_server: no server instance"):
        MathWithJudgeServer(server_config("http://127.0.0.1:9", peers={}))
    assert MathWithJudgeServer(server_config("", peers={}, should_use_judge=False)).judge_url is None


def test_registered_and_shipped_config_builds_it(tmp_path: Path) -> None:
    assert lookup("resources_servers", "math_with_judge") is MathWithJudgeServer
    cfg = load_config_from_flags(
        resources_servers=["math_with_judge"],
        model_types=["openai_model"],
        overrides=POLICY,
        env_yaml=False,
        cwd=tmp_path,
    )
    specs = child_specs(cfg, log_dir=tmp_path)
    validate_specs(specs)
    spec = next(spec for spec in specs if spec.kind == "resources_servers")
    built = server_class(spec.kind, spec.implementation)(spec.config)
    assert isinstance(built, MathWithJudgeServer)
    assert (built.config.should_use_judge, built.config.judge_model_server.name) == (False, "policy_model")
    with pytest.raises(ConfigError, match=r"math_with_judge\.should_use_jugde: unknown field"):
        MathWithJudgeServer(server_config("", should_use_jugde=True))
