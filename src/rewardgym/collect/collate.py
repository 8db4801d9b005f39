"""Collating the datasets a config lists for one split into one input file (NeMo Gym 0.7.0's ``gym eval run
--split`` and ``gym dataset collate``), offline.

Contract of :func:`collate_split`:

* Every agent instance of the config (``responses_api_agents``), in config order, contributes each of its
  ``datasets`` entries whose ``type`` is the split (``train``, ``validation``, ``benchmark``, ``example``),
  in the order listed: every line of the entry's ``jsonl_fpath``, repeated ``num_repeats`` times (default 1)
  line after line ("aaaabbbb"), with ``agent_ref`` set to ``{"type": "responses_api_agents", "name":
  <agent instance>}`` (replacing a row's own: the dataset belongs to that agent). Blank lines are skipped; a
  line that is not a JSON object is an error naming ``file:line``.
* ``jsonl_fpath`` is found as given (absolute, or relative to the working directory), else in the folder of
  the built-in environment the agent's resources server runs (``data/example.jsonl`` of
  ``mcqa``), or, for NeMo Gym's repository paths (``resources_servers/<env>/data/x.jsonl``), in that
  environment's folder. A path found nowhere is an error naming the agent, the dataset and the path.
* No dataset of the split is an error naming the split and the splits the config has.
* The rows are written compact (one JSON object per line) by temp file + rename to
  ``<folder>/<split>.jsonl``; the function returns that path and the number of rows.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any, Final

import orjson

from rewardgym.config import GymConfig
from rewardgym.environments import ROOT as ENVIRONMENTS
from rewardgym.errors import DataError, UsageError
from rewardgym.io.jsonl import parse_line
from rewardgym.io.outputs import atomic_writer
from rewardgym.protocol import keys

AGENT_KIND: Final = "responses_api_agents"
SPLITS: Final = ("train", "validation", "benchmark", "example")


def datasets_of(cfg: GymConfig) -> Iterator[tuple[str, Mapping[str, Any], str | None]]:
    """(agent, dataset entry, implementation of its resources server) for every dataset entry."""
    for agent in cfg.instances_of(AGENT_KIND):
        entries = agent.fields.get("datasets") or []
        ref = agent.fields.get("resources_server")
        server = None
        if isinstance(ref, Mapping) and isinstance(ref.get("name"), str):
            try:
                server = cfg.instance(str(ref["name"])).implementation
            except Exception:
                server = None
        for entry in entries if isinstance(entries, list) else []:
            if isinstance(entry, Mapping):
                yield agent.name, entry, server


def dataset_path(path_text: str, server: str | None, agent: str, name: str) -> Path:
    """Where a dataset entry's ``jsonl_fpath`` is (module docstring), or a DataError naming it."""
    path = Path(path_text).expanduser()
    candidates = [path]
    if not path.is_absolute():
        if server is not None:
            candidates.append(ENVIRONMENTS / server / path)
        parts = path.parts
        if len(parts) > 2 and parts[0] == "resources_servers":
            candidates.append(ENVIRONMENTS.joinpath(*parts[1:]))
    for candidate in candidates:
        if candidate.is_file():
            return candidate
    raise DataError(f"agent {agent!r} dataset {name!r}: jsonl_fpath '{path_text}' not found")


def _rows(path: Path, repeats: int, agent: str) -> Iterator[bytes]:
    with path.open("rb") as handle:
        for number, raw in enumerate(handle, start=1):
            if not raw.strip():
                continue
            row = parse_line(raw, path, number)
            row[keys.AGENT_REF] = {"type": AGENT_KIND, "name": agent}
            line = orjson.dumps(row) + b"\n"
            for _ in range(repeats):
                yield line


def collate_split(cfg: GymConfig, split: str, folder: Path) -> tuple[Path, int]:
    """Write the split's rows to ``folder/<split>.jsonl`` (module docstring); (path, rows)."""
    if split not in SPLITS:
        raise UsageError(f"--split must be one of {', '.join(SPLITS)}, got {split!r}")
    chosen = []
    seen_splits: set[str] = set()
    for agent, entry, server in datasets_of(cfg):
        seen_splits.add(str(entry.get("type")))
        if entry.get("type") != split:
            continue
        repeats = entry.get("num_repeats", 1)
        if isinstance(repeats, bool) or not isinstance(repeats, int) or repeats < 1:
            raise UsageError(f"agent {agent!r} dataset {entry.get('name')!r}: num_repeats must be >= 1")
        where = dataset_path(str(entry.get("jsonl_fpath", "")), server, agent, str(entry.get("name")))
        chosen.append((where, repeats, agent))
    if not chosen:
        have = ", ".join(sorted(seen_splits)) or "none"
        raise UsageError(f"the config lists no dataset of split {split!r} (its datasets' splits: {have})")
    target = folder / f"{split}.jsonl"
    folder.mkdir(parents=True, exist_ok=True)
    count = 0
    with atomic_writer(target) as handle:
        for where, repeats, agent in chosen:
            for line in _rows(where, repeats, agent):
                handle.write(line)
                count += 1
    return target, count
