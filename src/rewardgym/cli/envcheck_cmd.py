"""``gym env validate``, ``gym env test`` and ``gym env schema``: an environment checked without starting it.

- ``gym env validate [--config …] [--resources-server N…] [model flags] [--json]``: what ``gym env start``
  checks before it launches anything (every key known or refused, every field of every server valid), plus
  every dataset the config's agents list: its ``jsonl_fpath`` found (as ``gym eval run --split`` finds it) and
  each line a JSON object with a ``responses_create_params`` object (a bad line is an error naming
  ``file:line``). Prints one line per server and per dataset (``--json``: one JSON object), exit 0; the
  first problem is one ``Error:`` line, exit 1 (2 for a usage error).
- ``gym env test NAME|FOLDER [--json]``: runs the environment's own tests (its ``tests/`` folder: the
  verifier cases, the example rows, the config) with pytest in a child process; the exit code is pytest's.
  NAME is a built-in environment; FOLDER an environment folder of yours.
- ``gym env schema NAME [--kind resources_servers|responses_api_agents|responses_api_models]``: the JSON
  Schema of a server implementation's config (its pydantic model), indented.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Annotated, Any

import orjson
import typer

from rewardgym.cli.config_cmd import (
    CONFIG_OPTION_NAMES,
    OVERRIDE_CONTEXT,
    ConfigOpt,
    ModelApiKeyFileOpt,
    ModelApiKeyOpt,
    ModelOpt,
    ModelTypeOpt,
    ModelUrlOpt,
    ResourcesServerOpt,
    SearchDirOpt,
)
from rewardgym.cli.main import env_app
from rewardgym.cli.overrides import split_overrides
from rewardgym.cli.stack_config import load_stack_config
from rewardgym.collect.collate import dataset_path, datasets_of
from rewardgym.environments import ROOT as ENVIRONMENTS
from rewardgym.errors import DataError, UsageError
from rewardgym.io.jsonl import parse_line
from rewardgym.protocol import keys

KINDS = ("resources_servers", "responses_api_agents", "responses_api_models")


def _dataset_rows(path: Path) -> int:
    rows = 0
    with path.open("rb") as handle:
        for number, raw in enumerate(handle, start=1):
            if not raw.strip():
                continue
            row = parse_line(raw, path, number)
            if not isinstance(row.get(keys.RESPONSES_CREATE_PARAMS), dict):
                raise DataError(f"{path}:{number}: row has no 'responses_create_params' object")
            rows += 1
    return rows


@env_app.command("validate", context_settings=OVERRIDE_CONTEXT)
def validate(
    ctx: typer.Context,
    config: ConfigOpt = None,
    resources_server: ResourcesServerOpt = None,
    model_type: ModelTypeOpt = None,
    search_dir: SearchDirOpt = None,
    model: ModelOpt = None,
    model_url: ModelUrlOpt = None,
    model_api_key: ModelApiKeyOpt = None,
    model_api_key_file: ModelApiKeyFileOpt = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print one JSON object.")] = False,
) -> None:
    """Check a config and its datasets without starting anything (what 'gym env start' would refuse)."""
    from rewardgym.launch.from_config import child_specs, validate_specs

    overrides = split_overrides(ctx.args, [*CONFIG_OPTION_NAMES, "--json"])
    cfg = load_stack_config(
        overrides=overrides, config=config or [], resources=resources_server or [],
        model_types=model_type or [], agents=[], search_dirs=search_dir or [], model=model,
        model_url=model_url, model_api_key=model_api_key, model_api_key_file=model_api_key_file,
        require_complete=False,
    )  # fmt: skip
    validate_specs(child_specs(cfg, log_dir=Path.home() / ".cache/rewardgym/logs"), cfg)
    servers = [
        {"name": i.name, "kind": i.kind, "implementation": i.implementation} for i in cfg.instances.values()
    ]
    datasets: list[dict[str, Any]] = []
    for agent, entry, server in datasets_of(cfg):
        name = str(entry.get("name"))
        path = dataset_path(str(entry.get("jsonl_fpath", "")), server, agent, name)
        datasets.append(
            {
                "agent": agent,
                "name": name,
                "type": entry.get("type"),
                "path": str(path),
                "rows": _dataset_rows(path),
            }
        )
    if as_json:
        typer.echo(orjson.dumps({"valid": True, "servers": servers, "datasets": datasets}).decode())
        return
    for server_entry in servers:
        typer.echo(f"ok  {server_entry['kind']}  {server_entry['name']} ({server_entry['implementation']})")
    for data in datasets:
        typer.echo(f"ok  dataset  {data['agent']}/{data['name']} ({data['type']}): {data['rows']} rows")
    typer.echo(f"Valid: {len(servers)} servers, {len(datasets)} datasets")


def _environment_folder(name: str) -> Path:
    folder = Path(name)
    if folder.is_dir():
        return folder
    built_in = ENVIRONMENTS / name
    if (built_in / "__init__.py").is_file():
        return built_in
    raise UsageError(f"no environment {name!r}: give a built-in name ('gym list') or an environment folder")


@env_app.command("test")
def test(
    name: Annotated[str, typer.Argument(help="A built-in environment (gym list) or an environment folder.")],
) -> None:
    """Run the environment's own tests (verifier cases, example rows, config) with pytest."""
    tests = _environment_folder(name) / "tests"
    if not tests.is_dir():
        raise UsageError(f"{tests} does not exist: the environment has no tests to run")
    command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(tests)]
    code = subprocess.run(command, check=False).returncode
    if code:
        raise typer.Exit(code)


@env_app.command("schema")
def schema(
    name: Annotated[str, typer.Argument(help="The implementation name (mcqa, simple_agent, openai_model…).")],
    kind: Annotated[str, typer.Option("--kind", help=f"The server kind: {', '.join(KINDS)}.")] = KINDS[0],
) -> None:
    """Print the JSON Schema of a server implementation's config."""
    from rewardgym.launch.child_spec import server_class

    if kind not in KINDS:
        raise UsageError(f"--kind must be one of {', '.join(KINDS)}, got {kind!r}")
    document = server_class(kind, name).config_class.model_json_schema()
    typer.echo(orjson.dumps(document, option=orjson.OPT_INDENT_2).decode())
