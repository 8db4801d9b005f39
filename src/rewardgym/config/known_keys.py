"""Unknown top-level config keys are an error: a mistyped ``++num_repeat=3`` must not be ignored.

Contract (docs/config.md "Unknown keys"):

* A top-level key of the merged config is **known** when it is a server instance, a known setting
  (:data:`KNOWN_SETTINGS`: rewardgym's reserved keys and run settings, plus every top-level key NeMo Gym
  0.7.0 reads, so NeMo Gym configs load unchanged), or a **variable**: a key that some ``${key…}``
  interpolation, or an ``_inherit_from`` / ``_copy`` directive, names anywhere in the config.
* Every other top-level key is reported in one :class:`~rewardgym.errors.ConfigError`: each with where it
  came from (the override token, else ``env.yaml:LINE``, else ``file:LINE`` of the highest-precedence file
  that sets it) and a "did you mean" among the known keys and instance names (:mod:`difflib`). A mapping that
  has a key close to a server kind (``resource_servers``) is named as a server instance whose kind is
  misspelt.
* The content of known blocks is not checked here: a server instance's fields are checked by that server's
  own config model (mapping-typed fields such as a model's ``extra_body`` are free-form), and the mapping
  values of settings (``responses_create_params``, ``num_repeats``, ``head_server``…) belong to their readers.
* A key that only env.yaml sets is one of its variables (env.yaml serves every config a user runs), unless
  it is a near miss of a known setting (similarity ≥ 0.85: ``policy_base_url_``, ``fail_fst``).
* ``allow_unknown_keys: true`` (``++allow_unknown_keys=true``) turns the error into warnings, for a config
  shared with another tool that reads keys of its own.
* A known setting rewardgym does not act on (:data:`~rewardgym.config.key_use.NOT_SUPPORTED`: ``skills``,
  ``allow_unsupported_pairing``…) is refused with a "not supported" line naming it, unless only env.yaml
  sets it (env.yaml serves other tools too: ``hf_token``) or its value asks for nothing
  (:func:`~rewardgym.config.key_use.refuse_unsupported`); ``allow_unknown_keys`` does not lift that.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, Final

import yaml

from rewardgym.config.directives import COPY_KEY, INHERIT_KEY, apply_directives
from rewardgym.config.instances import RESERVED_KEYS, SERVER_KINDS
from rewardgym.config.key_use import refuse_unsupported
from rewardgym.config.overrides import Override
from rewardgym.errors import ConfigError

ALLOW_UNKNOWN_KEY: Final = "allow_unknown_keys"

REWARDGYM_SETTINGS: Final = frozenset(
    {
        ALLOW_UNKNOWN_KEY, "rollout_timeout_s", "max_attempts", "fail_fast", "max_failure_rate",
        "disable_health_check", "interleave_repeats", "agent_fill_missing", "allow_non_numeric_rewards",
        "error_on_almost_servers", "error_on_agent_without_environment_server",
        "wandb_entity",  # beside NeMo Gym's tracker keys (rewardgym.cli.run_trackers.TRACKER_KEYS)
    }
)  # fmt: skip
"""Settings rewardgym's commands read that are not in :data:`RESERVED_KEYS` (which the instance detector
also uses)."""

NEMO_GYM_SETTINGS: Final = frozenset(
    {
        # NeMo Gym 0.7.0's reserved top-level keys not already reserved here
        "allow_unsupported_pairing", "environment_routing_mode", "environment_server_name",
        "environment_server_routes", "server_spinup_timeout_seconds", "telemetry", "uv_lock_timeout_seconds",
        # the fields of its command-line configs (gym eval run / aggregate / profile / compare, datasets…)
        "agent_map", "agent_version", "append", "artifact_fpath", "atif_manifest_jsonl_fpath",
        "baseline_agent_name", "baseline_aggregate_metrics_fpath", "baseline_rollouts_jsonl_fpath",
        "candidate_agent_names", "candidate_aggregate_metrics_fpaths", "candidate_rollouts_jsonl_fpaths",
        "catalog_kind", "commit_description", "commit_message", "count_failure_classes_as_zero",
        "count_missing_rollouts_as_zero", "create_pr", "data_source", "dataset_name", "delete_from_gitlab",
        "delete_venvs_after_each_test", "dispatch_budget_s", "dispatch_longest_first", "drain_margin_s",
        "fail_on_total_and_test_mismatch", "fan_out", "force", "format", "health_check_ignored_checks",
        "health_check_workers", "hf_collection_name", "hf_collection_slug", "hf_dataset_prefix",
        "hf_organization", "higher_is_better", "input_format", "input_glob", "json_format",
        "judge_failed_only", "manifest_path", "materialized_inputs_jsonl_fpath", "max_resident_rollout_tasks",
        "merge_shards", "mode", "num_prepare_benchmark_processes", "num_shards", "onboarding_name",
        "outdated", "output_dirpath", "output_fpath", "overwrite", "overwrite_metrics_conflicts",
        "prepare_script_args",
        "profile", "repo_id", "report_format", "require_complete", "resource_config_path",
        "retain_results_in_memory", "retry_invalid_judge_responses", "retry_terminal_timeouts",
        "reuse_existing_data_preparation", "reuse_verifier", "revision", "reward_range",
        "rollout_collection_driver", "rollouts_jsonl_fpath", "route_failures_to_sidecar", "scaffold_kind",
        "scaffold_name", "session_id", "setup_only", "shard_index", "should_download", "should_validate_data",
        "skills", "sync", "task_data_validation", "update_expected", "upload_rollouts",
        "use_cached_prepared_benchmarks", "version",
        # its rollout exporters
        "wandb_project", "wandb_name", "wandb_api_key", "mlflow_tracking_uri", "mlflow_tracking_token",
        "mlflow_experiment_name", "mlflow_run_name",
    }
)  # fmt: skip
"""Top-level keys NeMo Gym 0.7.0 reads (its reserved list and the fields of its command configs)."""

KNOWN_SETTINGS: Final = RESERVED_KEYS | REWARDGYM_SETTINGS | NEMO_GYM_SETTINGS

_ENV_NEAR_MISS: Final = 0.85
"""Similarity (:mod:`difflib` ratio) from which an env.yaml-only key is taken for a typo of a known one."""

# ``${a.b}``, ``${a[0]}`` name the variable ``a``; ``${oc.env:X}`` (a resolver: name then ':') names none.
_INTERPOLATION = re.compile(r"\$\{\s*([A-Za-z0-9_\-]+)((?:\.[A-Za-z0-9_\-]+)*)\s*([}:\[])")


def _strings(node: Any) -> Iterator[tuple[Any, Any]]:
    """Every (key, value) pair of every mapping, and every bare string, below ``node``."""
    if isinstance(node, dict):
        for key, value in node.items():
            yield key, value
            yield from _strings(value)
    elif isinstance(node, list):
        for value in node:
            yield None, value
            yield from _strings(value)


def referenced_keys(data: Mapping[str, Any]) -> set[str]:
    """First segments of every interpolation and directive target in ``data`` (the config's variables)."""
    found: set[str] = set()
    for key, value in _strings(dict(data)):
        if not isinstance(value, str):
            continue
        if key in (INHERIT_KEY, COPY_KEY):
            found.add(value.strip().split(".", 1)[0])
            continue
        for match in _INTERPOLATION.finditer(value):
            name, rest, end = match.groups()
            if end != ":":
                found.add(name)
            elif name in ("inherit_from", "copy") and not rest:  # ${inherit_from:a.b}
                target = value[match.end() :].strip().split("}", 1)[0].strip()
                found.add(target.split(".", 1)[0])
    return found


def _line_of(path: Path, key: str) -> int | None:
    """The line of ``path`` where the top-level ``key`` is written (unindented), if it can be found."""
    pattern = re.compile(rf"^(['\"]?){re.escape(key)}\1\s*:")
    try:
        lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return None
    return next((number for number, line in enumerate(lines, 1) if pattern.match(line)), None)


def _nested_line(path: Path, parts: Sequence[str]) -> int | None:
    """The line of the key at ``parts`` in the YAML file ``path`` (composed, never constructed: no alias is
    expanded), if it is written there."""
    try:
        node: Any = yaml.compose(path.read_text(encoding="utf-8", errors="replace"), Loader=yaml.SafeLoader)
    except (OSError, yaml.YAMLError):
        return None
    line = None
    for part in parts:
        if not isinstance(node, yaml.MappingNode):
            return None
        match = next((pair for pair in node.value if getattr(pair[0], "value", None) == part), None)
        if match is None:
            return None
        line, node = match[0].start_mark.line + 1, match[1]
    return line


def origin_of(
    parts: Sequence[str], overrides: Sequence[Override], sources: Sequence[tuple[Path, Mapping[str, Any]]]
) -> str | None:
    """Where the value at ``parts`` came from: the last override setting it (or a parent of it), else the
    last source that writes it (highest precedence), as ``from …``; ``None`` when not found."""
    dotted = ".".join(parts)
    for override in reversed(overrides):
        if dotted == override.key or dotted.startswith(override.key + "."):
            return f"from the override {override.token.split('=', 1)[0]}=…"
    for path, data in reversed(sources):
        if parts[0] not in data:
            continue
        line = _line_of(path, parts[0]) if len(parts) == 1 else _nested_line(path, parts)
        if line is not None:
            return f"from {path}:{line}"
    return None


def _origin(
    key: str, overrides: Sequence[Override], sources: Sequence[tuple[Path, Mapping[str, Any]]]
) -> str:
    """Where the top-level ``key`` came from (:func:`origin_of`)."""
    found = origin_of([key], overrides, sources)
    if found is not None:
        return found
    return next((f"from {path}" for path, data in reversed(sources) if key in data), "from the config")


def _hint(key: str, value: Any, candidates: Iterable[str]) -> str:
    if isinstance(value, dict):
        kinds = [
            (str(k), close[0])
            for k in value
            if (close := difflib.get_close_matches(str(k), SERVER_KINDS, n=1, cutoff=0.8))
            and k not in SERVER_KINDS
        ]
        if kinds:
            wrong, right = kinds[0]
            return (
                f"; it looks like a server instance with a misspelt kind {wrong!r} (did you mean {right!r}?)"
            )
    close = difflib.get_close_matches(key, sorted(candidates), n=1, cutoff=0.6)
    return f" (did you mean {close[0]!r}?)" if close else ""


def _env_variable(
    key: str,
    overrides: Sequence[Override],
    sources: Sequence[tuple[Path, Mapping[str, Any]]],
    env_yaml: Path | None,
    candidates: Iterable[str],
) -> bool:
    """Whether ``key`` is one of env.yaml's own variables: env.yaml is one store of URLs and keys for every
    config a user runs (``judge_base_url`` is there for the judge's config, used or not), so a key only it
    sets is free unless it is a near miss of a known setting (``policy_base_url_``, ``fail_fst``)."""
    if env_yaml is None or any(o.key.split(".", 1)[0] == key for o in overrides):
        return False
    setters = [path for path, data in sources if key in data]
    if setters != [env_yaml]:
        return False
    return not difflib.get_close_matches(key, list(candidates), n=1, cutoff=_ENV_NEAR_MISS)


def instance_names(data: Mapping[str, Any]) -> set[str]:
    """Top-level keys that hold a server kind once the directives are applied (their shape is checked later,
    by :func:`~rewardgym.config.instances.find_instances`)."""
    applied = apply_directives(dict(data))
    return {
        key
        for key, value in applied.items()
        if isinstance(value, dict) and any(k in SERVER_KINDS for k in value)
    }


def check_unknown_keys(
    data: dict[str, Any],
    *,
    overrides: Sequence[Override] = (),
    sources: Sequence[tuple[Path, Mapping[str, Any]]] = (),
    env_yaml: Path | None = None,
) -> list[str]:
    """Refuse unknown top-level keys of the merged, unresolved ``data`` (see the module docstring).

    ``sources`` are the config files then env.yaml, in merge order, each with its own top-level mapping;
    ``env_yaml`` names the env.yaml among them. Returns the warnings to print when ``allow_unknown_keys`` is
    set (else raises, or returns nothing).
    """
    env_only = {
        key
        for key in data
        if env_yaml is not None
        and not any(o.key.split(".", 1)[0] == key for o in overrides)
        and [path for path, source in sources if key in source] == [env_yaml]
    }
    refuse_unsupported(
        {k: v for k, v in data.items() if k not in env_only}, lambda key: _origin(key, overrides, sources)
    )
    names = instance_names(data)
    known = KNOWN_SETTINGS | names | referenced_keys(data)
    candidates = (KNOWN_SETTINGS - {ALLOW_UNKNOWN_KEY}) | names
    # A server kind as a top-level key gets find_instances' own, more specific error.
    unknown = [key for key in data if isinstance(key, str) and key not in known and key not in SERVER_KINDS]
    unknown = [key for key in unknown if not _env_variable(key, overrides, sources, env_yaml, candidates)]
    if not unknown:
        return []
    problems = [
        f"unknown top-level key {key!r} ({_origin(key, overrides, sources)})"
        + _hint(key, data[key], candidates)
        for key in unknown
    ]
    if data.get(ALLOW_UNKNOWN_KEY) is True:
        return [f"{problem} (ignored: allow_unknown_keys is set)" for problem in problems]
    raise ConfigError(
        "; ".join(problems)
        + ". A top-level key must be a server instance, a known setting, or a variable some ${…} refers to "
        "(docs/config.md, 'Unknown keys'); ++allow_unknown_keys=true ignores unknown keys"
    )
