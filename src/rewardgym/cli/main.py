"""The ``gym`` command: entry point, command groups and error reporting.

Every command module registers itself on one of the groups below; only the modules the command line needs
are imported (``_MODULE_GROUPS``, ``_MODULE_COMMANDS``), so ``gym env start`` does not pay for the
profiler's or the collector's imports (``gym`` alone, ``--help`` and unknown commands import every module so
the listing is complete). ``gym env start`` and ``gym eval run`` (without ``--no-serve``) first start the
fork server (:func:`rewardgym.launch.forking.prestart`), which imports the server stack while the command
loads its config.
Errors a user can cause are
:class:`~rewardgym.errors.RewardGymError`: printed as one ``Error: …`` line on stderr with exit code 2 (usage)
or 1 (runtime). An :class:`OSError` that reaches this level (a full disk, a read-only file system…) is one
``Error: cannot write '<path>': <reason>`` line with exit code 1. Tracebacks are shown only with
``--debug`` (or ``REWARDGYM_DEBUG=1``).
"""

from __future__ import annotations

import os
import signal
import sys
import traceback
from importlib import import_module

import typer

import rewardgym
from rewardgym.cli import _interrupted_early
from rewardgym.cli.finite import require_finite_floats
from rewardgym.cli.helptext import tidy_metavars
from rewardgym.errors import RewardGymError
from rewardgym.io.outputs import command_files

app = typer.Typer(
    name="gym",
    help="rewardgym: measure how often an LLM policy succeeds on each task of a verifiable environment."
    "\n\nEvery command that reads config (config show, env start/status/stop, eval run/reverify/aggregate) "
    "also takes +key=value (add a key) and ++key=value (add or replace) overrides after its options.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
env_app = typer.Typer(help="Start, inspect and stop servers.", no_args_is_help=True)
eval_app = typer.Typer(
    help="Collect rollouts, profile, analyze and export them, aggregate and reverify.", no_args_is_help=True
)
config_app = typer.Typer(help="Inspect the resolved configuration.", no_args_is_help=True)
data_app = typer.Typer(help="Turn reward profiles into training data.", no_args_is_help=True)
dataset_app = typer.Typer(
    help="Prepare input rows: render a prompt config, collate a config's datasets (NeMo Gym's local "
    "'gym dataset' commands).",
    no_args_is_help=True,
)
app.add_typer(env_app, name="env")
app.add_typer(eval_app, name="eval")
app.add_typer(config_app, name="config")
app.add_typer(data_app, name="data")
app.add_typer(dataset_app, name="dataset")

# Command modules, imported for their registration side effect. Every one must exist: a missing module is
# an ImportError, never skipped (skipping could only hide a typo in this list).
_COMMAND_MODULES = (
    "rewardgym.cli.config_cmd",
    "rewardgym.cli.profile_cmd",
    "rewardgym.cli.env_cmd",
    "rewardgym.cli.run_cmd",
    "rewardgym.cli.reverify_cmd",
    "rewardgym.cli.model_cmd",
    "rewardgym.cli.envlist_cmd",
    "rewardgym.cli.envnew_cmd",
    "rewardgym.cli.analyze_cmd",
    "rewardgym.cli.export_cmd",
    "rewardgym.cli.data_cmd",
    "rewardgym.cli.compare_cmd",
    "rewardgym.cli.catalog_cmd",
    "rewardgym.cli.dataset_cmd",
    "rewardgym.cli.envcheck_cmd",
    "rewardgym.cli.curriculum_cmd",
)

# The command group (first command word) each module registers on. A module not listed here is imported for
# every command; a listed one only when its group runs (or for `gym`, `--help` and unknown commands).
_MODULE_GROUPS = {
    "rewardgym.cli.config_cmd": "config",
    "rewardgym.cli.profile_cmd": "eval",
    "rewardgym.cli.env_cmd": "env",
    "rewardgym.cli.run_cmd": "eval",
    "rewardgym.cli.reverify_cmd": "eval",
    "rewardgym.cli.model_cmd": "model",
    "rewardgym.cli.envlist_cmd": "env",
    "rewardgym.cli.envnew_cmd": "env",
    "rewardgym.cli.analyze_cmd": "eval",
    "rewardgym.cli.export_cmd": "eval",
    "rewardgym.cli.data_cmd": "data",
    "rewardgym.cli.compare_cmd": "eval",
    "rewardgym.cli.catalog_cmd": "list",  # also `gym search` (an unlisted word imports every module)
    "rewardgym.cli.dataset_cmd": "dataset",
    "rewardgym.cli.envcheck_cmd": "env",
    "rewardgym.cli.curriculum_cmd": "curriculum",
}
# The commands each module registers, so `gym eval profile` imports the profiler only (not the collector).
_MODULE_COMMANDS = {
    "rewardgym.cli.profile_cmd": {"profile"},
    "rewardgym.cli.run_cmd": {"run"},
    "rewardgym.cli.reverify_cmd": {"reverify", "aggregate"},
    "rewardgym.cli.env_cmd": {"start", "status", "stop"},
    "rewardgym.cli.envlist_cmd": {"list"},
    "rewardgym.cli.envnew_cmd": {"new"},
    "rewardgym.cli.envcheck_cmd": {"validate", "test", "schema"},
    "rewardgym.cli.analyze_cmd": {"analyze", "health-check"},
    "rewardgym.cli.export_cmd": {"export"},
    "rewardgym.cli.data_cmd": {"select"},
    "rewardgym.cli.compare_cmd": {"compare"},
}
_ROOT_FLAGS = frozenset({"--debug", "--version", "--help", "--json"})

_DEBUG = {"enabled": False}


def _version_callback(value: bool) -> None:
    if value:
        typer.echo(f"rewardgym {rewardgym.__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    version: bool = typer.Option(
        False, "--version", callback=_version_callback, is_eager=True, help="Print the version and exit."
    ),
    debug: bool = typer.Option(False, "--debug", help="Show tracebacks for errors."),
    as_json: bool = typer.Option(False, "--json", help="With --version: print it as JSON, with the system."),
) -> None:
    _DEBUG["enabled"] = debug


