"""``gym eval run --from-curriculum URL``: the run's inputs come from a curriculum service, in batches, and
the rewards go back to it as each batch lands — rollout collection as a trainer's generator.

Contract (the service is ``gym curriculum serve``; this module only speaks its HTTP API, so ``collect``
stays below ``rewardgym.curriculum``):

- :func:`fetch_first_batch` asks ``POST /next_batch`` for ``batch_size`` tasks and writes the rows it
  gets (the dataset's own rows with ``_ng_task_index``) to a JSONL file that the run materializes as its
  ``--input``: each task ``G`` times (G: the service's group size unless ``--num-repeats`` says).
- :meth:`CurriculumFeed.run`, after the first batch was dispatched, reports its rewards (``POST /report``,
  one call per batch: ``{"groups": [{"task_index", "rewards"}, …]}``, every stored reward of the batch's
  rollouts of a task), then for each further batch: fetches it, materializes its rows as the run would
  (same options) with each task's ``_ng_rollout_index`` continuing after its earlier rollouts, appends
  them to the materialized file (fsync-ed before dispatch, like ``--adaptive``'s rounds), dispatches them,
  and reports. A task none of whose rollouts succeeded is not reported (no reward is made up; it stays
  waiting in the service).
- Calls are not retried (a repeated ``/report`` would be a duplicate); a refused call stops the run with
  one error naming the service's message. ``--resume`` and ``--adaptive`` do not combine with it.
"""

from __future__ import annotations

import tempfile
from collections.abc import Awaitable, Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

import orjson

from rewardgym.collect.appended_rows import rows_from
from rewardgym.collect.dispatch import Pending
from rewardgym.collect.materialize import MaterializeOptions, iter_materialized, repeat_row
from rewardgym.collect.resume import key_of
from rewardgym.errors import DataError, ServerError
from rewardgym.http.client import HttpClient
from rewardgym.http.errors import UpstreamError
from rewardgym.io.jsonl import JsonlAppender, iter_jsonl, parse_line
from rewardgym.io.outputs import atomic_write_bytes
from rewardgym.protocol import keys


async def _call(url: str, body: Any, headers: Mapping[str, str] | None) -> Any:
    async with HttpClient(headers=headers) as client:
        try:
            reply = await client.post(url, json=body, raise_for_status=False, max_attempts=1)
        except UpstreamError as exc:
            raise ServerError(f"curriculum service {url}: {exc}") from None
    answer = reply.json() if reply.body else None
    if not reply.ok:
        error = answer.get("error") if isinstance(answer, dict) else None
        message = error.get("message") if isinstance(error, dict) else reply.text()[:200]
        raise ServerError(f"curriculum service {url}: HTTP {reply.status}: {message}")
    return answer


async def next_rows(
    base: str, n: int, group: int | None, headers: Mapping[str, str] | None
) -> tuple[list[Any], int]:
    """One batch: the rows and the group size the service serves them for."""
    body: dict[str, Any] = {"n": n} if group is None else {"n": n, "group_size": group}
    answer = await _call(f"{base}/next_batch", body, headers)
    rows, size = answer.get("rows"), answer.get("group_size") if isinstance(answer, dict) else None
    if not isinstance(rows, list) or not all(isinstance(r, dict) for r in rows) or not isinstance(size, int):
        raise ServerError(f"curriculum service {base}/next_batch: the reply is not a batch of rows")
    return rows, size


async def fetch_first_batch(
    base: str, n: int, group: int | None, headers: Mapping[str, str] | None, path: Path
) -> int:
    """Write the first batch's rows to ``path`` (atomically); returns the group size."""
    rows, size = await next_rows(base, n, group, headers)
    atomic_write_bytes(path, b"".join(orjson.dumps(row) + b"\n" for row in rows))
    return size


