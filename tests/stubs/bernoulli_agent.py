"""A stub agent process whose every task has a known success probability: a policy with a known answer.

``python -m tests.stubs.bernoulli_agent --port 0 --delay-ms 5`` prints
``bernoulli agent listening on http://127.0.0.1:<port>`` and serves:

- ``GET /server_instances``: a head-registry answer listing itself as the agent ``agent`` (so
  ``gym eval run --no-serve --head-url <its url>`` finds it);
- ``POST /run``: after ``delay-ms``, ``{"reward": 1.0 or 0.0, "echo": <responses_create_params>}``. The row's
  top-level ``p`` is the task's success probability; the reward of a key is ``1.0`` when
  :func:`uniform` ``(task, rollout) < p`` — a function of the key only, so a rerun, a resume or a test
  computing it in-process all see the same outcome, and the repeats of a task are independent draws;
- ``POST /aggregate_metrics``: the count and mean reward.

Used by the adaptive-repeats tests and ``benchmarks/adaptive/run_benchmark.py``.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import hashlib
from typing import Any

from aiohttp import web

from tests.stubs.stub_agent import build_agent_app, serve_agent
from tests.stubs.stub_process import StubProcess, launch_stub

READY_PREFIX = "bernoulli agent listening on "


def uniform(task_index: int, rollout_index: int, seed: int = 0) -> float:
    """A uniform draw in [0, 1) fixed by the key (and a seed)."""
    digest = hashlib.blake2b(f"{seed}:{task_index}:{rollout_index}".encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big") / 2**64


def reward(p: float, task_index: int, rollout_index: int, seed: int = 0) -> float:
    """The reward this agent gives a key of a task with success probability ``p``."""
    return 1.0 if uniform(task_index, rollout_index, seed) < p else 0.0


def build_app(delay_s: float, seed: int) -> web.Application:
    def result_of(row: dict[str, Any]) -> dict[str, Any]:
        return {
            "reward": reward(float(row["p"]), row["_ng_task_index"], row["_ng_rollout_index"], seed),
            "echo": row.get("responses_create_params"),
        }

    return build_agent_app("bernoulli", result_of, delay_s, max_body=1 << 26)


async def serve(port: int, delay_s: float, seed: int) -> None:
    await serve_agent(build_app(delay_s, seed), port, READY_PREFIX)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--delay-ms", type=float, default=5.0)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(serve(args.port, args.delay_ms / 1000, args.seed))


class BernoulliAgent(StubProcess):
    """A running Bernoulli agent process."""


def start_bernoulli_agent(*args: str, timeout_s: float = 30.0) -> BernoulliAgent:
    """Start ``python -m tests.stubs.bernoulli_agent <args>`` on a free port and wait until it listens."""
    return BernoulliAgent(*launch_stub("bernoulli_agent", READY_PREFIX, args, timeout_s=timeout_s))


if __name__ == "__main__":
    main()