def _command_word(args: list[str]) -> str | None:
    """The command group named on the command line (``env`` of ``gym --debug env start``); ``None`` when
    there is none or the root help is asked for before it."""
    for arg in args:
        if arg == "--help":
            return None
        if arg in _ROOT_FLAGS:
            continue
        return None if arg.startswith("-") else arg
    return None


def _starts_servers(args: list[str]) -> bool:
    """``gym env start`` / ``gym eval run`` (without ``--no-serve``): commands that launch server processes.

    A serving ``gym eval run ++colocate=true`` hosts its servers itself (no fork server to prestart)."""
    words = [a for a in args if a not in _ROOT_FLAGS]
    if "--help" in args or len(words) < 2:
        return False
    if words[:2] == ["env", "start"]:
        return True
    hosted = any(a.lstrip("+") == "colocate=true" for a in args)
    return words[:2] == ["eval", "run"] and "--no-serve" not in args and not hosted


def _subcommand(args: list[str], word: str) -> str | None:
    """The command word after the group (``profile`` of ``gym eval profile …``), if one is given."""
    rest = args[args.index(word) + 1 :] if word in args else []
    return rest[0] if rest and not rest[0].startswith("-") else None


def _load_commands(args: list[str] | None = None) -> None:
    """Import the command modules the command line needs (all of them without ``args``)."""
    word = _command_word(args) if args is not None else None
    known = {"env", "eval", "config", *_MODULE_GROUPS.values()}
    everything = word is None or word not in known
    sub = _subcommand(args, word) if args is not None and word is not None and not everything else None
    commands = set().union(*_MODULE_COMMANDS.values())
    for module in _COMMAND_MODULES:
        group = _MODULE_GROUPS.get(module)
        if not everything and group is not None and group != word:
            continue
        if not everything and sub in commands and sub not in _MODULE_COMMANDS.get(module, {sub}):
            continue
        import_module(module)


