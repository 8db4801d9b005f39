"""Agent labels and fan-out detection (NeMo Gym 0.7.0, docs/reference/profile.md §5).

Contract:

- The *run key* of an input row is its ``_ng_environment_server`` if present, else its agent name.
- :func:`run_labels` labels each run key with its agent's name when the key has exactly one agent name
  and that name belongs to no other run key; otherwise with the run key itself. Labels that would still
  collide fall back to their keys. Without ``_ng_environment_server`` the label is the agent name.
- :func:`is_fan_out` is true when some task index was measured under two or more labels; per-task rows
  are then produced per (task, label).
"""

from __future__ import annotations

from collections import defaultdict

import numpy as np
import numpy.typing as npt

IntArray = npt.NDArray[np.int64]


def run_labels(run_key: IntArray, agent: IntArray, names: tuple[str, ...]) -> dict[int, str]:
    """Label (a name) of every run-key index that occurs, from the rows' run keys and agent names."""
    width = len(names) + 1
    codes = (run_key + 1) * width + (agent + 1)
    if len(codes) == 0:
        present = np.zeros(0, np.int64)
    elif width * width <= 4 * len(codes) + 1024:
        present = np.flatnonzero(np.bincount(codes))
    else:
        present = np.unique(codes)
    agents_of_key: dict[int, set[int]] = defaultdict(set)
    keys_of_agent: dict[int, set[int]] = defaultdict(set)
    for code in present.tolist():
        key, name = code // width - 1, code % width - 1
        if key < 0:
            continue
        agents_of_key.setdefault(key, set())
        if name >= 0:
            agents_of_key[key].add(name)
            keys_of_agent[name].add(key)
    labels: dict[int, str] = {}
    for key, agents in agents_of_key.items():
        label = names[key]
        if len(agents) == 1:
            (only,) = agents
            if keys_of_agent[only] == {key}:
                label = names[only]
        labels[key] = label
    for _ in range(len(labels) + 1):
        owners: dict[str, list[int]] = defaultdict(list)
        for key, label in labels.items():
            owners[label].append(key)
        clashes = [
            key for keys in owners.values() if len(keys) > 1 for key in keys if labels[key] != names[key]
        ]
        if not clashes:
            break
        for key in clashes:
            labels[key] = names[key]
    return labels


def label_index(labels: dict[int, str]) -> tuple[tuple[str, ...], dict[int, int]]:
    """Sorted distinct labels and the position of each run key's label in that tuple."""
    ordered = tuple(sorted(set(labels.values())))
    position = {label: i for i, label in enumerate(ordered)}
    return ordered, {key: position[label] for key, label in labels.items()}


def row_labels(run_key: IntArray, key_to_label: dict[int, int]) -> IntArray:
    """Per row: index of its label (-1 when the row has no run key)."""
    table = np.full(max(key_to_label, default=-1) + 2, -1, dtype=np.int64)
    for key, label in key_to_label.items():
        table[key + 1] = label
    return table[run_key + 1]


def is_fan_out(sorted_task: IntArray, label: IntArray) -> bool:
    """Whether some task index appears under more than one label (rows sorted by task; -1 = no label)."""
    if len(sorted_task) < 2:
        return False
    same_task = sorted_task[1:] == sorted_task[:-1]
    return bool(np.any(same_task & (label[1:] != label[:-1])))
