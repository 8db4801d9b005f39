"""Small modules: no module under ``src/`` is longer than 400 lines (split it into coherent smaller ones)."""

from __future__ import annotations

from tests.conftest import REPO_ROOT

LIMIT = 400


def test_no_module_exceeds_the_line_limit() -> None:
    long = sorted(
        f"{path.relative_to(REPO_ROOT)}: {count} lines"
        for path in (REPO_ROOT / "src").rglob("*.py")
        if (count := len(path.read_text(encoding="utf-8").splitlines())) > LIMIT
    )
    assert not long, "\n".join(long)
