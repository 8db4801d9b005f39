"""The HTML report in a real headless Chromium (Debian's ``chromium``, driven by Playwright for Python): it
renders with no console error and no network request, its charts are present, a filter changes the
visible rows, sorting reorders them and a task opens with its rollouts."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Page, expect

from rewardgym.analysis import analyze_files
from tests.analysis.helpers import inputs_for, rollout, write
from tests.browser import open_offline


@pytest.fixture(scope="module")
def report(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("report")
    rows = []
    for task in range(300):
        for rep in range(4):
            passed = (task * 7 + rep) % (task % 5 + 1) == 0
            cut = task % 13 == 0
            rows.append(
                rollout(
                    task, rep, reward=float(passed), out_tokens=100 if cut else 20 + task % 50 + rep,
                    status="incomplete" if cut else "completed", cap=100,
                    text=f"The answer to task {task} is <b>{rep}</b> </script> <!-- <script>",
                    extracted=None if task % 17 == 0 else "A",
                )
            )  # fmt: skip
    write(folder / "run_materialized_inputs.jsonl", inputs_for(300, 4))
    write(
        folder / "run_failures.jsonl",
        [{"_ng_task_index": 300, "_ng_rollout_index": 0, "_ng_failure_class": "timeout"}],
    )
    result = analyze_files(None, write(folder / "run.jsonl", rows[::-1]))
    return result.paths.report


@pytest.fixture(scope="module")
def browser_page(report: Path) -> Iterator[tuple[Page, list[str], list[str]]]:
    with open_offline(report, "#spacer .row") as opened:
        yield opened


def _visible_tasks(page: Page) -> list[str]:
    found: list[str] = page.eval_on_selector_all(
        "#spacer .row", "rows => rows.map(r => r.children[0].textContent)"
    )
    return found


def test_page_renders_offline_without_errors(
    browser_page: tuple[Page, list[str], list[str]], report: Path
) -> None:
    page, errors, requests = browser_page
    assert errors == []
    assert requests == [report.as_uri()]  # the page itself, nothing else
    charts = page.eval_on_selector_all("svg[data-chart]", "nodes => nodes.map(n => n.dataset.chart)")
    assert set(charts) == {"bands", "grpo", "length-deciles", "truncation", "length-heatmap"}
    assert page.locator("svg[data-chart=bands] rect.bar").count() == 7
    assert page.locator("svg[data-chart=grpo] polyline").count() == 3
    assert page.inner_text("#shown-count") == "300 of 300 tasks"
    assert page.locator(".finding[data-check=no_extracted_answer]").count() == 1
    assert page.locator(".finding[data-check=collection_failures]").count() == 1


def test_filter_sort_and_open_a_task(browser_page: tuple[Page, list[str], list[str]]) -> None:
    page, errors, _ = browser_page
    before = _visible_tasks(page)
    assert before[:3] == ["0", "1", "2"]
    page.select_option("#f-flag", "cut")
    cut_tasks = [str(t) for t in range(0, 300, 13)]
    assert page.inner_text("#shown-count") == f"{len(cut_tasks)} of 300 tasks"
    assert _visible_tasks(page) == cut_tasks
    page.select_option("#f-flag", "")
    page.fill("#f-text", "task 42 is")
    expect(page.locator("#shown-count")).to_have_text("1 of 300 tasks")
    assert _visible_tasks(page) == ["42"]
    page.fill("#f-text", "")
    expect(page.locator("#shown-count")).to_have_text("300 of 300 tasks")
    page.click(".head span[data-key=rate]")
    page.click(".head span[data-key=rate]")  # descending: 100 % tasks first
    top = page.eval_on_selector("#spacer .row", "r => r.children[2].textContent")
    assert top == "100 %"
    page.click("#spacer .row >> nth=0")
    page.wait_for_selector("#detail-table")
    cells = page.eval_on_selector_all("#detail-table tr", "rows => rows.length")
    assert cells == 5  # header + 4 rollouts
    assert "is <b>0</b> </script> <!-- <script>" in page.inner_text("#detail-table")  # as text, not HTML
    assert errors == []


def test_only_the_pages_own_script_runs(report: Path, tmp_path: Path) -> None:
    """Issue 22 (9): the CSP allows the page's one script by its hash (no 'unsafe-inline' for scripts),
    sends no form and locks the base URI: a script injected into the page does not run, and neither does
    an inline handler; the page's own script still does."""
    import re

    html = report.read_text("utf-8")
    policy = re.search(r'http-equiv="Content-Security-Policy" content="([^"]+)"', html)
    assert policy is not None
    directives = dict(d.strip().split(" ", 1) for d in policy.group(1).split(";"))
    assert directives["script-src"].startswith("'sha256-") and "unsafe-inline" not in directives["script-src"]
    assert directives["form-action"] == "'none'" and directives["base-uri"] == "'none'"
    injected = tmp_path / "injected.html"
    payload = "<script>document.title='pwned'</script><img src=x onerror=\"document.title='pwned'\">"
    injected.write_text(html.replace("<main>", "<main>" + payload, 1), "utf-8")
    seen: dict[str, object] = {}

    def look() -> None:  # in a thread of its own: Playwright's sync API refuses a thread with a loop
        with open_offline(injected, "#spacer .row") as (page, errors, _):
            seen.update(title=page.title(), rows=page.locator("#spacer .row").count(), errors=list(errors))

    import threading

    thread = threading.Thread(target=look)
    thread.start()
    thread.join()
    assert seen["title"] != "pwned" and isinstance(seen["rows"], int) and seen["rows"] > 0, seen
    assert any("Content Security Policy" in str(e) for e in seen["errors"]), seen  # type: ignore[attr-defined]
