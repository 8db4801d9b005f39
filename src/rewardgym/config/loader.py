"""``load_config``: the whole pipeline from files, env.yaml and CLI overrides to a :class:`GymConfig`.

Pipeline (every problem is a :class:`~rewardgym.errors.ConfigError`):

1. Parse the override tokens (``+k=v`` / ``++k=v``); ``config_paths`` overrides name extra files.
2. Load ``env.yaml`` from the working directory (unless ``env_yaml=False``).
3. Collect config files: env.yaml's ``config_paths``, then ``config_paths`` (``--config``), then
   ``config_paths`` overrides; each recursively through its own ``config_paths``, in post-order.
4. Merge: files (later over earlier, includer over included), then env.yaml, then the overrides applied
   in order. Precedence is therefore CLI > env.yaml > later file > earlier file > included file.
   ``config_paths`` becomes the list of loaded files, in merge order.
5. Apply the ``_inherit_from`` / ``_copy`` / ``_delete_key`` directives.
6. Fill ``head_server`` and missing instance hosts/ports (so ``${head_server.port}`` resolves).
7. Resolve every ``${…}``; every ``???`` left is reported in one error (unless ``require_complete=False``).
8. Refuse what would put a secret in clear or on the wire badly (:mod:`rewardgym.config.guards`): a URL with
   ``user:password@``, a CR/LF in an API key, token or configured header.
9. Detect server instances strictly, check their references, validate hosts and ports.
10. With ``check_keys`` (every ``gym`` command), refuse unknown top-level keys first
    (:mod:`rewardgym.config.known_keys`), so a typo is the error reported rather than what it broke later.

Secret values seen on the way are registered for :func:`~rewardgym.config.secrets.redact_text`, and so is
every value ``${oc.env:…}`` read from the environment under a key that is not known-safe
(:func:`~rewardgym.config.secrets.is_env_safe_key`): :meth:`GymConfig.redacted` masks those too.
"""

from __future__ import annotations

import copy
import difflib
import logging
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import yaml
from omegaconf import DictConfig, OmegaConf
from omegaconf.errors import OmegaConfBaseException

from rewardgym.config.directives import apply_directives
from rewardgym.config.files import (
    CONFIG_PATHS_KEY,
    PathRequest,
    collect_config_files,
    config_path_list,
    load_env_yaml,
    split_config_paths,
)
from rewardgym.config.guards import check_header_values, environment_secrets, refuse_url_credentials
from rewardgym.config.instances import ServerInstance, ServerKind, check_references, find_instances
from rewardgym.config.known_keys import check_unknown_keys, origin_of
from rewardgym.config.oc_errors import omegaconf_message
from rewardgym.config.overrides import Override, apply_overrides, parse_overrides
from rewardgym.config.ports import assign_hosts_and_ports
from rewardgym.config.prefill import prefill_hosts_and_ports
from rewardgym.config.resolve import materialize
from rewardgym.config.secrets import MASK, redact, register_secrets_in
from rewardgym.errors import ConfigError

logger = logging.getLogger("rewardgym.config")


