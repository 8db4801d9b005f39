"""Options naming a run's files, shared by the commands that read a finished run (profile, analyze, export),
so each is spelled and explained once."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

ROLLOUTS_HELP = "Rollouts JSONL written by 'gym eval run'."
INPUTS_HELP = "Materialized inputs (<stem>_materialized_inputs.jsonl)."

RolloutsOpt = Annotated[Path, typer.Option("--rollouts", help=ROLLOUTS_HELP)]
"""The rollouts file (required)."""
OptionalInputsOpt = Annotated[Path | None, typer.Option("--inputs", help=INPUTS_HELP)]
"""The materialized inputs, when the command can do without them."""
