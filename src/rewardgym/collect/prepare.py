"""Before anything is dispatched: check the outputs and agents, then (fresh run) materialize the rows and
write the fingerprint, or (``--resume``) check the fingerprint and load what the earlier runs recorded.

A fresh run that is refused (bad input, unknown agent, a budget below the first round…) leaves the earlier
run's files untouched: the new materialized file is built aside and only swapped in once every check passed.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import IO, Any

import orjson

from rewardgym.collect.appended_rows import repair_materialized_tail
from rewardgym.collect.fingerprint import (
    build_fingerprint,
    describe_changes,
    differences,
    read_fingerprint,
    write_fingerprint,
)
from rewardgym.collect.materialize import iter_materialized
from rewardgym.collect.outputs import RunOutputs
from rewardgym.collect.resume import PriorRun, drop_failures, load_prior_run
from rewardgym.collect.settings import CollectSettings
from rewardgym.errors import DataError, UsageError
from rewardgym.io.jsonl import iter_jsonl
from rewardgym.io.outputs import atomic_writer, guard_outputs
from rewardgym.protocol import keys
from rewardgym.stats.adaptive_policy import AdaptivePolicy


def _check_output_location(output: Path) -> None:
    if output.is_dir():
        raise UsageError(f"--output must be a file path, but '{output}' is a folder")
    for parent in output.parents:
        if parent.exists():
            if not parent.is_dir():
                raise UsageError(f"--output '{output}': '{parent}' is a file, not a folder")
            break


def guard_run_outputs(settings: CollectSettings, sidecars: Sequence[tuple[Path, str]] = ()) -> RunOutputs:
    """Refuse, before anything is touched, outputs that are inputs or exist as non-regular files (see
    :func:`rewardgym.io.outputs.guard_outputs`); the CLI calls this before it starts any server, with
    ``sidecars`` the files it writes after the collection (health files, tracker exports)."""
    outputs = RunOutputs(settings.output)
    _check_output_location(settings.output)
    guard_outputs([*outputs.labelled(), *sidecars], [(settings.input, "--input"), *settings.read_files])
    return outputs


def _clear_stale(outputs: RunOutputs, out: IO[str]) -> None:
    for path in outputs.stale():
        if path.exists():
            size = path.stat().st_size
            if size and path in (outputs.rollouts, outputs.failures):
                out.write(
                    f"Warning: removing {path} from an earlier run ({size} bytes); use --resume to keep it\n"
                )
            path.unlink()


def _materialize(settings: CollectSettings, handle: IO[bytes], out: IO[str]) -> tuple[set[str], int]:
    """Write the materialized rows to ``handle``; returns (agents named, row count)."""
    if settings.input is None:
        raise UsageError("--input is required (unless --resume)")
    agents: set[str] = set()
    count = 0
    for row in iter_materialized(
        settings.input, settings.materialize, lambda message: out.write(f"Warning: {message}\n")
    ):
        if settings.shard is not None and row[keys.TASK_INDEX] % settings.shard[1] != settings.shard[0]:
            continue
        agents.add(row[keys.AGENT_REF]["name"])
        handle.write(orjson.dumps(row) + b"\n")
        count += 1
    if count == 0:
        raise DataError(f"Input file '{settings.input}' (--input) holds no rows: there is nothing to collect")
    policy = settings.adaptive
    if policy is not None and policy.budget is not None and count > policy.budget:
        raise UsageError(
            f"--adaptive-budget {policy.budget} is smaller than the first round: {count} rollouts "
            f"(--adaptive-initial {policy.initial} per task); raise the budget or lower "
            "--adaptive-initial"  # raised before the materialized file is renamed into place
        )
    return agents, count


def _agents_in(materialized: Path) -> tuple[set[str], int]:
    agents: set[str] = set()
    total = 0
    for number, row in iter_jsonl(materialized, what="Materialized inputs"):
        total += 1
        ref = row.get(keys.AGENT_REF)
        name = ref.get("name") if isinstance(ref, dict) else None
        if not isinstance(name, str):
            raise DataError(f"{materialized}:{number}: materialized row has no agent_ref.name")
        agents.add(name)
    return agents, total


def _check_agents(needed: set[str], available: Mapping[str, str]) -> None:
    missing = sorted(needed - set(available))
    if missing:
        listed = ", ".join(sorted(available)) or "none"
        raise UsageError(
            f"rows name agent(s) {', '.join(repr(m) for m in missing)} but no such agent is running "
            f"(available: {listed})"
        )


def prepare_run(
    settings: CollectSettings, outputs: RunOutputs, out: IO[str], agent_urls: Mapping[str, str]
) -> tuple[int, PriorRun, AdaptivePolicy | None, bool]:
    """Validate everything, then (fresh run) replace the earlier run's outputs, or (resume) load them.

    A fresh run that is refused (bad input, unknown agent…) leaves the earlier run's files untouched: the
    new materialized file is built aside and only swapped in once every check passed.
    """
    if settings.resume:
        if not outputs.materialized.exists():
            raise UsageError(f"cannot resume: no previous run found ({outputs.materialized} does not exist)")
        old = read_fingerprint(outputs.fingerprint)
        prefix = old.get("materialized_inputs_bytes")
        fingerprint_settings = dict(settings.fingerprint_settings)
        recorded: dict[str, Any] = old["settings"] if isinstance(old.get("settings"), dict) else {}
        if isinstance(prefix, int):  # an adaptive run: later rounds append rows
            torn = repair_materialized_tail(outputs.materialized)
            if torn is not None:
                out.write(f"Note: {outputs.materialized}:{torn.line_number} was cut short by a crash\n")
            # The adaptive settings given again are compared; the others are the recorded ones.
            given = fingerprint_settings.get("adaptive") or {}
            fingerprint_settings["adaptive"] = {**(recorded.get("adaptive") or {}), **given}
        new = build_fingerprint(
            materialized=outputs.materialized,
            input_path=settings.input,
            settings=fingerprint_settings,
            prefix_bytes=prefix if isinstance(prefix, int) else None,
        )
        changed = differences(old, new)
        if changed and not settings.force:
            raise UsageError(
                "cannot resume: the run changed since it started ("
                + describe_changes(old, new, changed)
                + "); start a fresh run, or pass --force to resume anyway"
            )
        if changed:
            described = describe_changes(old, new, changed)
            out.write(f"Warning: resuming although these changed: {described} (--force)\n")
            write_fingerprint(outputs.fingerprint, new)
        prior = load_prior_run(outputs)
        recovered = prior.done & prior.attempts.keys()
        if recovered:  # succeeded by a run killed before it could tidy the failures file
            drop_failures(outputs.failures, recovered)
            for key in recovered:
                prior.attempts.pop(key, None)
                prior.permanent.discard(key)
        if prior.torn is not None:
            out.write(
                f"Note: {outputs.rollouts}:{prior.torn.line_number} was cut short by a crash; "
                "that rollout will run again\n"
            )
        needed, total = _agents_in(outputs.materialized)
        _check_agents(needed, agent_urls)
        policy = fingerprint_settings.get("adaptive") if isinstance(prefix, int) else None
        add_seed = (recorded.get("materialize") or {}).get("add_seed", settings.materialize.add_seed)
        return (
            total,
            prior,
            AdaptivePolicy.from_dict(policy) if isinstance(policy, dict) else None,
            bool(add_seed),
        )
    # Built in a temp file (see rewardgym.io.outputs) renamed over the materialized file only at the end of
    # the block, once every check passed and the earlier run's outputs are cleared.
    with atomic_writer(outputs.materialized) as handle:
        needed, total = _materialize(settings, handle, out)
        _check_agents(needed, agent_urls)
        # Every byte on disk before the earlier run's outputs go: a full disk fails here, with them kept
        # (the last buffered block of the file would otherwise be written only after they were deleted).
        handle.flush()
        os.fsync(handle.fileno())
        _clear_stale(outputs, out)
    write_fingerprint(
        outputs.fingerprint,
        build_fingerprint(
            materialized=outputs.materialized,
            input_path=settings.input,
            settings=dict(settings.fingerprint_settings)
            | ({} if settings.adaptive is None else {"adaptive": settings.adaptive.as_dict()}),
            prefix_bytes=outputs.materialized.stat().st_size if settings.adaptive is not None else None,
        ),
    )
    return total, PriorRun(), settings.adaptive, settings.materialize.add_seed
