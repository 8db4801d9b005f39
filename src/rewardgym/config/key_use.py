"""What rewardgym does with each top-level setting it accepts: read by a named module, or refused.

Contract (docs/config.md "Unknown keys", docs/reference/nemo_gym_parity.md "Keys"):

* Every key of :data:`~rewardgym.config.known_keys.KNOWN_SETTINGS` is in exactly one of
  :data:`READ_BY` (the module, below ``src/rewardgym/``, that reads it from the config and acts on it as
  NeMo Gym 0.7.0 does) and :data:`NOT_SUPPORTED` (why rewardgym does not act on it). A test enumerates the
  settings and checks both: each reader's source names the key, each refused key is refused.
* :func:`refuse_unsupported` stops a config that sets a refused key to anything but a value that asks for
  nothing (``null``, ``false``, an empty mapping or list, or the one value that is what rewardgym does
  anyway, e.g. ``error_on_almost_servers: true``), with one line per key: ``'skills' is not supported by
  rewardgym: … (from …)``. ``allow_unknown_keys`` does not lift it: NeMo Gym would act on these keys, so a
  run that ignored them would not be the run the user asked for.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Final

from rewardgym.errors import ConfigError

_RUN = "cli/run_options.py"
_RUN_SETTINGS = "cli/run_settings.py"
_TRACKERS = "cli/run_trackers.py"
_PORTS = "config/ports.py"
_HEALTH = "cli/run_health.py"

READ_BY: Final[Mapping[str, str]] = {
    "_copy": "config/directives.py", "_delete_key": "config/directives.py",
    "_inherit_from": "config/directives.py", "allow_unknown_keys": "config/known_keys.py",
    "config_paths": "config/files.py", "policy_api_key": "config/flags.py",
    "policy_base_url": "config/flags.py", "policy_model_name": "config/flags.py",
    "default_host": _PORTS, "disallowed_ports": _PORTS, "head_server": _PORTS,
    "port_range_high": _PORTS, "port_range_low": _PORTS,
    "model_endpoint_readiness_timeout_seconds": "collect/stack.py", "ray": "collect/stack.py",
    "agent_fill_missing": _RUN, "agent_name": _RUN, "auth_token": _RUN, "disable_aggregation": _RUN,
    "fail_fast": _RUN, "input_jsonl_fpath": _RUN, "limit": _RUN, "max_attempts": _RUN,
    "nemo_gym_log_dir": _RUN, "num_repeats_add_seed": _RUN, "output_jsonl_fpath": _RUN,
    "prompt_config": _RUN, "responses_create_params": _RUN, "resume_from_cache": _RUN,
    "rollout_timeout_s": _RUN, "split": _RUN,
    "agent_map": _RUN_SETTINGS, "interleave_repeats": _RUN_SETTINGS, "max_failure_rate": _RUN_SETTINGS,
    "num_repeats": _RUN_SETTINGS, "num_samples_in_parallel": _RUN_SETTINGS,
    "reward_range": "cli/reward_range.py", "input_glob": "cli/reverify_cmd.py",
    "judge_failed_only": "cli/reverify_cmd.py",
    "disable_health_check": _HEALTH, "health_check_ignored_checks": _HEALTH, "health_check_workers": _HEALTH,
    "allow_non_numeric_rewards": "cli/profile_cmd.py", "allow_partial_rollouts": "cli/profile_cmd.py",
    "mlflow_experiment_name": _TRACKERS, "mlflow_run_name": _TRACKERS, "mlflow_tracking_token": _TRACKERS,
    "mlflow_tracking_uri": _TRACKERS, "wandb_api_key": _TRACKERS, "wandb_entity": _TRACKERS,
    "wandb_name": _TRACKERS, "wandb_project": _TRACKERS,
    "observability_enabled": "config/observability.py", "model_call_capture_dir": "config/observability.py",
    "colocate": "config/colocation.py",
}  # fmt: skip
"""Setting → the module that reads it (path below ``src/rewardgym/``)."""

_VENV = "servers run in the Python environment rewardgym is installed in; no per-server venv is built"
_HUB = "rewardgym does not reach a dataset hub or model registry (docs/reference/nemo_gym_parity.md)"
_NO_COMMAND = "it configures a NeMo Gym command rewardgym does not offer (docs/reference/nemo_gym_parity.md)"
_ROW = "it is a data-row key, not a setting"
_ROUTING = "rows go to their agent_ref's agent; routing by environment server is not implemented"


def _flag(flag: str) -> str:
    return f"give it as {flag} instead"


NOT_SUPPORTED: Final[Mapping[str, str]] = {
    # NeMo Gym's own reserved keys
    "allow_openai_version_skew": "rewardgym does not use the openai package, so there is no version to skew",
    "allow_unsupported_pairing": "NeMo Gym's model/agent pairing check is not implemented",
    "cache_dir": _flag("gym model fetch --cache-dir"),
    "component_name": "components are not packaged separately in rewardgym",
    "dry_run": "there is no dry run; `gym config show` prints what would start",
    "entrypoint": "an entrypoint belongs to a server instance, not to the top level",
    "environment_routing_mode": _ROUTING, "environment_server_name": _ROUTING,
    "environment_server_routes": _ROUTING,
    "head_server_deps": _VENV, "hf_token": _HUB, "json": _flag("--json"),
    "pip_install_verbose": _VENV, "python_version": _VENV,
    "query": "NeMo Gym's status query is not offered; use `gym env status`",
    "ray_head_node_address": _flag("gym env start --ray"), "results_dir": _flag("--output"),
    "server_spinup_timeout_seconds": _flag("--startup-timeout"), "skip_venv_if_present": _VENV,
    "skip_verification": "set it on the agent (<agent>.responses_api_agents.simple_agent.skip_verification)",
    "skip_verification_reward": "set it on the agent (<agent>.responses_api_agents.simple_agent.…)",
    "telemetry": "rewardgym sends no telemetry", "token_id_capture": "set it on the agent (token_id_capture)",
    "use_absolute_ip": _flag("the host of each server instance"), "uv_cache_dir": _VENV,
    "uv_lock_timeout_seconds": _VENV, "uv_pip_set_python": _VENV, "uv_venv_dir": _VENV,
    "verbose": "log verbosity is per server (log_level)",
    "error_on_agent_without_environment_server": "an agent without an environment server is always an error",
    "error_on_almost_servers": "a block that is almost a server instance is always an error",
    "require_complete": "an incomplete run is reported by its exit code and ++max_failure_rate",
    "skills": "NeMo Gym's skills (skills_ref on rows) are not implemented",
    # rewardgym's reserved run settings with no config reader: their flags say it
    "concurrency": _flag("--concurrency or num_samples_in_parallel"), "inputs": _flag("--inputs"),
    "rollouts": _flag("--rollouts"), "log_dir": _flag("--log-dir or nemo_gym_log_dir"),
    "log_level": "set it on a server instance (log_level)",
    # data-row keys
    "_ng_task_index": _ROW, "_ng_rollout_index": _ROW, "_ng_attempt_index": _ROW, "_ng_rollout_id": _ROW,
    "response": _ROW, "agent_ref": _ROW, "skills_ref": _ROW,
    # the fields of NeMo Gym's other commands (gym eval aggregate / reverify / compare, datasets, hub…)
    **{
        key: _NO_COMMAND
        for key in (
            "agent_version", "append", "artifact_fpath", "atif_manifest_jsonl_fpath", "baseline_agent_name",
            "baseline_aggregate_metrics_fpath", "baseline_rollouts_jsonl_fpath", "candidate_agent_names",
            "candidate_aggregate_metrics_fpaths", "candidate_rollouts_jsonl_fpaths", "catalog_kind",
            "commit_description", "commit_message", "count_failure_classes_as_zero",
            "count_missing_rollouts_as_zero", "create_pr", "data_source", "dataset_name",
            "delete_from_gitlab", "delete_venvs_after_each_test", "dispatch_budget_s",
            "dispatch_longest_first", "drain_margin_s", "fail_on_total_and_test_mismatch", "fan_out",
            "force", "format", "hf_collection_name", "hf_collection_slug", "hf_dataset_prefix",
            "hf_organization", "higher_is_better", "input_format", "json_format", "manifest_path",
            "materialized_inputs_jsonl_fpath",
            "max_resident_rollout_tasks", "merge_shards", "mode", "num_prepare_benchmark_processes",
            "num_shards", "onboarding_name", "outdated", "output_dirpath", "output_fpath", "overwrite",
            "overwrite_metrics_conflicts", "prepare_script_args", "profile", "repo_id", "report_format",
            "resource_config_path", "retain_results_in_memory", "retry_invalid_judge_responses",
            "retry_terminal_timeouts", "reuse_existing_data_preparation", "reuse_verifier", "revision",
            "rollout_collection_driver", "rollouts_jsonl_fpath", "route_failures_to_sidecar",
            "scaffold_kind", "scaffold_name", "session_id", "setup_only", "shard_index", "should_download",
            "should_validate_data", "sync", "task_data_validation", "update_expected", "upload_rollouts",
            "use_cached_prepared_benchmarks", "version",
        )
    },
}  # fmt: skip
"""Setting → why rewardgym does not act on it (it is refused unless its value asks for nothing)."""

_SAME_AS_OURS: Final[Mapping[str, object]] = {
    "error_on_almost_servers": True,
    "error_on_agent_without_environment_server": True,
}
"""Refused keys whose value may be the one rewardgym always behaves as (set to it, the key asks nothing)."""


def _inert(key: str, value: Any) -> bool:
    if key in _SAME_AS_OURS:
        return value is None or value is _SAME_AS_OURS[key]  # 1 is not true here
    return value is None or value is False or (isinstance(value, dict | list) and not value)


def refuse_unsupported(data: Mapping[str, Any], origin: Callable[[str], str]) -> None:
    """Raise :class:`ConfigError` for every key of ``data`` in :data:`NOT_SUPPORTED` that asks for
    something (see the module doc); ``origin(key)`` says where the key was set (``from …``)."""
    problems = [
        f"{key!r} is not supported by rewardgym: {NOT_SUPPORTED[key]} ({origin(key)})"
        for key, value in data.items()
        if key in NOT_SUPPORTED and not _inert(key, value)
    ]
    if problems:
        raise ConfigError("; ".join(problems))
