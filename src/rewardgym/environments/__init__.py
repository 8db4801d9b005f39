"""The environment library: one sub-package per environment (NeMo Gym's names).

Adding an environment means adding one folder ``environments/<name>/`` and nothing else: its package
``__init__`` registers the server class with ``@register("resources_servers", "<name>")`` (found by the
registry's naming convention), ``configs/<name>.yaml`` defines the server and a ``simple_agent`` for it,
``data/example.jsonl`` holds example rows, and ``README.md`` documents fields and rewards.

:func:`catalogue` lists the environments without importing them (it reads each package docstring).
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent


@dataclass(frozen=True)
class EnvironmentInfo:
    name: str
    summary: str
    folder: Path


def _summary(init_file: Path) -> str:
    docstring = ast.get_docstring(ast.parse(init_file.read_text(encoding="utf-8"))) or ""
    first = docstring.strip().split("\n\n", 1)[0].replace("\n", " ")
    prefix, _, rest = first.partition(": ")
    return rest if prefix.strip("`") and rest else first


def catalogue() -> list[EnvironmentInfo]:
    """Every environment folder that is a package, sorted by name."""
    found = []
    for init_file in sorted(ROOT.glob("*/__init__.py")):
        folder = init_file.parent
        if folder.name.startswith("_"):
            continue
        found.append(EnvironmentInfo(folder.name, _summary(init_file), folder))
    return found