@dataclass
class CurriculumFeed:
    """The batches after the first (module doc)."""

    url: str
    batches: int
    """Batches in all, the first included."""
    batch_size: int
    group: int
    headers: Mapping[str, str] | None = None
    reported: int = 0
    _read: int = 0
    _next_index: dict[int, int] = field(default_factory=dict)

    async def run(
        self,
        materialized: Path,
        rollouts: Path,
        options: MaterializeOptions,
        *,
        dispatch: Callable[[Iterator[Pending]], Awaitable[object]],
        keep_going: Callable[[], bool],
        on_added: Callable[[int], None],
        out: IO[str],
    ) -> int:
        """Report the first batch, then run the others; returns the rollouts added."""
        batch = self._rows_of(materialized)
        await self._report(batch, rollouts)
        added = 0
        for number in range(2, self.batches + 1):
            if not keep_going():
                break
            rows, _ = await next_rows(self.url, self.batch_size, self.group, self.headers)
            offset, count, batch = self._append(materialized, rows, options)
            out.write(f"Curriculum batch {number}: {len(rows)} tasks, {count} rollouts\n")
            out.flush()
            on_added(count)
            added += count
            await dispatch(rows_from(materialized, offset))
            await self._report(batch, rollouts)
        out.write(f"Curriculum: {self.reported} groups reported to {self.url}\n")
        return added

    def _rows_of(self, materialized: Path) -> set[tuple[int, int]]:
        keys_: set[tuple[int, int]] = set()
        for number, row in iter_jsonl(materialized, what="Materialized inputs"):
            task, rollout = key_of(row, f"{materialized}:{number}")
            self._next_index[task] = max(self._next_index.get(task, 0), rollout + 1)
            keys_.add((task, rollout))
        return keys_

    def _append(
        self, materialized: Path, rows: list[dict[str, Any]], options: MaterializeOptions
    ) -> tuple[int, int, set[tuple[int, int]]]:
        """Materialize ``rows`` as the run does and append them; (offset, rows appended, their keys)."""
        with tempfile.TemporaryDirectory() as folder:
            source = Path(folder) / "batch.jsonl"
            source.write_bytes(b"".join(orjson.dumps(row) + b"\n" for row in rows))
            appender = JsonlAppender(materialized)
            start = materialized.stat().st_size
            batch: set[tuple[int, int]] = set()
            try:
                for row in iter_materialized(source, options):
                    task = int(row[keys.TASK_INDEX])
                    rollout = self._next_index.get(task, 0) + int(row[keys.ROLLOUT_INDEX])
                    appender.write(repeat_row(row, rollout, add_seed=options.add_seed, where=str(source)))
                    batch.add((task, rollout))
                for task, rollout in batch:
                    self._next_index[task] = max(self._next_index.get(task, 0), rollout + 1)
                appender.fsync()
            finally:
                appender.close()
        return start, len(batch), batch

    async def _report(self, batch: set[tuple[int, int]], rollouts: Path) -> None:
        rewards: dict[int, list[float]] = {}
        if rollouts.exists():
            with open(rollouts, "rb") as handle:
                handle.seek(self._read)
                for number, raw in enumerate(handle, start=1):
                    if not raw.endswith(b"\n"):
                        break
                    self._read += len(raw)
                    row = parse_line(raw, rollouts, number)
                    key = key_of(row, f"{rollouts}")
                    reward = row.get(keys.REWARD)
                    if key in batch and isinstance(reward, int | float) and not isinstance(reward, bool):
                        rewards.setdefault(key[0], []).append(float(reward))
        if not rewards:
            return
        groups = [{"task_index": task, "rewards": values} for task, values in sorted(rewards.items())]
        try:
            await _call(f"{self.url}/report", {"groups": groups}, self.headers)
        except ServerError as exc:
            raise DataError(f"reporting rewards: {exc}") from None
        self.reported += len(groups)


@dataclass(frozen=True)
class CurriculumStart:
    """What ``gym eval run`` takes from the service before it materializes: the first batch as the input."""

    input: Path
    group: int
    feed: CurriculumFeed


def curriculum_base(url: str, conflicts: Mapping[str, bool]) -> str:
    """The service's base URL, checked before anything starts (refusing the flags in ``conflicts`` that are
    set: they name other inputs or another way to add rollouts)."""
    given = [flag for flag, on in conflicts.items() if on]
    if given:
        raise DataError(f"--from-curriculum takes its inputs from the service: not with {', '.join(given)}")
    base = url.rstrip("/")
    if not base.startswith(("http://", "https://")):
        raise DataError(f"--from-curriculum: expected the service's http(s) URL, got {url!r}")
    return base


def curriculum_input(output: Path) -> Path:
    """Where the first batch's rows are written: ``<output stem>_curriculum_input.jsonl``."""
    return output.with_name(output.stem + "_curriculum_input.jsonl")


def start_from_curriculum(
    base: str,
    *,
    path: Path,
    batches: int,
    batch_size: int,
    group: int | None,
    headers: Mapping[str, str] | None,
) -> CurriculumStart:
    """Fetch the first batch into ``path`` (the run's input); the feed runs the other batches."""
    import asyncio

    path.parent.mkdir(parents=True, exist_ok=True)
    size = asyncio.run(fetch_first_batch(base, batch_size, group, headers, path))
    return CurriculumStart(path, size, CurriculumFeed(base, batches, batch_size, size, headers))
