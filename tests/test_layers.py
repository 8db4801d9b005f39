"""Lower layers never import higher ones: the import graph of ``src/rewardgym`` stays one-way.

Every top-level package (or module) of ``rewardgym`` has a layer below; a module may import its own
package and packages of a *lower* layer only — never a higher one, never a sibling of the same layer.
Imports are read with ``ast`` (lazy imports inside functions and ``TYPE_CHECKING`` blocks count too); the
tests shipped inside an environment's folder (``environments/<name>/tests``) are test code and may use
anything. Inside ``rewardgym.profile`` the phases are ordered the same way: ``read`` < ``compute`` <
``write`` < ``api``.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import REPO_ROOT

PACKAGE = REPO_ROOT / "src" / "rewardgym"

LAYERS: tuple[tuple[str, ...], ...] = (
    ("errors",),
    ("stats",),  # the posterior model and the tests every decision uses: numpy and scipy only
    ("protocol", "registry"),
    ("io",),
    ("config",),
    ("observe",),  # trajectory capture: the capture files, the agent's record, the collector's join
    ("profile", "http"),  # the profiler is a library over io; the HTTP client is below every server
    ("metrics",),  # pass@k, key metrics, aggregate metrics (the profiler's baseline, lazily)
    ("servers",),  # the server framework
    ("launch", "agents", "models"),  # process launching; the concrete agent and model servers
    ("env", "testing"),  # the public facades environments are written against
    ("environments",),
    ("collect",),
    ("analysis",),
    ("compare",),  # checkpoint A vs B over the analysis layer (its reader, posteriors and bands)
    ("export",),  # tables of a run's files for pandas / polars / DuckDB (reads with the analysis reader)
    ("dataset",),  # profiles into training data, on the analysis' per-task numbers (gym data select)
    ("curriculum",),  # the online curriculum service: posterior model, servers framework, profile readers
    ("cli",),
    ("__main__",),
)
RANK = {name: rank for rank, names in enumerate(LAYERS) for name in names}
PROFILE_PHASES = {"read": 0, "compute": 1, "write": 2, "api": 3, "__init__": 4}


def top_level(path: Path) -> str:
    return path.relative_to(PACKAGE).parts[0].removesuffix(".py")


def product_modules() -> Iterator[Path]:
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = path.relative_to(PACKAGE).parts
        if parts[0] == "environments" and "tests" in parts:
            continue  # an environment's own tests
        yield path


def imported(path: Path) -> Iterator[tuple[int, str]]:
    """(line, module) of every absolute ``rewardgym.*`` import of ``path``."""
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names = [node.module]
        else:
            continue
        yield from ((node.lineno, name) for name in names if name.startswith("rewardgym."))


def test_every_top_level_package_has_a_layer() -> None:
    tops = {
        top_level(path)
        for path in PACKAGE.glob("*")
        if path.suffix == ".py" or (path / "__init__.py").exists()
    }
    missing = sorted(tops - set(RANK) - {"__init__"})
    assert not missing, f"give these packages a layer in tests/test_layers.py: {missing}"


def test_no_relative_imports() -> None:
    """Absolute imports only, so the layer check below sees every edge."""
    relative = [
        f"{path.relative_to(REPO_ROOT)}:{node.lineno}"
        for path in product_modules()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
        if isinstance(node, ast.ImportFrom) and node.level > 0
    ]
    assert not relative


def test_imports_point_down() -> None:
    upward = []
    for path in product_modules():
        source = top_level(path)
        if source == "__init__":
            continue
        for line, module in imported(path):
            target = module.split(".")[1]
            if target != source and RANK[target] >= RANK[source]:
                upward.append(f"{path.relative_to(REPO_ROOT)}:{line}: {source} imports {module}")
    assert not upward, "\n".join(upward)


def test_profile_phases_point_down() -> None:
    upward = []
    for path in sorted((PACKAGE / "profile").rglob("*.py")):
        parts = path.relative_to(PACKAGE / "profile").parts
        source = parts[0].removesuffix(".py")
        if source not in PROFILE_PHASES:
            continue  # tuning: knobs every phase reads
        for line, module in imported(path):
            names = module.split(".")
            if (
                names[1] != "profile"
                or len(names) < 3
                or names[2] not in PROFILE_PHASES
                or names[2] == source
            ):
                continue
            if PROFILE_PHASES[names[2]] >= PROFILE_PHASES[source]:
                upward.append(f"{path.relative_to(REPO_ROOT)}:{line}: profile.{source} imports {module}")
    assert not upward, "\n".join(upward)


@pytest.mark.parametrize(
    ("source", "target"),
    [("http", "servers"), ("servers", "launch"), ("metrics", "servers"), ("profile", "metrics")],
)
def test_the_table_forbids_the_upward_edges_this_split_removed(source: str, target: str) -> None:
    assert RANK[source] < RANK[target]


def test_no_two_modules_import_each_other() -> None:
    """No module circles, not even soft ones through lazy or ``TYPE_CHECKING`` imports (a shared types
    module breaks them, as ``analysis.health_types`` and ``export.tracker_types`` do); a package and its own
    sub-modules are exempt (the package re-exports them)."""
    names = {
        ".".join(p.relative_to(PACKAGE.parent).with_suffix("").parts).removesuffix(".__init__")
        for p in product_modules()
    }
    edges = set()
    for path in product_modules():
        source = ".".join(path.relative_to(PACKAGE.parent).with_suffix("").parts).removesuffix(".__init__")
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                targets = [node.module, *(f"{node.module}.{alias.name}" for alias in node.names)]
            elif isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            else:
                continue
            edges |= {(source, t) for t in targets if t in names and t != source}
    circles = sorted(
        f"{a} <-> {b}"
        for a, b in edges
        if a < b and (b, a) in edges and not b.startswith(a + ".") and not a.startswith(b + ".")
    )
    assert not circles, "\n".join(circles)
