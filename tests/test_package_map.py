"""The package map in ``rewardgym/__init__.py`` names every sub-package, and nothing that is not one."""

from __future__ import annotations

import re

import rewardgym
from tests.conftest import REPO_ROOT

PACKAGE = REPO_ROOT / "src" / "rewardgym"


def sub_packages() -> set[str]:
    names = {p.name for p in PACKAGE.iterdir() if (p / "__init__.py").is_file()}
    names |= {p.stem for p in PACKAGE.glob("*.py") if not p.stem.startswith("_")}
    return names


def test_the_package_map_lists_every_sub_package() -> None:
    doc = rewardgym.__doc__ or ""
    mapped = set(re.findall(r"^- ``(\w+)``:", doc, flags=re.MULTILINE))
    assert mapped == sub_packages()
