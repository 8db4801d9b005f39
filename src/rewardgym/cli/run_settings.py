"""``gym eval run``'s settings from its flags and config: prompt config, repeats, typed config values, the
run fingerprint's settings (what ``--resume`` compares), ``--shard``, and the exit code of a finished run.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import yaml

from rewardgym.cli.reward_range import declared_reward_range
from rewardgym.cli.run_trackers import without_tracker_keys
from rewardgym.collect.materialize import MaterializeOptions, PromptConfig, RepeatSpec, validate_repeats
from rewardgym.collect.runner import CollectSummary
from rewardgym.config import GymConfig
from rewardgym.errors import DataError, UsageError
from rewardgym.io.yaml_bounds import CONFIG_MAX_NODES, load_bounded_file

EXIT_FAILURE_RATE = 3
"""Exit code of a run whose failure rate exceeded ``++max_failure_rate`` (docs/collect.md, "Exit codes")."""


def load_prompt_config(path: Path | None) -> PromptConfig | None:
    if path is None:
        return None
    try:
        data = load_bounded_file(path, max_nodes=CONFIG_MAX_NODES)
    except FileNotFoundError:
        raise DataError(f"prompt config not found: '{path}' (--prompt-config)") from None
    except yaml.YAMLError as exc:
        raise DataError(f"{path}: malformed YAML ({exc})") from None
    if not isinstance(data, dict) or not isinstance(data.get("user"), str):
        raise DataError(f"{path}: a prompt config needs a 'user' template string (and optionally 'system')")
    system = data.get("system")
    if system is not None and not isinstance(system, str):
        raise DataError(f"{path}: 'system' must be a template string")
    return PromptConfig(user=data["user"], system=system)


def repeat_spec(flag: int | None, cfg: GymConfig) -> RepeatSpec:
    value: Any = flag if flag is not None else cfg.get("num_repeats", 1)
    if value is None:
        return 1
    spec: RepeatSpec
    if isinstance(value, dict):
        spec = {str(k): v for k, v in value.items()}
    elif isinstance(value, int) and not isinstance(value, bool):
        spec = value
    else:
        raise UsageError(
            f"num_repeats must be an integer or a mapping {{agent: n, _default: n}}, got {value!r}"
        )
    validate_repeats(spec)  # before any server starts: a count beyond what it can mean is one line
    return spec


def config_bool(cfg: GymConfig, key: str, default: bool = False) -> bool:
    value = cfg.get(key, default)
    if isinstance(value, bool):
        return value
    raise UsageError(f"{key} must be true or false, got {value!r}")


def config_number(cfg: GymConfig, key: str, default: float) -> float:
    value = cfg.get(key, default)
    if isinstance(value, int | float) and not isinstance(value, bool) and value > 0:
        return float(value)
    raise UsageError(f"{key} must be a positive number, got {value!r}")


def explicit_settings(resume: bool, *, cfg: GymConfig, **given: Any) -> set[str] | None:
    """On resume, the settings the user gave again (only those are compared); None = all (fresh run)."""
    if not resume:
        return None
    names = {name for name, value in given.items() if value not in (None, False, {})}
    names |= {key for key in ("num_repeats", "agent_name", "limit") if cfg.get(key) is not None}
    names |= {key for key in ("interleave_repeats", "agent_fill_missing") if cfg.get(key) is True}
    renamed = {"agent_name": "agent", "interleave_repeats": "interleave"}
    return {renamed.get(n, n) for n in names}


def fingerprint_settings(
    cfg: GymConfig, options: MaterializeOptions, explicit: set[str] | None, shard: tuple[int, int] | None
) -> dict[str, Any]:
    materialize: dict[str, Any] = {
        "num_repeats": options.num_repeats,
        "agent": options.agent_name,
        "limit": options.limit,
        "add_seed": options.add_seed,
        "create_params": dict(options.create_params_overrides),
        "prompt_config": None if options.prompt_config is None else vars(options.prompt_config),
    }
    # Only when given, so runs without these flags keep their fingerprint.
    if shard is not None:
        materialize["shard"] = list(shard)
    if options.interleave:
        materialize["interleave"] = True
    if options.agent_fill_missing:
        materialize["agent_fill_missing"] = True
    if explicit is not None:
        materialize = {k: v for k, v in materialize.items() if k in explicit}
    settings: dict[str, Any] = {"config": without_tracker_keys(cfg.redacted()), "materialize": materialize}
    declared = declared_reward_range(cfg)
    if declared is not None:  # only when not the default, so other runs keep their fingerprint
        settings["reward_range"] = declared
    return settings


def parse_shard(value: str | None) -> tuple[int, int] | None:
    if value is None:
        return None
    index, _, count = value.partition("/")
    if not (index.strip().isdigit() and count.strip().isdigit()) or not 0 <= int(index) < int(count):
        raise UsageError(f"--shard must be I/N with 0 <= I < N (e.g. 0/4), got {value!r}")
    return int(index), int(count)


def failure_rate_limit(cfg: GymConfig) -> float | None:
    value = cfg.get("max_failure_rate")
    if value is None:
        return None
    if isinstance(value, int | float) and not isinstance(value, bool) and 0 <= value <= 1:
        return float(value)
    raise UsageError(f"max_failure_rate must be a number in 0..1, got {value!r}")


def exit_code_of(summary: CollectSummary, max_failure_rate: float | None) -> int:
    """0 done; 130 interrupted; 1 stopped; 3 when this run's failures exceed ``++max_failure_rate`` (unset:
    when every rollout it finished failed — nothing to aggregate, which a script must be able to tell)."""
    if summary.stop_reason == "interrupted":
        return 130
    if summary.stop_reason:
        return 1
    failed, finished = summary.stats.failed, summary.stats.failed + summary.stats.succeeded
    if not failed:
        return 0
    rate = failed / finished
    limit_hit = rate > max_failure_rate if max_failure_rate is not None else failed == finished
    if not limit_hit:
        return 0
    limit = "" if max_failure_rate is None else f" > max_failure_rate {max_failure_rate:g}"
    sys.stderr.write(
        f"Error: {failed} of {finished} rollouts failed this run ({rate:.1%}{limit}); "
        f"see {summary.outputs.failures}\n"
    )
    return EXIT_FAILURE_RATE


def agent_map_of(cfg: GymConfig) -> dict[str, str]:
    """``++agent_map={row agent: served agent}``: which agent runs the rows that name another."""
    value = cfg.get("agent_map")
    if value is None:
        return {}
    if not isinstance(value, dict) or not all(
        isinstance(k, str) and isinstance(v, str) and v for k, v in value.items()
    ):
        raise UsageError(f"agent_map must be a mapping of agent name to agent name, got {value!r}")
    return dict(value)


def config_path(cfg: GymConfig, key: str, flag: Path | None) -> Path | None:
    """A path flag, else NeMo Gym's config key for it (``+input_jsonl_fpath=…`` for ``--input``)."""
    if flag is not None:
        return flag
    value = cfg.get(key)
    if value is None:
        return None
    if not isinstance(value, str) or not value:
        raise UsageError(f"{key} must be a file path, got {value!r}")
    return Path(value).expanduser()


def config_concurrency(cfg: GymConfig, flag: int | None) -> int:
    """``--concurrency``, else ``num_samples_in_parallel`` (NeMo Gym's key), else 32."""
    if flag is not None:
        return flag
    value = cfg.get("num_samples_in_parallel")
    if value is None:
        return 32
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise UsageError(f"num_samples_in_parallel must be an integer >= 1, got {value!r}")
    return value


def config_text(cfg: GymConfig, key: str) -> str | None:
    """A string setting (``++split=train``), or None when unset."""
    value = cfg.get(key)
    if value is not None and (not isinstance(value, str) or not value):
        raise UsageError(f"{key} must be a non-empty string, got {value!r}")
    return value
