"""A CPU-time budget for every test (a pytest plugin, loaded by ``-p tests.budget`` in pyproject.toml).

Contract: a test whose call phase uses more CPU than its budget fails, naming the budget and what it used,
so a slow test fails the tier instead of silently stretching it (one quadratic test once took 261 s of a
16-minute "fast" tier). The budget is CPU time — this process's user + system time plus that of the child
processes it reaped during the call — never wall time: a loaded machine stretches wall time, not the CPU a
test needs. The default is the ini option ``cpu_budget_s`` (``make test-fast`` lowers it with
``-o cpu_budget_s=...``); a test that needs more says so with ``@pytest.mark.cpu_budget(seconds)``. The
``--durations`` table (the Makefile asks for it) shows wall time in CI output, and the summary lists the
tests that used the most CPU (``--cpu-top N``, default 10; 0 turns it off) — with pytest-xdist too, since each
measurement travels back in the test report.
"""

from __future__ import annotations

import resource
from collections.abc import Generator
from typing import Any

import pytest

DEFAULT_BUDGET_S = 60.0


def _cpu_s() -> float:
    own = resource.getrusage(resource.RUSAGE_SELF)
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addini("cpu_budget_s", "CPU seconds a test's call may use (tests/budget.py)", default="")
    parser.addoption("--cpu-top", type=int, default=10, help="List the N tests that used the most CPU.")


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "cpu_budget(seconds): this test's CPU-time budget (tests/budget.py)")


def budget_of(item: pytest.Item) -> float:
    """The test's budget: its ``cpu_budget`` marker, else the ini option, else the default."""
    marker = item.get_closest_marker("cpu_budget")
    if marker is not None:
        return float(marker.args[0])
    configured = str(item.config.getini("cpu_budget_s") or "")
    return float(configured) if configured else DEFAULT_BUDGET_S


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Generator[None, None, None]:
    start = _cpu_s()
    result = yield
    used = _cpu_s() - start
    item.user_properties.append(("cpu_s", used))
    budget = budget_of(item)
    if used > budget:
        pytest.fail(
            f"CPU-time budget exceeded: {used:.1f} s of CPU for a budget of {budget:g} s "
            "(make the test cheaper, or give it @pytest.mark.cpu_budget(seconds) with a reason)",
            pytrace=False,
        )
    return result


_USED: list[tuple[float, str]] = []


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    if report.when == "call":
        _USED.extend(
            (v, report.nodeid) for k, v in report.user_properties if k == "cpu_s" and isinstance(v, float)
        )


def pytest_terminal_summary(terminalreporter: Any, config: pytest.Config) -> None:
    top = int(config.getoption("--cpu-top"))
    if top <= 0 or not _USED:
        return
    terminalreporter.write_sep(
        "=", f"most CPU (budget {config.getini('cpu_budget_s') or DEFAULT_BUDGET_S} s)"
    )
    for used, nodeid in sorted(_USED, reverse=True)[:top]:
        terminalreporter.write_line(f"{used:8.2f}s cpu  {nodeid}")
