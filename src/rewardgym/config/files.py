"""Reading config YAML files: one file, ``env.yaml``, and the ``config_paths`` include tree.

Contract:

* :func:`load_yaml_file` reads one YAML file into a ``DictConfig`` (OmegaConf's YAML dialect, through the
  bounded loader of :mod:`rewardgym.io.yaml_bounds`). Malformed YAML is a
  :class:`~rewardgym.errors.ConfigError` formatted ``path:line:col: problem``; a file over a size, alias-
  expansion or depth limit is ``path:line:col: YAML over a limit: …``; a file whose top level is not
  a mapping, an unreadable file or a bad ``${…}`` syntax is a ConfigError naming the file. Secret values
  found in the file are registered for redaction.
* :func:`find_config_file` resolves a path: absolute as is; relative first against the folder of the file
  that lists it, then against each search root in order (cwd, then ``--search-dir`` roots). Not found is a
  ConfigError naming the path, who listed it, and every place searched.
* :func:`collect_config_files` walks ``config_paths`` recursively and returns the files in **post-order**
  (a file after everything it includes; siblings in listed order), which is the merge order: later
  entries win. A file reached twice is loaded once (first occurrence) and a warning is returned. Each
  returned config has its own ``config_paths`` key removed.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml
from omegaconf import DictConfig, OmegaConf
from omegaconf._utils import get_yaml_loader
from omegaconf.errors import OmegaConfBaseException

from rewardgym.config.oc_errors import omegaconf_message
from rewardgym.config.secrets import register_secrets_in
from rewardgym.errors import ConfigError
from rewardgym.io.yaml_bounds import CONFIG_MAX_NODES, YamlLimitError, load_bounded_file

CONFIG_PATHS_KEY = "config_paths"
# OmegaConf's own dialect (duplicate keys refused, 1e3 floats, no timestamps), so a file reads exactly as
# ``OmegaConf.load`` would read it — but bounded. Built once: each call makes a new class.
_OMEGACONF_LOADER: type[yaml.SafeLoader] = get_yaml_loader()
ENV_YAML_NAME = "env.yaml"


@dataclass(frozen=True)
class PathRequest:
    """A config path as written somewhere, with where it was written (for resolution and messages)."""

    path: str
    """The path as written (may be relative, may start with ``~``)."""
    listed_in: Path | None = None
    """The YAML file whose ``config_paths`` listed it; relative paths try its folder first."""
    origin: str = ""
    """Human description of where it came from when not from a file (``--config``, ``+config_paths``)."""


@dataclass(frozen=True)
class LoadedFile:
    """One config file read from disk, without its ``config_paths`` key."""

    path: Path
    config: DictConfig


def _yaml_error_message(path: Path, exc: yaml.YAMLError) -> str:
    mark = getattr(exc, "problem_mark", None)
    problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
    location = f"{path}:{mark.line + 1}:{mark.column + 1}" if mark is not None else str(path)
    message = f"{location}: malformed YAML: {problem}"
    context = getattr(exc, "context", None)
    context_mark = getattr(exc, "context_mark", None)
    if context and context_mark is not None:
        message += f" ({context} started at line {context_mark.line + 1}, column {context_mark.column + 1})"
    return message


def load_yaml_file(path: Path, what: str = "config file") -> DictConfig:
    """Read one YAML mapping into a ``DictConfig`` (see the module docstring for errors)."""
    try:
        data = load_bounded_file(path, _OMEGACONF_LOADER, max_nodes=CONFIG_MAX_NODES)
        if data is not None and not isinstance(data, dict):
            raise ConfigError(f"{path}: a {what} must be a YAML mapping (key: value) at the top level")
        loaded = OmegaConf.create(data or {})
    except YamlLimitError as exc:
        mark = exc.problem_mark
        location = f"{path}:{mark.line + 1}:{mark.column + 1}" if mark is not None else str(path)
        raise ConfigError(f"{location}: YAML over a limit: {exc.problem}") from None
    except yaml.YAMLError as exc:
        raise ConfigError(_yaml_error_message(path, exc)) from None
    except OSError as exc:
        raise ConfigError(f"cannot read {what} {str(path)!r}: {exc.strerror or exc}") from None
    except UnicodeDecodeError:
        raise ConfigError(f"{path}: {what} is not UTF-8 text") from None
    except OmegaConfBaseException as exc:
        key = getattr(exc, "full_key", None)
        where = f" at key {key!r}" if key else ""
        raise ConfigError(f"{path}: invalid value{where}: {omegaconf_message(exc)}") from None
    if not isinstance(loaded, DictConfig):
        raise ConfigError(f"{path}: a {what} must be a YAML mapping (key: value) at the top level")
    register_secrets_in(OmegaConf.to_container(loaded, resolve=False))
    return loaded


def find_config_file(request: PathRequest, roots: Sequence[Path]) -> Path:
    """Resolve ``request`` to an existing file (see the module docstring)."""
    raw = Path(request.path).expanduser()
    if raw.is_absolute():
        candidates = [raw]
    else:
        candidates = []
        if request.listed_in is not None:
            candidates.append(request.listed_in.parent / raw)
        candidates.extend(root / raw for root in roots)
    for candidate in candidates:
        if candidate.is_file():
            return candidate.resolve()
    source = f" (listed in {request.listed_in})" if request.listed_in else ""
    if not source and request.origin:
        source = f" (from {request.origin})"
    searched = ", ".join(dict.fromkeys(str(c) for c in candidates))
    raise ConfigError(f"config file not found: {request.path!r}{source}; searched: {searched}")


def config_path_list(value: Any, where: str) -> list[str]:
    """Validate a ``config_paths`` value: ``None``, a string, or a list of non-empty strings."""
    if value is None:
        return []
    if isinstance(value, str):
        return [value] if value else []
    if isinstance(value, list) and all(isinstance(v, str) and v for v in value):
        return list(value)
    raise ConfigError(f"{where}: config_paths must be a list of file paths, got {value!r}")


def split_config_paths(cfg: DictConfig, where: str, listed_in: Path | None) -> list[PathRequest]:
    """Remove ``config_paths`` from ``cfg`` and return its entries as requests."""
    if CONFIG_PATHS_KEY not in cfg:
        return []
    container = OmegaConf.to_container(cfg, resolve=False)
    raw = container[CONFIG_PATHS_KEY] if isinstance(container, dict) else None
    paths = config_path_list(raw, where)
    del cfg[CONFIG_PATHS_KEY]
    return [PathRequest(p, listed_in=listed_in, origin=where) for p in paths]


def collect_config_files(
    requests: Sequence[PathRequest], roots: Sequence[Path]
) -> tuple[list[LoadedFile], list[str]]:
    """Load the include tree rooted at ``requests``; returns (files in merge order, warnings)."""
    ordered: list[LoadedFile] = []
    seen: dict[Path, PathRequest] = {}
    warnings: list[str] = []

    def visit(request: PathRequest) -> None:
        path = find_config_file(request, roots)
        if path in seen:
            first = seen[path]
            first_where = first.listed_in or first.origin or "the command line"
            here = request.listed_in or request.origin or "the command line"
            warnings.append(
                f"config file {str(path)!r} is listed more than once ({first_where}, then {here}); "
                "loaded once, at its first position"
            )
            return
        seen[path] = request
        cfg = load_yaml_file(path)
        for child in split_config_paths(cfg, str(path), listed_in=path):
            visit(child)
        ordered.append(LoadedFile(path, cfg))

    for request in requests:
        visit(request)
    return ordered, warnings


def load_env_yaml(cwd: Path) -> tuple[DictConfig, Path] | None:
    """Load ``env.yaml`` from the working directory, if present."""
    path = cwd / ENV_YAML_NAME
    if not path.is_file():
        return None
    return load_yaml_file(path, what="env.yaml"), path
