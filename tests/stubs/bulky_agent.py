"""A stub agent process with bulky results, for killing ``gym eval run`` in the middle of writing a line.

``python -m tests.stubs.bulky_agent --port 0 --pad-bytes 1000000 --delay-ms 20`` prints
``bulky agent listening on http://127.0.0.1:<port>`` and serves:

- ``GET /server_instances``: a head-registry answer listing itself as the agent ``agent`` (so
  ``gym eval run --no-serve --head-url <its url>`` finds it);
- ``POST /run``: after ``delay-ms``, ``{"reward": <the key's reward>, "pad": "x" * pad_bytes, "echo": <the
  row's responses_create_params>}``. The reward is a function of the key only (:func:`expected_reward`), so
  a test can check every stored reward; the pad makes each rollouts line large enough that writing it takes
  many page copies, which a SIGKILL can interrupt (a torn line);
- ``POST /aggregate_metrics``: the count and mean reward.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
from typing import Any

from aiohttp import web

from tests.stubs.stub_agent import build_agent_app, serve_agent
from tests.stubs.stub_process import StubProcess, launch_stub

READY_PREFIX = "bulky agent listening on "


def expected_reward(task_index: int, rollout_index: int) -> float:
    """The reward this agent gives a key."""
    return 1.0 if (task_index + rollout_index) % 3 == 0 else 0.0


def build_app(pad_bytes: int, delay_s: float) -> web.Application:
    pad = "x" * pad_bytes

    def result_of(row: dict[str, Any]) -> dict[str, Any]:
        return {
            "reward": expected_reward(row["_ng_task_index"], row["_ng_rollout_index"]),
            "echo": row.get("responses_create_params"),
            "pad": pad,
        }

    return build_agent_app("bulky", result_of, delay_s, max_body=1 << 30)


async def serve(port: int, pad_bytes: int, delay_s: float) -> None:
    await serve_agent(build_app(pad_bytes, delay_s), port, READY_PREFIX)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--pad-bytes", type=int, default=1_000_000)
    parser.add_argument("--delay-ms", type=float, default=20.0)
    args = parser.parse_args(argv)
    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(serve(args.port, args.pad_bytes, args.delay_ms / 1000))


class BulkyAgent(StubProcess):
    """A running bulky agent process."""


def start_bulky_agent(*args: str, timeout_s: float = 30.0) -> BulkyAgent:
    """Start ``python -m tests.stubs.bulky_agent <args>`` on a free port and wait until it listens."""
    return BulkyAgent(*launch_stub("bulky_agent", READY_PREFIX, args, timeout_s=timeout_s))


if __name__ == "__main__":
    main()
