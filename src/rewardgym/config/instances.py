"""The server-instance graph: which top-level keys are servers, their shape, and their references.

Contract:

* A top-level key is a **server instance** when it is not reserved and its value is a mapping with exactly
  one key, a kind from :data:`SERVER_KINDS`, whose value is a mapping with exactly one key (the
  implementation name), whose value is the mapping of the instance's fields.
* Reserved keys (:data:`RESERVED_KEYS`) and non-mapping values are never instances. A mapping that has a kind
  key but not that shape ("almost a server"), or a kind name used as a top-level key, is a
  :class:`~rewardgym.errors.ConfigError` naming the instance and what is wrong.
* :func:`check_references`: every top-level field of an instance that is a mapping
  ``{type: <kind>, name: <instance>}`` must name an existing instance of that kind, else ConfigError with a
  "did you mean" hint. A reference whose name is still ``???`` is skipped (reported as a missing value).
"""

from __future__ import annotations

import difflib
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Final, Literal, cast, get_args

from rewardgym.errors import ConfigError
from rewardgym.protocol.keys import ROW_KEYS

ServerKind = Literal["responses_api_models", "resources_servers", "responses_api_agents"]
SERVER_KINDS: Final[tuple[ServerKind, ...]] = get_args(ServerKind)
"""The three kinds of server, as written in config files."""

KIND_LABELS: Final[dict[str, str]] = {
    "responses_api_models": "model server",
    "resources_servers": "resources server",
    "responses_api_agents": "agent",
}

NEMO_RESERVED_KEYS: Final = frozenset(
    {
        "config_paths", "entrypoint", "default_host", "head_server", "disallowed_ports", "head_server_deps",
        "python_version", "pip_install_verbose", "use_absolute_ip", "uv_pip_set_python",
        "skip_venv_if_present", "hf_token", "ray_head_node_address", "port_range_low", "port_range_high",
        "dry_run", "model_endpoint_readiness_timeout_seconds", "allow_openai_version_skew", "uv_cache_dir",
        "uv_venv_dir", "results_dir", "cache_dir", "_inherit_from", "_copy", "nemo_gym_log_dir", "verbose",
        "json", "query", "observability_enabled", "model_call_capture_dir", "token_id_capture",
        "component_name", "skip_verification", "skip_verification_reward",
    }
)  # fmt: skip

RESERVED_KEYS: Final = NEMO_RESERVED_KEYS | frozenset(ROW_KEYS) | frozenset(
    {
        "auth_token", "policy_base_url", "policy_api_key", "policy_model_name", "_delete_key",
        # run settings of `gym eval run` / `gym eval profile`
        "input_jsonl_fpath", "output_jsonl_fpath", "agent_name", "limit", "num_repeats",
        "num_samples_in_parallel", "concurrency", "resume_from_cache", "prompt_config",
        "disable_aggregation", "split", "num_repeats_add_seed", "allow_partial_rollouts",
        "inputs", "rollouts", "log_dir", "log_level",
        # placement of the servers on a Ray cluster (gym env start --ray); one process for all (colocate)
        "ray", "colocate",
    }
)  # fmt: skip
"""Top-level keys that are never server instances (NeMo Gym's list plus rewardgym's own settings)."""


@dataclass(frozen=True)
class ServerInstance:
    """One server process described by the config."""

    name: str
    """The instance name (the top-level key); other servers reference it by this name."""
    kind: ServerKind
    """Which kind of server this is."""
    implementation: str
    """The implementation name (built-in name, or ``module:Class``)."""
    fields: dict[str, Any] = field(hash=False)
    """The instance's resolved fields, including ``host`` and ``port`` (``entrypoint`` is dropped)."""
    host: str
    """Host the server binds to."""
    port: int
    """Port the server listens on."""

    @property
    def url(self) -> str:
        """Base URL of the server, ``http://host:port``."""
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}"


@dataclass(frozen=True)
class InstanceBlock:
    """A detected instance before host/port assignment: points into the resolved config data."""

    name: str
    kind: ServerKind
    implementation: str
    fields: dict[str, Any]
    """The very dict inside the resolved config (mutated in place when host/port are filled in)."""


