"""docs/reference/nemo_gym_parity.md and the CLI in step: every command, every flag listed, every key."""

from __future__ import annotations

import re
from collections.abc import Iterator
from importlib.metadata import entry_points
from typing import Any

import typer

from rewardgym.cli.main import _load_commands, app
from rewardgym.config.key_use import NOT_SUPPORTED, READ_BY
from rewardgym.config.known_keys import KNOWN_SETTINGS
from tests.conftest import REPO_ROOT

PAGE = REPO_ROOT / "docs" / "reference" / "nemo_gym_parity.md"
STATUSES = {"same", "different", "not offered", "rewardgym only"}


def _rows(section: str) -> list[list[str]]:
    text = PAGE.read_text(encoding="utf-8").split(f"## {section}\n", 1)[1].split("\n## ", 1)[0]
    rows = [line.strip().strip("|").split("|") for line in text.splitlines() if line.startswith("| ")]
    return [[cell.strip() for cell in row] for row in rows[1:]]  # without the header


def _root() -> Any:
    _load_commands(None)
    return typer.main.get_command(app)


def _leaves(command: Any, path: tuple[str, ...] = ()) -> Iterator[tuple[str, ...]]:
    subs = getattr(command, "commands", None)
    if subs:
        for name, sub in subs.items():
            yield from _leaves(sub, (*path, name))
    else:
        yield path


def _find(root: Any, words: list[str]) -> Any:
    command = root
    for word in words:
        subs = getattr(command, "commands", None) or {}
        if word not in subs:
            return None
        command = subs[word]
    return command


def _options(command: Any) -> set[str]:
    return {opt for param in command.params for opt in getattr(param, "opts", ()) if opt.startswith("-")}


def _words(cell: str) -> list[str]:
    """``gym eval run`` → ["eval", "run"] (the command words, before any flag)."""
    words = cell.strip("`").split()
    assert words and words[0] in ("gym", "ng"), cell
    return [w for w in words[1:] if re.fullmatch(r"[a-z][a-z-]*", w)]


def test_every_command_row_matches_the_cli() -> None:
    root = _root()
    rows = _rows("Commands")
    assert rows
    listed: set[tuple[str, ...]] = set()
    for nemo, ours, status, flags, why in rows:
        assert status in STATUSES, (nemo, status)
        assert why or status == "same", f"{nemo}: say how it differs or why it is not offered"
        if status == "not offered":
            assert ours == "—", nemo
            assert _find(root, _words(nemo)) is None or not _words(nemo), f"{nemo} exists: update the table"
            continue
        if ours.startswith("`ng"):
            scripts = {e.name: e.value for e in entry_points(group="console_scripts")}
            assert scripts.get("ng") == scripts.get("gym"), "the ng alias is not installed"
            continue
        words = _words(ours)
        command = _find(root, words) if words else root
        assert command is not None, f"{ours} is not a command"
        listed.add(tuple(words))
        wanted = {flag.strip("` ") for flag in flags.split(",") if flag.strip()}
        missing = wanted - _options(command)
        assert not missing, f"{ours} has no {sorted(missing)}"
    unlisted = {" ".join(path) for path in _leaves(root)} - {" ".join(path) for path in listed}
    assert not unlisted, f"commands missing from {PAGE.name}: {sorted(unlisted)}"


def test_every_accepted_key_is_in_the_key_table_with_what_it_does() -> None:
    rows = _rows("Keys")
    keys = [row[0].strip("`") for row in rows]
    assert len(keys) == len(set(keys))
    assert set(keys) == set(KNOWN_SETTINGS), set(keys) ^ set(KNOWN_SETTINGS)
    for key, (_, status, why) in zip(keys, rows, strict=True):
        assert status in STATUSES, (key, status)
        assert why, key
        if status == "not offered":
            assert key in NOT_SUPPORTED, f"{key} is marked not offered but rewardgym reads it"
        else:
            assert key in READ_BY, f"{key} is marked {status} but rewardgym refuses it"