class GymConfig:
    """A loaded, validated configuration. Treat it as read-only; accessors return copies."""

    def __init__(
        self,
        *,
        raw: dict[str, Any],
        resolved: dict[str, Any],
        instances: dict[str, ServerInstance],
        head_server: tuple[str, int],
        files: Sequence[Path],
        warnings: Sequence[str],
        missing: Sequence[str],
        env_secret_paths: frozenset[str] = frozenset(),
        origins: tuple[Sequence[Override], Sequence[tuple[Path, Any]]] = ((), ()),
    ) -> None:
        self._origins = origins
        self._raw = raw
        self._env_secret_paths = env_secret_paths
        self._resolved = resolved
        self._instances = instances
        self._head_server = head_server
        self.config_files: tuple[Path, ...] = tuple(files)
        """The config files loaded, in merge order (env.yaml not included)."""
        self.warnings: tuple[str, ...] = tuple(warnings)
        """Non-fatal problems found while loading (e.g. a file listed twice); also logged."""
        self.missing: tuple[str, ...] = tuple(missing)
        """Dotted paths still ``???`` (only ever non-empty with ``require_complete=False``)."""

    @property
    def instances(self) -> dict[str, ServerInstance]:
        """Server instances by name, in config order."""
        return dict(self._instances)

    @property
    def head_server(self) -> tuple[str, int]:
        """``(host, port)`` of the head server."""
        return self._head_server

    def origin(self, parts: Sequence[str]) -> str | None:
        """Where the value at ``parts`` (``[instance, kind, implementation, field]``…) came from: ``from the
        override ++…=…`` or ``from file:line``; ``None`` when unknown (e.g. a config from a dict)."""
        overrides, sources = self._origins
        return origin_of(parts, overrides, sources)

    def instances_of(self, kind: ServerKind) -> list[ServerInstance]:
        """The instances of one kind, in config order."""
        return [inst for inst in self._instances.values() if inst.kind == kind]

    def instance(self, name: str) -> ServerInstance:
        """The instance called ``name``; ConfigError with a "did you mean" hint when there is none."""
        try:
            return self._instances[name]
        except KeyError:
            hint = difflib.get_close_matches(name, list(self._instances), n=1, cutoff=0.5)
            extra = f" (did you mean {hint[0]!r}?)" if hint else ""
            names = ", ".join(self._instances) or "none"
            raise ConfigError(f"no server instance named {name!r}{extra}; instances: {names}") from None

    def to_dict(self, resolve: bool = True) -> dict[str, Any]:
        """The config as plain data, secrets included; ``resolve=False`` keeps ``${…}`` as written."""
        return copy.deepcopy(self._resolved if resolve else self._raw)

    def redacted(self) -> dict[str, Any]:
        """The resolved config with secrets masked: the only form to print, log, serve or fingerprint.

        Masked: values of secret-looking keys, registered secret values wherever they occur, and values read
        from the environment under a key that is not known-safe."""
        result: dict[str, Any] = redact(self._resolved)
        for path in self._env_secret_paths:
            _mask_path(result, path.split("."))
        return result

    def to_yaml(self, *, redacted: bool = True) -> str:
        """The resolved config as YAML text (secrets masked unless ``redacted=False``)."""
        data = self.redacted() if redacted else self.to_dict()
        return yaml.safe_dump(data, sort_keys=False, allow_unicode=True, default_flow_style=False)

    def get(self, dotted_key: str, default: Any = None) -> Any:
        """The resolved value at a dotted path (``"num_repeats"``, ``"head_server.port"``), or ``default``."""
        node: Any = self._resolved
        for part in dotted_key.split("."):
            if isinstance(node, dict) and part in node:
                node = node[part]
            elif isinstance(node, list) and part.isdigit() and int(part) < len(node):
                node = node[int(part)]
            else:
                return default
        return copy.deepcopy(node)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], *, require_complete: bool = True) -> GymConfig:
        """See :func:`config_from_dict`."""
        return config_from_dict(data, require_complete=require_complete)

    def __repr__(self) -> str:
        return f"GymConfig(instances={list(self._instances)}, head_server={self._head_server})"


def _mask_path(node: Any, parts: list[str]) -> None:
    """Replace the value at ``parts`` with the mask (a parent already masked whole is a string: no-op)."""
    *parents, last = parts
    for part in parents:
        if isinstance(node, list) and part.isdigit() and int(part) < len(node):
            node = node[int(part)]
        elif isinstance(node, dict):
            node = node.get(part)
        else:
            return
    if (
        isinstance(node, list)
        and last.isdigit()
        and int(last) < len(node)
        and node[int(last)] not in (None, "")
    ):
        node[int(last)] = MASK
    elif isinstance(node, dict) and node.get(last) not in (None, ""):
        node[last] = MASK


def _override_requests(overrides: list[Override]) -> tuple[list[PathRequest], list[Override]]:
    requests: list[PathRequest] = []
    rest: list[Override] = []
    for override in overrides:
        if override.key == CONFIG_PATHS_KEY:
            origin = f"the {override.token.split('=', 1)[0]} override"
            for path in config_path_list(override.value, origin):
                requests.append(PathRequest(path, origin=origin))
        else:
            rest.append(override)
    return requests, rest


def _merge(configs: Sequence[DictConfig], names: Sequence[str]) -> DictConfig:
    merged: DictConfig = OmegaConf.create({})
    for cfg, name in zip(configs, names, strict=True):
        try:
            merged = OmegaConf.merge(merged, cfg)  # type: ignore[assignment]
        except OmegaConfBaseException as exc:
            raise ConfigError(f"{name}: cannot merge: {omegaconf_message(exc)}") from None
    return merged


