"""Asset selectors: ``--resources-server N[/flavor]``, ``--model-type N[/flavor]``, ``--agent N[/flavor]``.

Contract: :func:`resolve_asset` maps a selector to a config file. ``N`` selects ``<N>.yaml``,
``N/flavor`` selects ``<flavor>.yaml``. Search order, first existing file wins:

1. each ``search_dirs`` root, then the working directory, in NeMo Gym's layout:
   ``resources_servers/N/configs/``, ``responses_api_models/N/configs/``, ``responses_api_agents/N/configs/``;
2. the installed package: ``rewardgym/environments/N/configs/`` (resources servers),
   ``rewardgym/models/configs/`` (model types), ``rewardgym/agents/configs/`` (agents).

Not found is a :class:`~rewardgym.errors.ConfigError` listing the places searched, the available names and a
"did you mean" hint. Names are plain identifiers (letters, digits, ``_ . -``), never paths.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Final, Literal, get_args

from rewardgym.errors import ConfigError

AssetKind = Literal["resources_server", "model_type", "agent"]
ASSET_KINDS: Final[tuple[AssetKind, ...]] = get_args(AssetKind)

PACKAGE_ROOT: Final = Path(__file__).resolve().parents[1]
"""The installed ``rewardgym`` package folder."""

_NEMO_DIRS: Final[dict[str, str]] = {
    "resources_server": "resources_servers",
    "model_type": "responses_api_models",
    "agent": "responses_api_agents",
}
_LABELS: Final[dict[str, str]] = {
    "resources_server": "resources server",
    "model_type": "model type",
    "agent": "agent",
}
_NAME_RE = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.-]*(/[A-Za-z0-9_][A-Za-z0-9_.-]*)?$")


def _package_file(kind: AssetKind, base: str, flavor: str) -> Path:
    if kind == "resources_server":
        return PACKAGE_ROOT / "environments" / base / "configs" / f"{flavor}.yaml"
    folder = "models" if kind == "model_type" else "agents"
    return PACKAGE_ROOT / folder / "configs" / f"{flavor}.yaml"


def _roots(search_dirs: Sequence[Path], cwd: Path) -> list[Path]:
    roots = [(cwd / d).resolve() for d in search_dirs]
    roots.append(cwd.resolve())
    return list(dict.fromkeys(roots))


def _nemo_names(root: Path, kind: AssetKind) -> list[str]:
    names = []
    for path in sorted((root / _NEMO_DIRS[kind]).glob("*/configs/*.yaml")):
        base = path.parent.parent.name
        names.append(base if path.stem == base else f"{base}/{path.stem}")
    return names


def available_assets(
    kind: AssetKind, search_dirs: Sequence[Path] = (), *, cwd: Path | None = None
) -> list[str]:
    """Every selector name of ``kind`` that :func:`resolve_asset` would find, sorted."""
    names: set[str] = set()
    for root in _roots(search_dirs, cwd or Path.cwd()):
        names.update(_nemo_names(root, kind))
    if kind == "resources_server":
        for path in (PACKAGE_ROOT / "environments").glob("*/configs/*.yaml"):
            base = path.parent.parent.name
            names.add(base if path.stem == base else f"{base}/{path.stem}")
    else:
        folder = "models" if kind == "model_type" else "agents"
        names.update(p.stem for p in (PACKAGE_ROOT / folder / "configs").glob("*.yaml"))
    return sorted(names)


def resolve_asset(
    kind: AssetKind, name: str, search_dirs: Sequence[Path] = (), *, cwd: Path | None = None
) -> Path:
    """The config file selected by ``name`` (see the module docstring)."""
    if kind not in ASSET_KINDS:
        raise ValueError(f"unknown asset kind {kind!r}; expected one of {ASSET_KINDS}")
    label = _LABELS[kind]
    if not _NAME_RE.match(name) or ".." in name.split("/"):
        raise ConfigError(f"invalid {label} name {name!r}: expected NAME or NAME/FLAVOR")
    base, _, flavor = name.partition("/")
    flavor = flavor or base
    here = cwd or Path.cwd()
    candidates = [
        root / _NEMO_DIRS[kind] / base / "configs" / f"{flavor}.yaml" for root in _roots(search_dirs, here)
    ]
    candidates.append(_package_file(kind, base, flavor))
    for candidate in candidates:
        if candidate.is_file():
            return candidate
    available = available_assets(kind, search_dirs, cwd=here)
    message = f"no {label} config named {name!r}"
    hint = difflib.get_close_matches(name, available, n=1, cutoff=0.5)
    if hint:
        message += f" (did you mean {hint[0]!r}?)"
    message += "; searched: " + ", ".join(str(c) for c in candidates)
    message += "; available: " + (", ".join(available) if available else "none")
    raise ConfigError(message)
