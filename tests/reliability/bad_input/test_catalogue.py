"""Bad input: every case of the bad-input catalogue (``cases/*.yaml``) is refused cleanly.

One parametrized test runs each case (a ``gym`` command as a real process, or an HTTP request to a real
server) and checks: non-zero exit / 4xx status, one message naming the file:line or field, no traceback,
no half-written output and every earlier file untouched (see :mod:`.catalogue`). Cases that reproduce a
known product bug (``cases/known_bugs.yaml``) are xfail only while exactly that bug's checks fail.
"""

from __future__ import annotations

import socket
from pathlib import Path

import pytest

from tests.reliability.bad_input.catalogue import (
    Case,
    Failure,
    load_cases,
    load_known_bugs,
    prepare_folder,
    run_cli_case,
    run_http_case,
)
from tests.stubs.inprocess_stack import AGENT, Stack

CASES = load_cases()
KNOWN_BUGS = load_known_bugs()


def _free_port() -> str:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return str(sock.getsockname()[1])


def judge(case: Case, failures: list[Failure], output: str) -> None:
    """Pass, fail, or xfail for a known bug that reproduces exactly (see the module docstring)."""
    report = "\n".join(str(f) for f in failures) + f"\n--- output ---\n{output[-3000:]}"
    if case.known_bug is None:
        assert not failures, report
        return
    bug = KNOWN_BUGS[case.known_bug]
    failed = {f.check for f in failures}
    if not failed:
        pytest.fail(f"known bug {case.known_bug!r} no longer reproduces: remove known_bug from {case.id}")
    if failed <= set(bug.checks):
        pytest.xfail(f"known bug {case.known_bug} ({bug.owner}): " + "; ".join(str(f) for f in failures))
    pytest.fail(f"fails beyond known bug {case.known_bug!r}:\n{report}")


def test_the_catalogue_is_big_enough_and_covers_every_source() -> None:
    assert len(CASES) >= 40
    commands = {" ".join(c.run[:2]) for c in CASES if c.run}
    assert {
        "config show",
        "eval run",
        "eval profile",
        "eval reverify",
        "eval aggregate",
        "env start",
    } <= commands
    servers = {c.http.server for c in CASES if c.http}
    assert {"policy_model", "mcqa", "tool_env", "session_env", AGENT} <= servers
    assert any(c.previous_run for c in CASES)


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_bad_input_is_refused_cleanly(case: Case, tmp_path: Path, request: pytest.FixtureRequest) -> None:
    stack: Stack = request.getfixturevalue("bad_input_stack")
    if case.http is not None:
        failures, output = run_http_case(case, stack.urls)
    else:
        previous = request.getfixturevalue("previous_run") if case.previous_run else None
        prepare_folder(case, tmp_path, previous)
        values = {"head": stack.head_url, "agent": AGENT, "free_port": _free_port()}
        failures, output = run_cli_case(case, tmp_path, values)
    judge(case, failures, output)
