"""``gym env new NAME``: write a working environment to start from.

Contract:
- Writes ``<dir>/<NAME>/`` (``--dir``, default the working directory): ``__init__.py``, ``app.py`` (the whole
  environment in one file, on :mod:`rewardgym.env`), ``configs/<NAME>.yaml`` (the server as
  ``<NAME>.app:<Class>`` plus a ``simple_agent``), ``data/example.jsonl``, ``verifier_cases.jsonl`` (the
  verifier's behaviour as data), ``README.md`` and ``tests/test_<NAME>.py`` (the cases over HTTP, and
  episodes through ``simple_agent`` with the in-process ``scripted`` model), whose tests pass as written
  (``pytest <NAME>`` from ``<dir>``).
- ``NAME`` must be a lowercase Python identifier that breaks nothing: not a Python keyword (``import``),
  not a module that is already importable (the standard library's ``json``, ``os``, ``test``; installed
  packages such as ``rewardgym``, ``numpy``, ``pytest``) — the environment's package would shadow it or be
  shadowed —, not a name the config reserves (``head_server``, ``policy_model``, every top-level
  setting) and not a built-in environment; an existing ``<NAME>`` folder is never touched (usage error,
  exit 2). Files are written into a temporary sibling folder that is
  renamed into place last, so an interrupted run leaves no half-written environment.
"""

from __future__ import annotations

import os
import re
import shutil
import tempfile
from importlib import resources
from pathlib import Path
from string import Template
from typing import Annotated

import typer

from rewardgym.cli.main import env_app
from rewardgym.environments import catalogue
from rewardgym.errors import UsageError

NAME_RE = re.compile(r"^[a-z][a-z0-9_]{0,62}$")
# template file → path inside the new folder (``{name}`` replaced)
FILES = {
    "app.py.tmpl": "app.py",
    "config.yaml.tmpl": "configs/{name}.yaml",
    "example.jsonl.tmpl": "data/example.jsonl",
    "README.md.tmpl": "README.md",
    "test.py.tmpl": "tests/test_{name}.py",
    "verifier_cases.jsonl.tmpl": "verifier_cases.jsonl",
}


def class_name(name: str) -> str:
    """``my_env`` → ``MyEnv`` (the environment's class name)."""
    return "".join(part.capitalize() for part in name.split("_") if part) or "Environment"


def check_name(name: str) -> None:
    """Refuse names that cannot be a package or would shadow a built-in environment."""
    if not NAME_RE.match(name):
        raise UsageError(f"environment name {name!r} must be a lowercase Python identifier (e.g. my_env)")
    if name in {info.name for info in catalogue()}:
        raise UsageError(f"{name!r} is a built-in environment; choose another name")
    reason = _reserved(name)
    if reason:
        raise UsageError(f"environment name {name!r} {reason}; choose another name (e.g. {name}_env)")


def _reserved(name: str) -> str | None:
    """Why ``name`` would break the environment made under it (None when it breaks nothing)."""
    import importlib.util
    import keyword
    import sys

    from rewardgym.config.instances import RESERVED_KEYS
    from rewardgym.config.known_keys import KNOWN_SETTINGS

    if keyword.iskeyword(name) or keyword.issoftkeyword(name):
        return "is a Python keyword"
    if name in sys.stdlib_module_names:
        return "is a module of Python's standard library (the environment's package would shadow it)"
    if name in RESERVED_KEYS | KNOWN_SETTINGS or name in ("policy_model", "head_server"):
        return "is a name the config reserves (a top-level setting)"
    try:
        spec = importlib.util.find_spec(name)
    except (ImportError, ValueError):
        return "is a module that cannot be imported cleanly here"
    # A plain folder (a namespace package, e.g. one in the working directory) is no module to shadow.
    found = spec is not None and spec.origin is not None
    if found:
        return "is a module that is already importable here (one of the two would shadow the other)"
    return None


def scaffold(name: str, parent: Path) -> Path:
    """Write the environment folder ``parent/name`` (see the module docstring); returns it."""
    check_name(name)
    target = parent / name
    if target.exists() or target.is_symlink():
        raise UsageError(f"{target} already exists; choose another name or --dir")
    if not parent.is_dir():
        raise UsageError(f"--dir {parent} is not a folder")
    values = {"name": name, "cls": class_name(name)}
    templates = resources.files("rewardgym.cli") / "templates" / "newenv"
    staging = Path(tempfile.mkdtemp(prefix=f".{name}.", suffix=".new", dir=parent))
    try:
        for template, relative in FILES.items():
            path = staging / relative.format(name=name)
            path.parent.mkdir(parents=True, exist_ok=True)
            text = Template(templates.joinpath(template).read_text("utf-8")).substitute(values)
            path.write_text(text, "utf-8")
        (staging / "__init__.py").write_text(f'"""The ``{name}`` environment (see README.md)."""\n', "utf-8")
        (staging / "tests" / "__init__.py").write_text("", "utf-8")
        os.chmod(staging, 0o777 & ~_umask())
        os.rename(staging, target)  # last: the folder appears whole or not at all
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return target


def _umask() -> int:
    current = os.umask(0)
    os.umask(current)
    return current


@env_app.command("new")
def new(
    name: Annotated[str, typer.Argument(help="The environment's name: a lowercase Python identifier.")],
    directory: Annotated[
        Path, typer.Option("--dir", help="Folder to create the environment folder in.", metavar="DIR")
    ] = Path("."),
) -> None:
    """Write a working environment (app, config, example data, README, tests) to start from."""
    target = scaffold(name, directory)
    shown = os.path.relpath(target)
    typer.echo(
        f"Created {shown}/ (app.py, configs/{name}.yaml, data/example.jsonl, verifier_cases.jsonl, "
        "README.md, tests/)"
    )
    typer.echo(f"Next: pytest {shown}   # then see {shown}/README.md to serve and collect")
