"""``gym env list [--json]``: every environment of the library, one line each.

Contract:
- One entry per :func:`rewardgym.environments.catalogue` folder, sorted by name: ``name``; ``summary`` (the
  first paragraph of the package docstring, without reST double backquotes); ``server`` (whether its
  ``app.py`` registers a resources server under that name, with ``@environment(name)`` or
  ``@register("resources_servers", name)``); ``tools`` (the names of that class's ``@tool``
  methods, in definition order: the endpoints the agent can call); ``reverify_mode`` (what
  ``GET /reverify_mode`` answers; null when not known).
- Everything is read from the source files with :mod:`ast`, nothing is imported: importing every environment
  takes seconds (nltk, scipy, math-verify, ...), a listing must not. ``reverify_mode`` is understood when the
  class assigns ``ReverifyMode.X`` or ``<Class>.REVERIFY_MODE`` of a class of the same package that assigns
  ``ReverifyMode.X``. The tests pin this reading to the imported server classes.
- Text output: a header, then ``NAME  TOOLS  REVERIFY  SUMMARY`` per environment (``-`` for no tools, ``?``
  for unknown). ``--json``: a JSON list of the entries. A source file that does not parse is reported in the
  entry (``error``); the listing itself still succeeds.
"""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Annotated, Any

import orjson
import typer

from rewardgym.cli.main import env_app
from rewardgym.environments import EnvironmentInfo, catalogue
from rewardgym.protocol import ReverifyMode

RESOURCES_KIND = "resources_servers"
MODE_ATTRIBUTE = "REVERIFY_MODE"


def _name(node: ast.expr) -> str | None:
    """The bare name of a decorator or callee (``tool``, ``register``), else None."""
    if isinstance(node, ast.Call):
        node = node.func
    if isinstance(node, ast.Name):
        return node.id
    return node.attr if isinstance(node, ast.Attribute) else None


def _mode_member(node: ast.expr | None) -> str | None:
    """``ReverifyMode.X`` as its value (``"stateless"``), else None."""
    if (
        isinstance(node, ast.Attribute)
        and _name(node.value) == "ReverifyMode"
        and node.attr in ReverifyMode.__members__
    ):
        return ReverifyMode[node.attr].value
    return None


def _assigned(body: list[ast.stmt], target: str) -> ast.expr | None:
    """The value assigned to ``target`` in a class body (plain or annotated assignment)."""
    for statement in body:
        if isinstance(statement, ast.Assign) and any(_name(t) == target for t in statement.targets):
            return statement.value
        if isinstance(statement, ast.AnnAssign) and _name(statement.target) == target:
            return statement.value
    return None


def _registered_class(tree: ast.Module, name: str) -> ast.ClassDef | None:
    for node in tree.body:
        if not isinstance(node, ast.ClassDef):
            continue
        for decorator in node.decorator_list:
            if not isinstance(decorator, ast.Call):
                continue
            args = [a.value for a in decorator.args if isinstance(a, ast.Constant)]
            if (_name(decorator) == "register" and args == [RESOURCES_KIND, name]) or (
                _name(decorator) == "environment" and args == [name]
            ):
                return node
    return None


def _tool_names(cls: ast.ClassDef) -> list[str]:
    names = []
    for node in cls.body:
        if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            continue
        for decorator in node.decorator_list:
            if _name(decorator) != "tool":
                continue
            given = [
                k.value.value
                for k in (decorator.keywords if isinstance(decorator, ast.Call) else [])
                if k.arg == "name" and isinstance(k.value, ast.Constant) and isinstance(k.value.value, str)
            ]
            names.append(given[0] if given else node.name)
    return names


def _class_mode(folder: Path, class_name: str) -> str | None:
    """``REVERIFY_MODE`` of the class ``class_name`` defined in a module of the environment package."""
    for path in sorted(folder.glob("*.py")):
        for node in ast.parse(path.read_text(encoding="utf-8")).body:
            if isinstance(node, ast.ClassDef) and node.name == class_name:
                return _mode_member(_assigned(node.body, MODE_ATTRIBUTE))
    return None


def _reverify_mode(folder: Path, value: ast.expr | None) -> str | None:
    member = _mode_member(value)
    if member is not None:
        return member
    if (
        isinstance(value, ast.Attribute)
        and value.attr == MODE_ATTRIBUTE
        and isinstance(value.value, ast.Name)
    ):
        return _class_mode(folder, value.value.id)
    return None


def describe(info: EnvironmentInfo) -> dict[str, Any]:
    """The listing entry of one environment (see the module docstring)."""
    entry: dict[str, Any] = {
        "name": info.name,
        "summary": info.summary.replace("``", ""),
        "server": False,
        "tools": [],
        "reverify_mode": None,
    }
    app_file = info.folder / "app.py"
    if not app_file.is_file():
        return entry
    try:
        cls = _registered_class(ast.parse(app_file.read_text(encoding="utf-8")), info.name)
        if cls is not None:
            entry["server"] = True
            entry["tools"] = _tool_names(cls)
            entry["reverify_mode"] = _reverify_mode(info.folder, _assigned(cls.body, "reverify_mode"))
    except (OSError, SyntaxError, ValueError) as exc:
        entry["error"] = f"{type(exc).__name__}: {exc}"
    return entry


def environment_entries() -> list[dict[str, Any]]:
    """Every environment's listing entry, sorted by name."""
    return [describe(info) for info in catalogue()]


def _text_lines(entries: list[dict[str, Any]]) -> list[str]:
    rows = [("NAME", "TOOLS", "REVERIFY", "SUMMARY")]
    for entry in entries:
        tools = ", ".join(entry["tools"]) or "-"
        mode = entry["reverify_mode"] or "?"
        summary = entry["summary"] if entry["server"] else f"{entry['summary']} (no server)"
        if "error" in entry:
            summary += f" [{entry['error']}]"
        rows.append((entry["name"], tools, mode, summary))
    widths = [max(len(row[column]) for row in rows) for column in range(3)]
    return [
        "  ".join(cell.ljust(width) for cell, width in zip(row[:3], widths, strict=True)) + "  " + row[3]
        for row in rows
    ]


@env_app.command("list")
def list_environments(
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
) -> None:
    """List the environments: name, tools, reverify mode and what each measures."""
    entries = environment_entries()
    if as_json:
        typer.echo(orjson.dumps(entries, option=orjson.OPT_INDENT_2).decode())
        return
    for line in _text_lines(entries):
        typer.echo(line)
