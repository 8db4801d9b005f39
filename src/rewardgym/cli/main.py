"""The ``gym`` command: entry point, command groups and error reporting.

Every command module registers itself on one of the groups below. Errors a user can cause are
:class:`~rewardgym.errors.RewardGymError`: printed as one ``Error: …`` line on stderr with exit code 2 (usage)
or 1 (runtime). Tracebacks are shown only with ``--debug`` (or ``REWARDGYM_DEBUG=1``).
"""

from __future__ import annotations

import os
import sys
import traceback
from importlib import import_module

import typer

from rewardgym import __version__
from rewardgym.errors import RewardGymError

app = typer.Typer(
    name="gym",
    help="rewardgym: measure how often an LLM policy succeeds on each task of a verifiable environment.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
env_app = typer.Typer(help="Start, inspect and stop servers.", no_args_is_help=True)
eval_app = typer.Typer(help="Collect rollouts, profile them, aggregate and reverify.", no_args_is_help=True)
config_app = typer.Typer(help="Inspect the resolved configuration.", no_args_is_help=True)
app.add_typer(env_app, name="env")
app.add_typer(eval_app, name="eval")
app.add_typer(config_app, name="config")

# Command modules, imported for their registration side effect. A module that does not exist yet is
# skipped, so the CLI grows as features land without this list being a source of breakage.
_COMMAND_MODULES = (
    "rewardgym.cli.config_cmd",
    "rewardgym.cli.profile_cmd",
    "rewardgym.cli.env_cmd",
    "rewardgym.cli.run_cmd",
    "rewardgym.cli.model_cmd",
    "rewardgym.cli.envlist_cmd",
)

_DEBUG = {"enabled": False}


def _version_callback(value: bool) -> None:
    if value:
        typer.echo(f"rewardgym {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    version: bool = typer.Option(
        False, "--version", callback=_version_callback, is_eager=True, help="Print the version and exit."
    ),
    debug: bool = typer.Option(False, "--debug", help="Show tracebacks for errors."),
) -> None:
    _DEBUG["enabled"] = debug


def _load_commands() -> None:
    for module in _COMMAND_MODULES:
        try:
            import_module(module)
        except ModuleNotFoundError as exc:
            if exc.name != module:
                raise


def _report(message: str, code: int) -> int:
    from rewardgym.config.secrets import redact_text

    sys.stderr.write(f"Error: {redact_text(message)}\n")
    return code


def main(argv: list[str] | None = None) -> int:
    """Run the CLI; returns (and, as a console script, exits with) the process exit code."""
    _load_commands()
    args = sys.argv[1:] if argv is None else argv
    debug = "--debug" in args or os.environ.get("REWARDGYM_DEBUG") == "1"
    try:
        app(args=args, prog_name="gym", standalone_mode=False)
    except RewardGymError as exc:
        if debug:
            traceback.print_exc()
        return _report(str(exc), exc.exit_code)
    except (typer.Abort, typer.Exit) as exc:
        if isinstance(exc, typer.Abort):
            sys.stderr.write("Aborted.\n")
            return 130
        return int(exc.exit_code or 0)
    except typer.TyperException as exc:
        # Typer vendors click: its usage errors carry a context (for the help hint) and an exit code.
        ctx = getattr(exc, "ctx", None)
        if type(exc).__name__ == "NoArgsIsHelpError":  # typer has printed the help already
            return 0
        if debug:
            traceback.print_exc()
        format_message = getattr(exc, "format_message", None)
        message = format_message() if callable(format_message) else str(exc)
        hint = f" (see '{ctx.command_path} --help')" if ctx is not None else ""
        return _report(f"{message}{hint}", int(getattr(exc, "exit_code", 2)))
    except KeyboardInterrupt:
        sys.stderr.write("Interrupted.\n")
        return 130
    return 0


if __name__ == "__main__":
    sys.exit(main())
