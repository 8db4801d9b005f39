"""``gym model …``: the embedded local model.

- ``gym model fetch [--cache-dir DIR]`` downloads (once) and verifies SmolLM2-135M-Instruct, then prints the
  path of the GGUF file on stdout. Failures are one ``Error: …`` line with exit code 1.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from rewardgym.cli.main import app
from rewardgym.models.embedded import ensure_model

model_app = typer.Typer(
    help="The embedded local model (SmolLM2-135M served by llama.cpp).", no_args_is_help=True
)
app.add_typer(model_app, name="model")

_CACHE_HELP = "Cache root (default: $REWARDGYM_CACHE_DIR, $XDG_CACHE_HOME/rewardgym or ~/.cache/rewardgym)."


@model_app.command("fetch")
def fetch(
    cache_dir: Annotated[Path | None, typer.Option("--cache-dir", help=_CACHE_HELP)] = None,
) -> None:
    """Download (once) and verify the embedded model; print its path."""
    typer.echo(str(ensure_model(cache_dir)))
