"""``gym config show``: print the resolved configuration, secrets masked.

Also the home of the config-loading options every command shares (``--config``, the asset selectors,
``--search-dir``, ``--model/-m``, ``--model-url``, ``--model-api-key``, ``--model-api-key-file``) as reusable
``Annotated`` types, and
:data:`CONFIG_OPTION_NAMES` for :func:`~rewardgym.cli.overrides.split_overrides` hints. Commands take the
leftover ``+k=v`` / ``++k=v`` tokens from ``ctx.args`` (see :data:`OVERRIDE_CONTEXT`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, Final

import orjson
import typer

from rewardgym.cli.main import config_app
from rewardgym.cli.overrides import split_overrides
from rewardgym.config import GymConfig, redact_text
from rewardgym.config.files import ENV_YAML_NAME

ConfigOpt = Annotated[
    list[Path] | None,
    typer.Option("--config", help="Config YAML file (repeatable; later files win).", show_default=False),
]
ResourcesServerOpt = Annotated[
    list[str] | None,
    typer.Option(
        "--resources-server", help="Resources server config N or N/flavor (repeatable).", show_default=False
    ),
]
ModelTypeOpt = Annotated[
    list[str] | None,
    typer.Option("--model-type", help="Model server config N or N/flavor (repeatable).", show_default=False),
]
SearchDirOpt = Annotated[
    list[Path] | None,
    typer.Option("--search-dir", help="Extra root searched for configs (repeatable).", show_default=False),
]
AgentOpt = Annotated[
    list[str] | None,
    typer.Option("--agent", help="Agent config N or N/flavor (repeatable).", show_default=False),
]
ModelOpt = Annotated[str | None, typer.Option("--model", "-m", help="Policy model name (policy_model_name).")]
ModelUrlOpt = Annotated[str | None, typer.Option("--model-url", help="Policy base URL (policy_base_url).")]
ModelApiKeyOpt = Annotated[
    str | None,
    typer.Option(
        "--model-api-key",
        help="Policy API key (policy_api_key); never printed, but any user of this machine can read a "
        "command line (ps): prefer --model-api-key-file, $REWARDGYM_MODEL_API_KEY or env.yaml.",
    ),
]
ModelApiKeyFileOpt = Annotated[
    Path | None,
    typer.Option(
        "--model-api-key-file",
        help="Read the policy API key from the first line of this file (keep it 0600; <(cmd) works too). "
        "Without either flag, $REWARDGYM_MODEL_API_KEY is used when set.",
        show_default=False,
    ),
]

CONFIG_OPTION_NAMES: Final = (
    "--config",
    "--resources-server",
    "--model-type",
    "--search-dir",
    "--model",
    "-m",
    "--model-url",
    "--model-api-key",
    "--model-api-key-file",
)
"""The shared option names, for "did you mean" hints on leftover tokens."""

OVERRIDE_CONTEXT: Final[dict[str, Any]] = {"allow_extra_args": True, "ignore_unknown_options": True}
"""``context_settings`` that leave ``+k=v`` / ``++k=v`` tokens (and unknown flags) in ``ctx.args``."""


@config_app.command("show", context_settings=OVERRIDE_CONTEXT)
def show(
    ctx: typer.Context,
    config: ConfigOpt = None,
    resources_server: ResourcesServerOpt = None,
    model_type: ModelTypeOpt = None,
    agent: AgentOpt = None,
    search_dir: SearchDirOpt = None,
    model: ModelOpt = None,
    model_url: ModelUrlOpt = None,
    model_api_key: ModelApiKeyOpt = None,
    model_api_key_file: ModelApiKeyFileOpt = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON instead of YAML.")] = False,
    allow_missing: Annotated[
        bool, typer.Option("--allow-missing", help="Show the config even if some values are still ???.")
    ] = False,
) -> None:
    """Print the resolved config (files + env.yaml + overrides) with secrets masked.

    Overrides: +key=value adds a key, ++key=value adds or replaces one (dotted paths, typed values).
    """
    overrides = split_overrides(ctx.args, [*CONFIG_OPTION_NAMES, "--agent", "--json", "--allow-missing"])
    from rewardgym.cli.stack_config import load_stack_config

    cfg = load_stack_config(
        overrides=overrides, config=config or [], resources=resources_server or [],
        model_types=model_type or [], agents=agent or [], search_dirs=search_dir or [], model=model,
        model_url=model_url, model_api_key=model_api_key, model_api_key_file=model_api_key_file,
        require_complete=not allow_missing,
    )  # fmt: skip
    if cfg.instances and not cfg.missing:
        _validate_servers(cfg)
    if as_json:
        text = orjson.dumps(cfg.redacted(), option=orjson.OPT_INDENT_2 | orjson.OPT_NON_STR_KEYS).decode()
    else:
        text = cfg.to_yaml(redacted=True).rstrip("\n")
    typer.echo(redact_text(text))


def read_files(cfg: GymConfig, *more: Path | None) -> tuple[tuple[Path, str], ...]:
    """The files a command read besides its data (config files, env.yaml, ``more``): none may be an
    output."""
    found = [(path, "config") for path in cfg.config_files]
    found += [(Path(ENV_YAML_NAME), "env.yaml")]
    found += [(path, "--prompt-config") for path in more if path is not None]
    return tuple(found)


def _validate_servers(cfg: GymConfig) -> None:
    """The checks `gym env start` makes before it launches anything (every field of every server), so that
    `gym config show` is a true pre-flight check."""
    from rewardgym.launch.from_config import child_specs, validate_specs

    validate_specs(child_specs(cfg, log_dir=Path.home() / ".cache/rewardgym/logs"), cfg)
