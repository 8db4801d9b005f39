"""``gym dataset render`` and ``gym dataset collate``: NeMo Gym 0.7.0's local dataset commands.

- ``gym dataset render -i IN --prompt-config P -o OUT``: every row of IN with
  ``responses_create_params.input`` rendered from the prompt config's ``user`` (and ``system``) templates
  — what ``gym eval run --prompt-config`` puts into the materialized inputs, without repeats or indices
  (a preview). A row that already has an input, a template field the row lacks or a malformed line is an
  error naming ``file:line``; OUT is written by temp file + rename (nothing on error).
- ``gym dataset collate [--config …] [--resources-server N…] (--split S | --mode M) --output-dir D``: the
  datasets the config's agents list, one file per split (``D/<split>.jsonl``, see
  :mod:`rewardgym.collect.collate`); ``--mode train_preparation`` collates ``train`` and ``validation``,
  ``example_validation`` collates ``example``. No model is needed.
- The hub commands (``gym dataset upload / download / rm / migrate``) are not offered: they need a dataset hub
  (docs/reference/nemo_gym_parity.md).
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import orjson
import typer

from rewardgym.cli.config_cmd import ConfigOpt, ResourcesServerOpt, SearchDirOpt
from rewardgym.cli.main import dataset_app
from rewardgym.cli.run_settings import load_prompt_config
from rewardgym.cli.stack_config import load_stack_config
from rewardgym.collect.collate import collate_split
from rewardgym.collect.materialize import render_prompt
from rewardgym.errors import DataError, UsageError
from rewardgym.io.inputs import refuse_special_input
from rewardgym.io.jsonl import parse_line
from rewardgym.io.outputs import atomic_writer, guard_outputs

MODES = {"train_preparation": ("train", "validation"), "example_validation": ("example",)}


@dataset_app.command("render")
def render(
    input_path: Annotated[Path, typer.Option("--input", "-i", help="Raw input rows (JSONL).")],
    prompt_config: Annotated[
        Path, typer.Option("--prompt-config", help="YAML with a 'user' (and optional 'system') template.")
    ],
    output: Annotated[Path, typer.Option("--output", "-o", help="Rendered rows to write (JSONL).")],
) -> None:
    """Render a prompt config into each row: a preview of what 'gym eval run --prompt-config' sends."""
    refuse_special_input(input_path, "--input")
    if not input_path.is_file():
        raise DataError(f"Input file not found: '{input_path}' (--input)")
    guard_outputs([(output, "--output")], [(input_path, "--input"), (prompt_config, "--prompt-config")])
    prompt = load_prompt_config(prompt_config)
    if prompt is None:  # (a path was given: never None)
        raise UsageError("--prompt-config is required")
    count = 0
    output.parent.mkdir(parents=True, exist_ok=True)
    with atomic_writer(output) as handle, input_path.open("rb") as rows:
        for number, raw in enumerate(rows, start=1):
            if not raw.strip():
                continue
            row = parse_line(raw, input_path, number)
            render_prompt(row, prompt, f"{input_path}:{number}")
            handle.write(orjson.dumps(row) + b"\n")
            count += 1
    typer.echo(f"Rendered {count} rows into {output}")


@dataset_app.command("collate")
def collate(
    output_dir: Annotated[Path, typer.Option("--output-dir", help="Folder for <split>.jsonl.")],
    split: Annotated[
        str | None, typer.Option("--split", help="One split: train, validation, benchmark or example.")
    ] = None,
    mode: Annotated[
        str | None,
        typer.Option(
            "--mode", help="train_preparation (train + validation) or example_validation (example)."
        ),
    ] = None,
    config: ConfigOpt = None,
    resources_server: ResourcesServerOpt = None,
    search_dir: SearchDirOpt = None,
) -> None:
    """Collate the datasets the config's agents list into one file per split (offline)."""
    if (split is None) == (mode is None):
        raise UsageError("give one of --split and --mode")
    if mode is not None and mode not in MODES:
        raise UsageError(f"--mode must be one of {', '.join(MODES)}, got {mode!r}")
    splits = MODES[mode] if mode is not None else (str(split),)
    # As a stack's config (an agent names a model server: the default one completes it); no model is asked.
    cfg = load_stack_config(
        overrides=[], config=config or [], resources=resources_server or [], model_types=[], agents=[],
        search_dirs=search_dir or [], model=None, model_url=None, model_api_key=None, require_complete=False,
    )  # fmt: skip
    for name in splits:
        path, rows = collate_split(cfg, name, output_dir)
        typer.echo(f"Collated {rows} rows of split {name!r} into {path}")