def _report(message: str, code: int) -> int:
    from rewardgym.config.secrets import redact_text

    sys.stderr.write(f"Error: {redact_text(message)}\n")
    return code


def _bare_ray_flag(args: list[str]) -> list[str]:
    """``--ray`` takes an optional address: a bare one (last, or before an option or an override) means
    ``local`` (start a local cluster) — click has no optional option values, so it is spelled out here."""
    out = list(args)
    for index, arg in enumerate(out):
        if arg == "--ray" and (index + 1 == len(out) or out[index + 1].startswith(("-", "+"))):
            out.insert(index + 1, "local")
            break
    return out


def _root_words(args: list[str]) -> list[str]:
    """The root flags given before any command word."""
    words = []
    for arg in args:
        if arg not in _ROOT_FLAGS:
            break
        words.append(arg)
    return words


_SWALLOWED_INTERRUPT = {"seen": False}


def _keep_interrupt(unraisable: sys.UnraisableHookArgs) -> None:
    """A Ctrl-C that landed where Python cannot raise it — a weakref callback or ``__del__``, e.g. the import
    system's module-lock callback while a command imports a module on first use — is kept, not printed as
    "Exception ignored": :func:`main` then ends the command with ``Interrupted.`` (raising it again from here
    could land in this very hook)."""
    if isinstance(unraisable.exc_value, KeyboardInterrupt):
        _SWALLOWED_INTERRUPT["seen"] = True
        return
    sys.__unraisablehook__(unraisable)


def main(argv: list[str] | None = None) -> int:
    """Run the CLI; returns (and, as a console script, exits with) the process exit code — 130 with
    ``Interrupted.`` when a Ctrl-C arrived where Python could not raise it."""
    code = _main(argv)
    if _SWALLOWED_INTERRUPT["seen"]:
        sys.stderr.write("Interrupted.\n")
        return 130
    return code


def _main(argv: list[str] | None = None) -> int:
    """Run the CLI; returns (and, as a console script, exits with) the process exit code."""
    args = _bare_ray_flag(sys.argv[1:] if argv is None else argv)
    root = _root_words(args)
    if "--version" in root and "--json" in root:  # NeMo Gym's `gym --version --json`
        from rewardgym.cli.version_info import version_json

        sys.stdout.write(version_json() + "\n")
        return 0
    debug = "--debug" in args or os.environ.get("REWARDGYM_DEBUG") == "1"
    if signal.getsignal(signal.SIGINT) is _interrupted_early:
        signal.signal(signal.SIGINT, signal.default_int_handler)  # from here Ctrl-C is handled below
        sys.unraisablehook = _keep_interrupt
    try:
        if _starts_servers(args):
            from rewardgym.launch.forking import prestart

            prestart()  # the fork server imports the server stack while this process loads the config
        _load_commands(args)
        # Without standalone mode click returns the code of a `typer.Exit(n)` instead of raising it.
        command = typer.main.get_command(app)
        tidy_metavars(command)  # plain value labels on any help screen
        require_finite_floats(command)  # no float flag takes nan or inf
        with command_files():  # every file the command reads, checked against every file it writes
            code = command(args=args, prog_name="gym", standalone_mode=False)
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
    except OSError as exc:
        # A full disk, a read-only file system, an I/O error… on a path no layer below turned into a
        # RewardGymError: still one line naming the file, not a traceback.
        from rewardgym.io.oserrors import os_error_message

        if debug:
            traceback.print_exc()
        return _report(os_error_message(exc), 1)
    return code if isinstance(code, int) else 0


if __name__ == "__main__":
    sys.exit(main())
