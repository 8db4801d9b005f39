"""The report of a small, realistic run in a real Chromium (Debian's, through Playwright), checked on its
pixels and its text: legends and colour keys never cover data, empty deciles say "no rollouts", the task
browser shows and searches each task's prompt and expected answer, and the health section gives the same
rollout- and task-level counts the CLI prints (never "No check fired." while a rollout is unhealthy).

The pixel check takes two screenshots of each legend's box — legends hidden in both, the data (bars,
lines, dots, cells, value labels) hidden in the second — and requires them to be the same bytes: anything
drawn under a legend would make them differ. The same comparison over a plot's data area must differ, so
the check can fail.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from playwright.sync_api import FloatRect, Page, expect

from rewardgym.analysis import analyze_files
from rewardgym.analysis.summary import health_lines
from tests.analysis.helpers import rollout, write
from tests.browser import open_offline

CAPITALS = ("France", "Germany", "Italy", "Spain", "Japan", "Peru")
DATA = (
    "svg.chart polyline, svg.chart circle, svg.chart rect.bar, svg.chart rect.bar-strong, "
    "svg.chart rect.cell:not(.key), svg.chart text.value, svg.chart text.missing"
)
LEGENDS = "svg.chart text.legend, svg.chart g.key-strip"
STYLE = (
    "body.no-legend svg.chart text.legend, body.no-legend svg.chart g.key-strip{visibility:hidden}"
    f" body.no-data {DATA.replace(', ', ', body.no-data ')}{{visibility:hidden}}"
)


def _row(t: int) -> dict[str, Any]:
    return {
        "responses_create_params": {
            "input": [
                {"role": "system", "content": "Answer with one word."},
                {"role": "user", "content": f"What is the capital of {CAPITALS[t % 6]}? (task {t})"},
            ]
        },
        "expected_answer": f"answer-{t}",
        "domain": "geography",
    }


@pytest.fixture(scope="module")
def analyzed(tmp_path_factory: pytest.TempPathFactory) -> Any:
    folder = tmp_path_factory.mktemp("pixels")
    inputs, rows = [], []
    for t in range(40):
        for r in range(8):
            inputs.append(
                {**_row(t), "_ng_task_index": t, "_ng_rollout_index": r, "agent_ref": {"name": "a"}}
            )
            # Every output is 30 tokens, so nine of the ten length deciles have no rollout; one rollout
            # in 320 is cut off: an unhealthy rollout, far below the dataset finding's threshold.
            cut = (t, r) == (5, 3)
            rows.append(
                rollout(t, r, reward=float((t + r) % 3 == 0), out_tokens=30, cap=30 if cut else None,
                        status="incomplete" if cut else "completed", text=f"Paris {t}-{r}")
            )  # fmt: skip
    write(folder / "run_materialized_inputs.jsonl", inputs)
    return analyze_files(None, write(folder / "run.jsonl", rows))


@pytest.fixture(scope="module")
def page(analyzed: Any) -> Iterator[Page]:
    with open_offline(analyzed.paths.report, "#spacer .row") as (opened, errors, _):
        opened.add_style_tag(content=STYLE)
        yield opened
        assert errors == []


def _boxes(page: Page, selector: str) -> list[dict[str, float]]:
    boxes: list[dict[str, float]] = page.eval_on_selector_all(
        selector,
        """nodes => nodes.map(n => { const b = n.getBoundingClientRect();
            return {x: b.left + window.scrollX, y: b.top + window.scrollY,
                    width: b.width, height: b.height}; })
            .filter(b => b.width > 0 && b.height > 0)""",
    )
    return boxes


def _shot(page: Page, box: dict[str, float], *classes: str) -> bytes:
    page.evaluate("cs => { document.body.className = cs; }", " ".join(classes))
    clip: FloatRect = {"x": box["x"], "y": box["y"], "width": box["width"], "height": box["height"]}
    return page.screenshot(clip=clip, full_page=True, animations="disabled")


def test_legends_and_colour_keys_cover_no_data(page: Page) -> None:
    legends = _boxes(page, LEGENDS)
    assert len(legends) == 3 + 1  # the GRPO legend's three series, the heat map's colour key
    for box in legends:
        assert _shot(page, box, "no-legend") == _shot(page, box, "no-legend", "no-data"), box
    # The same comparison sees data where there is some: over the GRPO curves' dots and the heat map.
    for selector in ("svg[data-chart=grpo] circle", "svg[data-chart=length-heatmap] rect.cell:not(.key)"):
        plot = _boxes(page, selector)
        left, top = min(b["x"] for b in plot), min(b["y"] for b in plot)
        right = max(b["x"] + b["width"] for b in plot)
        bottom = max(b["y"] + b["height"] for b in plot)
        area = {"x": left, "y": top, "width": right - left, "height": bottom - top}
        assert _shot(page, area, "no-legend") != _shot(page, area, "no-legend", "no-data"), selector
    page.evaluate("() => { document.body.className = ''; }")


def test_empty_deciles_say_no_rollouts(page: Page) -> None:
    missing = page.eval_on_selector_all(
        "svg[data-chart=length-deciles] text.missing", "nodes => nodes.map(n => n.textContent)"
    )
    values = page.eval_on_selector_all(
        "svg[data-chart=length-deciles] text.value", "nodes => nodes.map(n => n.textContent)"
    )
    assert len(missing) + len(values) == 10 and len(missing) >= 5
    assert set(missing) == {"no rollouts"} and "–" not in values


def test_tasks_show_their_prompt_and_expected_answer_and_are_searchable(page: Page) -> None:
    first = page.eval_on_selector("#spacer .row", "r => r.lastElementChild.textContent")
    assert first == "What is the capital of France? (task 0)"
    page.fill("#f-text", "capital of peru")
    expect(page.locator("#shown-count")).to_have_text("6 of 40 tasks")  # tasks 5, 11, … 35
    page.fill("#f-text", "answer-17")  # a field of the input row, not the prompt
    expect(page.locator("#shown-count")).to_have_text("1 of 40 tasks")
    page.click("#spacer .row >> nth=0")
    expect(page.locator("#detail-prompt")).to_contain_text("system: Answer with one word.")
    expect(page.locator("#detail-prompt")).to_contain_text("user: What is the capital of Peru? (task 17)")
    expect(page.locator("#detail-fields")).to_contain_text('"expected_answer": "answer-17"')
    page.fill("#f-text", "")


def test_health_section_counts_what_the_cli_prints(page: Page, analyzed: Any) -> None:
    printed = "\n".join(health_lines(analyzed))
    assert "Unhealthy rollouts: 1 of 320 (rollout_cut_off 1)" in printed
    assert "Tasks: 0 of 40 flagged; 1 with an unhealthy rollout" in printed
    levels = page.inner_text("#health-levels")
    assert "1 of 320 rollouts unhealthy" in levels and "0 of 40 tasks flagged, 1 with an unhealthy" in levels
    section = page.inner_text("#health")
    assert "No check fired." not in section and "rollout_cut_off" in section
