"""A self-contained HTML page opened in a real headless Chromium (Debian's ``chromium``, driven by Playwright
for Python through ``executable_path``), with every console error and every request recorded — shared by the
analysis report's and the compare page's browser tests."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from playwright.sync_api import Page, sync_playwright

CHROMIUM = Path("/usr/bin/chromium")
ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--no-first-run",
]


@contextmanager
def open_offline(page_file: Path, ready_selector: str) -> Iterator[tuple[Page, list[str], list[str]]]:
    """``(page, console errors, requested URLs)`` once ``ready_selector`` is on the page."""
    if not CHROMIUM.exists():
        pytest.fail("Debian's chromium is missing: run 'make install' (it installs it when absent)")
    errors: list[str] = []
    requests: list[str] = []
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM), args=ARGS)
        page = browser.new_page(viewport={"width": 1300, "height": 900})
        page.on("console", lambda message: errors.append(message.text) if message.type == "error" else None)
        page.on("pageerror", lambda error: errors.append(str(error)))
        page.on("request", lambda request: requests.append(request.url))
        page.goto(page_file.as_uri())
        page.wait_for_selector(ready_selector)
        yield page, errors, requests
        browser.close()
