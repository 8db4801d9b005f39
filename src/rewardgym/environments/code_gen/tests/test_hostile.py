"""The hostile-solution catalogue (:mod:`.hostile`) through a real code_gen server over HTTP: every case
scores 0 with a reason, leaks no host secret, leaves nothing on the host and no process behind, keeps the
server's memory bounded and the server answering."""

from __future__ import annotations

import time
from collections.abc import Iterator

import psutil
import pytest

from rewardgym.environments.code_gen.app import CodeGenServer
from rewardgym.environments.code_gen.isolation import Isolation
from rewardgym.environments.code_gen.tests.helpers import worker_uid_base
from rewardgym.environments.code_gen.tests.hostile import (
    CASES,
    SERVER_SETTINGS,
    Case,
    Host,
    host_with_secrets,
    run_case,
)
from rewardgym.launch.serve import ThreadedServer

pytestmark = pytest.mark.slow  # the whole hostile catalogue (~25 s): `make test` runs it, test-fast not

UID_BASE = worker_uid_base(65200)  # apart from the other code_gen tests (a run kills its uid), per worker


@pytest.fixture(scope="module")
def hostile_server(isolation: Isolation) -> Iterator[ThreadedServer]:
    if isolation.mode != "namespaces":
        pytest.skip(f"the catalogue needs the root server's namespaces isolation (here: {isolation.mode})")
    server = CodeGenServer(
        {"name": "code_gen", "max_concurrent_executions": 2, "sandbox_uid_base": UID_BASE, **SERVER_SETTINGS}
    )
    runner = ThreadedServer(server).start()
    try:
        yield runner
    finally:
        runner.stop()


@pytest.fixture(scope="module")
def host() -> Iterator[Host]:
    with host_with_secrets() as found:
        yield found


def _left_behind() -> list[psutil.Process]:
    found = []
    for proc in psutil.process_iter(["uids"]):
        uids = proc.info["uids"]
        if uids is not None and UID_BASE <= uids.real < UID_BASE + 2:
            found.append(proc)
    return found


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_hostile_solution(hostile_server: ThreadedServer, host: Host, case: Case) -> None:
    outcome = run_case(hostile_server.url, case, host)
    assert outcome.problems == [], (outcome.result, outcome.reason)
    deadline = time.monotonic() + 5
    while _left_behind():
        assert time.monotonic() < deadline, f"processes left behind: {_left_behind()}"
        time.sleep(0.05)
    print(
        f"\n{case.name}: {outcome.result} {outcome.reason[:100]!r} "
        f"(server RSS +{outcome.rss_growth_mib:.1f} MiB)"
    )
