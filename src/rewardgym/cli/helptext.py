"""Help-screen metavars that read as values, not Python types.

Typer labels an option's value with its annotation (``<bool>`` for a flag, ``<list[Path]>`` for a repeatable
path, ``<parquet|csv>`` for a choice). :func:`tidy_metavars` gives every option without an explicit
``metavar`` a plain label instead: none for a flag, ``PATH`` / ``TEXT`` / ``INT`` / ``FLOAT`` for a value, the
choices themselves (``parquet|csv``) for a choice (a repeatable option says so in its help); and every
positional argument the same label in its type column (``PATH...`` when it takes several). Only the help
screens change; parsing is untouched.
"""

from __future__ import annotations

from typing import Any, Final

_LABELS: Final = {"bool": "", "int": "INT", "float": "FLOAT", "str": "TEXT", "path": "PATH"}


def _label(param: Any) -> str | None:
    try:
        shown = str(param.display_type(None)).strip("<>")
    except Exception:  # a choice needs a real context; leave such an option alone
        return None
    if shown.startswith("list[") and shown.endswith("]"):
        shown = shown[5:-1]
    if "|" in shown:  # a choice: its values are the label
        return shown
    return _LABELS.get(shown.removesuffix(" range").lower())


def _tidy_argument(param: Any) -> None:
    """The type column of a positional argument (Typer shows the annotation there, metavar or not)."""
    label = _label(param)
    if not label:
        return
    shown = label + ("..." if getattr(param, "nargs", 1) != 1 else "")
    param.display_type_rich = lambda ctx: shown


def tidy_metavars(command: Any) -> None:
    """Set plain metavars on ``command`` (a click command or group) and all its subcommands."""
    for param in getattr(command, "params", []):
        if getattr(param, "param_type_name", "") == "argument":
            _tidy_argument(param)
            continue
        if getattr(param, "param_type_name", "") != "option" or param.metavar is not None:
            continue
        label = "" if getattr(param, "is_bool_flag", False) else _label(param)
        if label is not None:
            param.metavar = label
    original = getattr(command, "get_help_option", None)
    if callable(original):  # --help is made per context, not listed in params

        def help_option(ctx: Any, original: Any = original) -> Any:
            option = original(ctx)
            if option is not None:
                option.metavar = ""
            return option

        command.get_help_option = help_option
    for sub in getattr(command, "commands", {}).values():
        tidy_metavars(sub)
