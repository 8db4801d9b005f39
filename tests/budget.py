"""A CPU-time budget for every test (a pytest plugin, loaded by ``-p tests.budget`` in pyproject.toml).

Contract: a test whose call phase uses more CPU than its budget fails, naming the budget and what it used,
so a slow test fails the tier instead of silently stretching it (one quadratic test once took 261 s of a
16-minute "fast" tier). The budget is CPU time — this process's user + system time plus that of the child
processes it reaped during the call — never wall time: a loaded machine stretches wall time, not the CPU a
test needs. The default is the ini option ``cpu_budget_s`` (``make test-fast`` lowers it with
``-o cpu_budget_s=...``); a test that needs more says so with ``@pytest.mark.cpu_budget(seconds)``. The
``--durations`` table (the Makefile asks for it) shows wall time next to it in CI output.
"""

from __future__ import annotations

import resource
from collections.abc import Generator

import pytest

DEFAULT_BUDGET_S = 60.0


def _cpu_s() -> float:
    own = resource.getrusage(resource.RUSAGE_SELF)
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addini("cpu_budget_s", "CPU seconds a test's call may use (tests/budget.py)", default="")


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
    budget = budget_of(item)
    if used > budget:
        pytest.fail(
            f"CPU-time budget exceeded: {used:.1f} s of CPU for a budget of {budget:g} s "
            "(make the test cheaper, or give it @pytest.mark.cpu_budget(seconds) with a reason)",
            pytrace=False,
        )
    return result