def _describe(value: Any) -> str:
    if isinstance(value, dict):
        return "a mapping with keys " + ", ".join(repr(k) for k in value) if value else "an empty mapping"
    return f"{type(value).__name__} {value!r}" if value is not None else "null"


def find_instances(data: Mapping[str, Any]) -> dict[str, InstanceBlock]:
    """Detect the server instances of a resolved config, in config order (see the module docstring)."""
    found: dict[str, InstanceBlock] = {}
    for name, value in data.items():
        if not isinstance(name, str):
            continue
        if name in RESERVED_KEYS:
            if isinstance(value, dict) and any(k in SERVER_KINDS for k in value):
                raise ConfigError(f"{name!r} is a reserved top-level key and cannot name a server instance")
            continue
        if name in SERVER_KINDS:
            raise ConfigError(
                f"top-level key {name!r} is a server kind, not an instance name; write "
                f"<instance_name>: {{{name}: {{<implementation>: {{...}}}}}}"
            )
        if not isinstance(value, dict):
            continue
        kinds = [k for k in value if k in SERVER_KINDS]
        if not kinds:
            continue
        where = f"server instance {name!r}"
        if len(kinds) > 1:
            raise ConfigError(
                f"{where}: has several server kinds ({', '.join(kinds)}); it must have exactly one"
            )
        kind = kinds[0]
        others = [str(k) for k in value if k != kind]
        if others:
            raise ConfigError(
                f"{where}: unexpected key(s) {', '.join(repr(k) for k in others)} next to {kind!r}; "
                f"fields belong under {name}.{kind}.<implementation>"
            )
        impls = value[kind]
        if not isinstance(impls, dict) or len(impls) != 1:
            raise ConfigError(
                f"{where}: {name}.{kind} must be a mapping with exactly one implementation key "
                f"(e.g. {{simple_agent: {{...}}}}), got {_describe(impls)}"
            )
        implementation, fields = next(iter(impls.items()))
        if not isinstance(implementation, str) or not implementation:
            raise ConfigError(f"{where}: implementation name must be a non-empty string")
        if fields is None:
            fields = impls[implementation] = {}
        if not isinstance(fields, dict):
            raise ConfigError(
                f"{where}: {name}.{kind}.{implementation} must be a mapping of fields, "
                f"got {_describe(fields)}"
            )
        found[name] = InstanceBlock(name, cast(ServerKind, kind), implementation, fields)
    return found


def _is_reference(value: Any) -> bool:
    return isinstance(value, dict) and value.get("type") in SERVER_KINDS and "name" in value


def check_references(instances: Mapping[str, InstanceBlock]) -> None:
    """Check every ``{type, name}`` reference (see the module docstring)."""
    for inst in instances.values():
        for field_name, ref in inst.fields.items():
            if not _is_reference(ref):
                continue
            where = f"{inst.name}.{inst.kind}.{inst.implementation}.{field_name}"
            target, kind = ref["name"], ref["type"]
            if target == "???":
                continue
            if not isinstance(target, str) or not target:
                raise ConfigError(f"{where}: reference name must be an instance name, got {target!r}")
            other = instances.get(target)
            if other is not None and other.kind == kind:
                continue
            if other is not None:
                raise ConfigError(
                    f"{where}: {target!r} is a {KIND_LABELS[other.kind]} ({other.kind}), "
                    f"but the reference expects a {KIND_LABELS[kind]} ({kind})"
                )
            same_kind = [n for n, i in instances.items() if i.kind == kind]
            hint = difflib.get_close_matches(target, same_kind, n=1, cutoff=0.5)
            message = f"{where}: refers to {KIND_LABELS[kind]} {target!r}, which is not in the config"
            if hint:
                message += f" (did you mean {hint[0]!r}?)"
            elif same_kind:
                message += f"; {KIND_LABELS[kind]} instances: {', '.join(same_kind)}"
            else:
                fix = (
                    "name one with --model-type (vllm_model, openai_model, embedded_model) or --config"
                    if kind == "responses_api_models"
                    else "add its config file with --config"
                )
                message += f"; the config defines no {kind} instance ({fix})"
            raise ConfigError(message)
