"""The repository stands alone: nothing reads outside the checkout, and every ``§`` reference resolves.

- No tracked file under ``src/``, ``tests/``, ``benchmarks/``, ``scripts/``, ``Makefile`` or ``.ci/`` names
  the workspace's sibling reference folder (only the developers' workspace has it), the retired
  ``REWARDGYM_…`` variable that pointed at it, or
  an absolute workspace path, or climbs above the repository root with ``Path(__file__)`` ancestors.
- Every ``docs/reference/<page>.md §N[.M]`` reference names an existing page that has a heading numbered
  ``N[.M]``; every other ``§<number>`` in ``src/``, ``tests/``, ``docs/``, ``benchmarks/`` and ``scripts/``
  is an error (it would point at a document a reader cannot open). Inside ``docs/reference/`` a bare ``§N``
  refers to the page itself, or to the page linked just before it (``[contract.md](contract.md) §5``).
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

from tests.conftest import NEMO_GYM_DATA, REPO_ROOT

REFERENCE = REPO_ROOT / "docs" / "reference"
CODE_ROOTS = ("src", "tests", "benchmarks", "scripts", "Makefile", ".ci")
SECTION_ROOTS = ("src", "tests", "docs", "benchmarks", "scripts")
TEXT_SUFFIXES = {".py", ".md", ".sh", ".yaml", ".yml", ".toml", ".cfg", ".txt", ""}
SKIPPED_DIRS = {".venv", "__pycache__", ".mypy_cache", ".pytest_cache", ".ruff_cache", ".git", ".hypothesis"}

_SHARED = "sha" + "red"

OUTSIDE = re.compile(
    # Spelled in pieces so that this file does not itself read as a reference to the folder.
    r"\.\./"
    + _SHARED  # the workspace's sibling folder
    + r"|"
    + _SHARED
    + r"/reference"
    + r"|REWARDGYM_"
    + _SHARED.upper()
    + r"|/work/(?:"
    + _SHARED
    + r"|main|wt)\b"  # absolute paths of the development workspace
    + r"|\b_?(?:REPO|REPO_ROOT|ROOT)\.parent\b"  # one level above the repository root
)
ANCESTORS = re.compile(r"Path\(__file__\)(?:\.resolve\(\))?(?:\.parents\[(\d+)\]|((?:\.parent\b)+))")
NUMBER = r"\d+(?:\.\d+)*"
REFERENCE_CITE = re.compile(
    rf"docs/reference/(?P<page>[\w.-]+\.md)`*\s+(?P<refs>§{NUMBER}(?:(?:\s*[–-]\s*§?|,\s*§|\s+and\s+§){NUMBER})*)"
)
LINKED_CITE = re.compile(
    rf"\]\((?P<page>[\w.-]+\.md)\)\s+(?P<refs>§{NUMBER}(?:(?:\s*[–-]\s*§?|,\s*§|\s+and\s+§){NUMBER})*)"
)
BARE_SECTION = re.compile(rf"§\s*(?P<number>{NUMBER})")
HEADING = re.compile(rf"^#{{1,6}}\s+(?P<number>{NUMBER})\.?\s", re.MULTILINE)


def _tracked(*roots: str) -> list[Path]:
    """Tracked text files under ``roots`` (git's view when this is a clone, else a filesystem walk)."""
    try:
        listing = subprocess.run(
            ["git", "ls-files", "-z", "--", *roots], cwd=REPO_ROOT, capture_output=True, check=True
        ).stdout.decode()
        paths = [REPO_ROOT / name for name in listing.split("\0") if name]
    except (OSError, subprocess.CalledProcessError):
        paths = []
        for root in roots:
            top = REPO_ROOT / root
            if top.is_file():
                paths.append(top)
            elif top.is_dir():
                paths += [p for p in top.rglob("*") if p.is_file() and not SKIPPED_DIRS & set(p.parts)]
    assert paths, f"no files found under {roots}"
    return [
        p for p in paths if p.suffix in TEXT_SUFFIXES and p.is_file() and not p.is_relative_to(NEMO_GYM_DATA)
    ]


def outside_references(relative: Path, text: str) -> list[str]:
    """Each place in ``text`` (the file at ``relative`` in the repo) that reaches outside the checkout."""
    found = [f"{relative}: {m.group(0)!r}" for m in OUTSIDE.finditer(text)]
    depth = len(relative.parts)  # Path(__file__) has this many ancestors inside the repository
    for m in ANCESTORS.finditer(text):
        climbed = int(m.group(1)) + 1 if m.group(1) is not None else m.group(2).count(".parent")
        if climbed > depth:
            found.append(f"{relative}: {m.group(0)!r} climbs {climbed} levels from depth {depth}")
    return found


def _numbers(refs: str) -> list[str]:
    return re.findall(NUMBER, refs)


def _headings(page: Path) -> set[str]:
    return {m.group("number") for m in HEADING.finditer(page.read_text(encoding="utf-8"))}


def unresolved_sections(relative: Path, text: str, headings: dict[str, set[str]]) -> list[str]:
    """Each ``§`` reference in ``text`` that does not resolve to a numbered heading of a reference page."""
    problems: list[str] = []
    covered: list[tuple[int, int]] = []
    in_reference = relative.parts[:2] == ("docs", "reference")
    cites = list(REFERENCE_CITE.finditer(text))
    if in_reference:
        cites += LINKED_CITE.finditer(text)
    for m in cites:
        covered.append(m.span())
        page = m.group("page")
        if page not in headings:
            problems.append(f"{relative}: {m.group(0)!r} names a page that is not in docs/reference/")
            continue
        problems += [
            f"{relative}: {m.group(0)!r} — docs/reference/{page} has no heading {number}"
            for number in _numbers(m.group("refs"))
            if number not in headings[page]
        ]
    for m in BARE_SECTION.finditer(text):
        if any(start <= m.start() < end for start, end in covered):
            continue
        if in_reference and m.group("number") in headings[relative.name]:
            continue  # a section of the same page
        line = text.count("\n", 0, m.start()) + 1
        problems.append(f"{relative}:{line}: {m.group(0)!r} points at no docs/reference/<page>.md heading")
    return problems


def test_nothing_reads_outside_the_checkout() -> None:
    problems: list[str] = []
    for path in _tracked(*CODE_ROOTS):
        relative = path.relative_to(REPO_ROOT)
        if relative == Path(__file__).relative_to(REPO_ROOT):
            continue  # this file spells the patterns out
        problems += outside_references(relative, path.read_text(encoding="utf-8", errors="replace"))
    assert not problems, "\n".join(problems)


def test_the_nemo_gym_reference_data_is_in_the_repo() -> None:
    assert (NEMO_GYM_DATA / "NOTICE").is_file()
    assert "Apache License, Version 2.0" in (NEMO_GYM_DATA / "NOTICE").read_text()
    assert len(list((NEMO_GYM_DATA / "nemo_gym_examples").glob("*/example.jsonl"))) == 12
    assert len(list((NEMO_GYM_DATA / "nemo_gym_examples").glob("*/example_rollouts.jsonl"))) == 12
    assert (NEMO_GYM_DATA / "nemo_gym_0.7.0_outputs" / "r_repeat_level_metrics.json").is_file()


def test_every_section_reference_resolves() -> None:
    headings = {page.name: _headings(page) for page in REFERENCE.glob("*.md")}
    assert {"contract.md", "profile.md", "environments.md", "health_check.md"} <= set(headings)
    problems: list[str] = []
    cited = 0
    for path in _tracked(*SECTION_ROOTS):
        relative = path.relative_to(REPO_ROOT)
        if relative == Path(__file__).relative_to(REPO_ROOT):
            continue
        text = path.read_text(encoding="utf-8", errors="replace")
        cited += len(REFERENCE_CITE.findall(text))
        problems += unresolved_sections(relative, text, headings)
    assert not problems, "\n".join(problems)
    assert cited >= 40  # the docstrings' citations are really found (a broken pattern would see none)


@pytest.mark.parametrize(
    ("relative", "text"),
    [
        ("tests/conftest.py", f'ROOT.parent / "{_SHARED}"'),
        ("tests/conftest.py", "Path(__file__).resolve().parents[2]"),
        ("tests/profile/x.py", "Path(__file__).parent.parent.parent.parent"),
        ("benchmarks/x.py", f'REPO.parent / "{_SHARED}/reference/x.jsonl"'),
        ("Makefile", f"cp -r ../{_SHARED}/reference ."),
        ("scripts/x.sh", f"export REWARDGYM_{_SHARED.upper()}=/work/{_SHARED}"),
    ],
)
def test_the_outside_check_catches_escapes(relative: str, text: str) -> None:
    assert outside_references(Path(relative), text)


def test_the_outside_check_allows_paths_inside_the_repo() -> None:
    assert not outside_references(Path("tests/profile/x.py"), "Path(__file__).resolve().parents[2] / 'src'")
    assert not outside_references(Path("tests/x.py"), "Path(__file__).parent.parent / 'docs'")


@pytest.mark.parametrize(
    ("text", "bad"),
    [
        ("see environments.md §2.5", True),  # a page outside the repo
        ("the contract §7.3", True),
        ("docs/reference/environments.md §99", True),  # no such heading
        ("docs/reference/nowhere.md §1", True),
        ("docs/reference/environments.md §2.2–2.99", True),  # the end of a range too
        ("docs/reference/environments.md §2.2–2.4", False),
        ("``docs/reference/environments.md`` §8 and §0.5", False),
        ("`docs/reference/profile.md`\n§6, §7", False),
        ("[environments.md](environments.md) §3–§14", True),  # a link only counts inside docs/reference
        ("| § | scenario |", False),
    ],
)
def test_the_section_check(text: str, bad: bool) -> None:
    headings = {page.name: _headings(page) for page in REFERENCE.glob("*.md")}
    assert bool(unresolved_sections(Path("src/x.py"), text, headings)) is bad
