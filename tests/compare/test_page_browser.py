"""``compare.html`` in a real headless Chromium (Debian's ``chromium``, driven by Playwright, as the analysis
report's test does): no console error, no request but the file itself, the charts present, and the
filters change the listed tasks."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from playwright.sync_api import Page, expect

from rewardgym.compare import Settings, compare_files
from tests.browser import open_offline
from tests.compare.helpers import task_rows, write_run


@pytest.fixture(scope="module")
def page_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("compare")
    rows = task_rows(200)
    for row in rows[:3]:  # prompts with markup are shown as text
        row["responses_create_params"]["input"][0]["content"] += " </script><b>bold</b>"
    a = np.zeros((200, 8), np.int64)
    b = np.zeros((200, 8), np.int64)
    a[:, :4] = 1  # every task 4/8 in A
    b[:, :4] = 1
    a[:10, 1:] = 0  # 10 tasks from 1/8 in A …
    b[:10, :] = 1  # … to 8/8 in B: improved
    a[10:15, :] = 1  # 5 tasks from 8/8 in A …
    b[10:15, :] = 0  # … to 0/8 in B: newly failed
    b[15:40, 4] = 1  # 25 tasks 5/8: observed up, not significant
    run_a = write_run(folder / "a", "base", rows, a)
    run_b = write_run(folder / "b", "tuned", rows, b)
    html = folder / "compare.html"
    compare_files([(run_a, None), (run_b, None)], Settings(), output=folder / "compare.json", html=html)
    return html


@pytest.fixture(scope="module")
def browser_page(page_file: Path) -> Iterator[tuple[Page, list[str], list[str]]]:
    with open_offline(page_file, "#changed-body tr") as opened:
        yield opened


def _transitions(page: Page) -> list[str]:
    found: list[str] = page.eval_on_selector_all(
        "#changed-body tr", "rows => rows.map(r => r.dataset.transition)"
    )
    return found


def test_page_renders_offline_without_errors(
    browser_page: tuple[Page, list[str], list[str]], page_file: Path
) -> None:
    page, errors, requests = browser_page
    assert errors == []
    assert requests == [page_file.as_uri()]
    charts = page.eval_on_selector_all("svg[data-chart]", "nodes => nodes.map(n => n.dataset.chart)")
    assert charts == ["matrix-0", "scatter-0"]
    assert page.locator("svg[data-chart=matrix-0] rect.cell").count() == 49
    assert page.locator("svg[data-chart=scatter-0] g.pt").count() == 4  # four distinct (A, B) outcomes
    assert page.locator("svg[data-chart=scatter-0] g.t-improved").count() == 1
    assert page.inner_text(".comparison .verdict") == "no detectable change"
    assert page.inner_text("#changed-count") == "40 of 40 listed tasks"


def test_filters_change_the_rows(browser_page: tuple[Page, list[str], list[str]]) -> None:
    page, errors, _ = browser_page
    assert _transitions(page)[:15] == ["newly_failed"] * 5 + ["improved"] * 10  # most significant first
    page.select_option("#f-transition", "newly_failed")
    expect(page.locator("#changed-count")).to_have_text("5 of 40 listed tasks")
    assert set(_transitions(page)) == {"newly_failed"}
    page.select_option("#f-transition", "unchanged")
    expect(page.locator("#changed-count")).to_have_text("25 of 40 listed tasks")
    page.select_option("#f-transition", "up")
    expect(page.locator("#changed-count")).to_have_text("35 of 40 listed tasks")
    page.select_option("#f-transition", "")
    page.fill("#f-text", "question 2? </script>")
    expect(page.locator("#changed-count")).to_have_text("1 of 40 listed tasks")
    assert "question 2? </script><b>bold</b>" in page.inner_text("#changed-body")  # as text, not markup
    page.fill("#f-text", "")
    expect(page.locator("#changed-count")).to_have_text("40 of 40 listed tasks")
    assert errors == []
