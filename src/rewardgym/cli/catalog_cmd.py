"""``gym list [KIND] [--name N] [--json]`` and ``gym search TERM… [--kind KIND] [--json]``: the built-in
catalog, as NeMo Gym 0.7.0's ``gym list …`` / ``gym search`` show theirs (offline: nothing is fetched).

Contract:
- KINDs: ``environments`` (default; also ``resources-servers``: here every environment is one resources
  server) — the entries of ``gym env list`` (:func:`rewardgym.cli.envlist_cmd.environment_entries`);
  ``agents`` and ``models`` — the built-in agent / model server implementations (``{name, kind}``);
  ``benchmarks`` — none are built in (an empty list, said in words). An unknown KIND exits 2 naming the
  choices.
- ``--name N`` shows the one entry named N (exit 1, "no <kind> named 'N'" with a close match, when absent).
- ``gym search TERM…``: the entries of ``--kind`` (default environments) whose name, summary or tools hold
  every term (case-insensitive), in the listing's order.
- Text output: one line per entry (``NAME  SUMMARY``); ``--json``: a JSON list (one object with ``--name``).
"""

from __future__ import annotations

import difflib
from typing import Annotated, Any

import orjson
import typer

from rewardgym.cli.envlist_cmd import environment_entries
from rewardgym.cli.main import app
from rewardgym.errors import DataError, UsageError

KINDS = ("environments", "resources-servers", "agents", "models", "benchmarks")
_REGISTRY_KINDS = {"agents": "responses_api_agents", "models": "responses_api_models"}


def catalog_entries(kind: str) -> list[dict[str, Any]]:
    """The catalog of ``kind`` (see the module docstring)."""
    if kind not in KINDS:
        raise UsageError(f"unknown kind {kind!r}; choose one of {', '.join(KINDS)}")
    if kind in ("environments", "resources-servers"):
        return environment_entries()
    if kind == "benchmarks":
        return []
    from rewardgym.registry import available

    return [{"name": name, "kind": _REGISTRY_KINDS[kind]} for name in available(_REGISTRY_KINDS[kind])]


def _print(entries: list[dict[str, Any]], kind: str, as_json: bool) -> None:
    if as_json:
        typer.echo(orjson.dumps(entries, option=orjson.OPT_INDENT_2).decode())
        return
    if not entries:
        typer.echo(f"No {kind} are built in." if kind == "benchmarks" else f"No {kind} found.")
        return
    width = max(len(entry["name"]) for entry in entries)
    for entry in entries:
        typer.echo(f"{entry['name'].ljust(width)}  {entry.get('summary', entry.get('kind', ''))}".rstrip())


@app.command("list")
def list_catalog(
    kind: Annotated[str, typer.Argument(help=f"What to list: {', '.join(KINDS)}.")] = "environments",
    name: Annotated[str | None, typer.Option("--name", help="Show this one entry.")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
) -> None:
    """List the built-in environments (or agents, models): NeMo Gym's 'gym list', offline."""
    entries = catalog_entries(kind)
    if name is None:
        _print(entries, kind, as_json)
        return
    found = [entry for entry in entries if entry["name"] == name]
    if not found:
        close = difflib.get_close_matches(name, [e["name"] for e in entries], n=1)
        hint = f" (did you mean {close[0]!r}?)" if close else ""
        raise DataError(f"no {kind.rstrip('s')} named {name!r}{hint}; 'gym list {kind}' shows them")
    if as_json:
        typer.echo(orjson.dumps(found[0], option=orjson.OPT_INDENT_2).decode())
        return
    for key, value in found[0].items():
        shown = ", ".join(value) if isinstance(value, list) else value
        typer.echo(f"{key}: {shown}")


def matches(entry: dict[str, Any], terms: list[str]) -> bool:
    """Whether every term is in the entry's name, summary or tools (case-insensitive)."""
    text = " ".join([entry["name"], str(entry.get("summary", "")), *entry.get("tools", [])]).lower()
    return all(term.lower() in text for term in terms)


@app.command("search")
def search_catalog(
    terms: Annotated[list[str], typer.Argument(help="Words every entry shown must contain.")],
    kind: Annotated[
        str, typer.Option("--kind", help=f"What to search: {', '.join(KINDS)}.")
    ] = "environments",
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
) -> None:
    """Search the built-in catalog by name, summary and tools: NeMo Gym's 'gym search', offline."""
    _print([entry for entry in catalog_entries(kind) if matches(entry, terms)], kind, as_json)
