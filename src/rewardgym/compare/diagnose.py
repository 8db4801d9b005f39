"""Why tasks did not match: the input-row fields that differ between unmatched tasks (error path only).

Contract of :func:`differing_fields(runs, matching, ignore)`: pairs each unmatched example of the first run
that has one with an unmatched example of another run showing the same prompt (else the same task index),
re-reads both input rows (a profile's ``sample``, a rollouts run's first materialized row of the task), and
returns the dotted paths at which their content keys differ (:func:`rewardgym.compare.identity.canonical`:
``_ng_*`` keys, the per-repeat seed and ``ignore`` already left out), most frequent first, each with one
example ``(value in the first run, value in the other)``. A row that cannot be re-read is skipped: this only
adds a hint to an error that is raised anyway. Reading happens only when matching failed, so the usual
path costs nothing.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator, Sequence
from typing import Any

import orjson

from rewardgym.compare.identity import canonical
from rewardgym.compare.match import Matching
from rewardgym.compare.runs import RunTasks
from rewardgym.io.jsonl import iter_object_lines

_MAX_VALUE_CHARS = 40


def _rows(run: RunTasks, tasks: set[int]) -> dict[int, dict[str, Any]]:
    """The input row of each of ``tasks`` (first row per task index), read again from the run's files."""
    path = run.path if run.kind == "profile" else run.inputs
    found: dict[int, dict[str, Any]] = {}
    if path is None:
        return found
    try:
        with open(path, "rb") as handle:
            for row in iter_object_lines(handle):
                task = row.get("_ng_task_index")
                if type(task) is not int or task not in tasks or task in found:
                    continue
                found[task] = row["sample"] if run.kind == "profile" else row
                if len(found) == len(tasks):
                    break
    except OSError:
        pass
    return {t: r for t, r in found.items() if isinstance(r, dict)}


def _paths(a: Any, b: Any, prefix: tuple[str, ...] = ()) -> Iterator[tuple[str, Any, Any]]:
    """Dotted paths where ``a`` and ``b`` differ (into objects; a list or a value differs as a whole)."""
    if isinstance(a, dict) and isinstance(b, dict):
        for key in sorted(set(a) | set(b)):
            yield from _paths(a.get(key), b.get(key), (*prefix, str(key)))
    elif a != b:
        yield ".".join(prefix), a, b


def _shown(value: Any) -> str:
    text = "absent" if value is None else orjson.dumps(value).decode()
    return text if len(text) <= _MAX_VALUE_CHARS else text[: _MAX_VALUE_CHARS - 1] + "…"


def differing_fields(
    runs: Sequence[RunTasks], matching: Matching, ignore: Sequence[Sequence[str]] = ()
) -> list[tuple[str, str, str]]:
    """``(dotted path, shown value in the first run, shown value in the other)``, most frequent first."""
    first = matching.unmatched[0]["examples"]
    if not first:
        return []
    counts: Counter[str] = Counter()
    example: dict[str, tuple[str, str]] = {}
    mine = _rows(runs[0], {int(e["task"]) for e in first})
    for run, info in zip(runs[1:], matching.unmatched[1:], strict=True):
        others = info["examples"]
        by_prompt = {e["shown"]: int(e["task"]) for e in others}
        by_task = {int(e["task"]) for e in others}
        pairs = []
        for e in first:
            other = by_prompt.get(e["shown"], int(e["task"]) if int(e["task"]) in by_task else None)
            if other is not None:
                pairs.append((int(e["task"]), other))
        theirs = _rows(run, {other for _, other in pairs})
        for task, other in pairs:
            if task not in mine or other not in theirs:
                continue
            a, b = canonical(mine[task], ignore), canonical(theirs[other], ignore)
            for path, va, vb in _paths(a, b):
                counts[path] += 1
                example.setdefault(path, (_shown(va), _shown(vb)))
    return [(path, *example[path]) for path, _ in counts.most_common()]