def _fill_raw(raw: dict[str, Any], resolved: dict[str, Any], instances: dict[str, ServerInstance]) -> None:
    """Copy host/port assigned after resolution into the unresolved view, where they are still unset."""
    if not isinstance(raw.get("head_server"), dict):
        raw["head_server"] = copy.deepcopy(resolved["head_server"])
    for inst in instances.values():
        node: Any = raw
        for part in (inst.name, inst.kind, inst.implementation):
            node = node.get(part) if isinstance(node, dict) else None
        if isinstance(node, dict):
            for key, value in (("host", inst.host), ("port", inst.port)):
                if node.get(key) is None:
                    node[key] = value


def load_config(
    config_paths: Sequence[str | Path] = (),
    overrides: Sequence[str] = (),
    *,
    cwd: Path | None = None,
    search_dirs: Sequence[Path] = (),
    env_yaml: bool = True,
    require_complete: bool = True,
    check_keys: bool = False,
) -> GymConfig:
    """Load and validate the configuration (see the module docstring for the pipeline and precedence).

    ``check_keys`` refuses unknown top-level keys (step 10); every ``gym`` command sets it."""
    here = (cwd or Path.cwd()).resolve()
    roots = list(dict.fromkeys([here, *((here / Path(d).expanduser()).resolve() for d in search_dirs)]))
    file_requests, key_overrides = _override_requests(parse_overrides(overrides))

    env = load_env_yaml(here) if env_yaml else None
    requests: list[PathRequest] = []
    if env is not None:
        requests += split_config_paths(env[0], str(env[1]), listed_in=env[1])
    requests += [PathRequest(str(p), origin="--config") for p in config_paths]
    requests += file_requests
    files, warnings = collect_config_files(requests, roots)
    for warning in warnings:
        logger.warning("%s", warning)

    layers = [f.config for f in files] + ([env[0]] if env is not None else [])
    names = [str(f.path) for f in files] + ([str(env[1])] if env is not None else [])
    merged = _merge(layers, names)
    apply_overrides(merged, key_overrides)
    if files:
        merged[CONFIG_PATHS_KEY] = [str(f.path) for f in files]

    raw = OmegaConf.to_container(merged, resolve=False)
    ignored: list[str] = []
    sources = [(f.path, f.config) for f in files] + ([(env[1], env[0])] if env is not None else [])
    if check_keys:  # before the build: a typo is the error to report, not what it made fail further on
        ignored = check_unknown_keys(
            raw,  # type: ignore[arg-type]
            overrides=key_overrides,
            sources=sources,
            env_yaml=env[1] if env is not None else None,
        )
        for warning in ignored:
            logger.warning("%s", warning)
    return _build(
        raw,
        files=[f.path for f in files],
        warnings=[*warnings, *ignored],
        require_complete=require_complete,
        origins=(key_overrides, sources),
    )


def _build(
    raw: Any,
    *,
    files: Sequence[Path],
    warnings: Sequence[str],
    require_complete: bool,
    origins: tuple[Sequence[Override], Sequence[tuple[Path, Any]]] = ((), ()),
) -> GymConfig:
    """Steps 5-8 of the pipeline on a merged, unresolved plain config."""
    if not isinstance(raw, dict):
        raise ConfigError(f"a config must be a mapping, got {type(raw).__name__}")
    raw = apply_directives(raw)
    prefill_hosts_and_ports(raw)
    try:
        tree = OmegaConf.create(raw)
    except OmegaConfBaseException as exc:
        raise ConfigError(f"invalid config: {omegaconf_message(exc)}") from None
    env_reads: list[tuple[str, str]] = []
    resolved, missing = materialize(tree, require_complete=require_complete, env_reads=env_reads)
    register_secrets_in(resolved)
    env_secret_paths = environment_secrets(env_reads)
    refuse_url_credentials(resolved)
    check_header_values(resolved)

    blocks = find_instances(resolved)
    check_references(blocks)
    instances, head = assign_hosts_and_ports(resolved, blocks)
    _fill_raw(raw, resolved, instances)
    return GymConfig(
        raw=raw,
        resolved=resolved,
        instances=instances,
        head_server=head,
        files=files,
        warnings=warnings,
        missing=missing,
        env_secret_paths=env_secret_paths,
        origins=origins,
    )


def config_from_dict(data: Mapping[str, Any], *, require_complete: bool = True) -> GymConfig:
    """A :class:`GymConfig` from an already merged config mapping (e.g. ``cfg.to_dict()`` passed to a child
    server, or the config a head server serves). Directives, interpolation, instance detection and
    reference checks run again; hosts and ports already present are kept, missing ones are filled in."""
    return _build(copy.deepcopy(dict(data)), files=(), warnings=(), require_complete=require_complete)
