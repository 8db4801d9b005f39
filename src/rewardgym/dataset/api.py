"""``gym data select`` as functions: write a dataset and its manifest; verify a dataset against one.

Contract:

- :func:`select_files` checks every output before reading anything (an output that is an input, or
  exists as something other than a regular file, is refused: :func:`rewardgym.io.outputs.guard_outputs`),
  builds the dataset in memory (:func:`rewardgym.dataset.build.build`) — so bad input writes nothing —
  then writes the dataset and ``<out>.manifest.json`` (``out`` without ``.jsonl``), each by temp file +
  fsync + rename, both temp files complete before the first rename. Only a crash between the two renames
  can leave a new dataset beside an old manifest (or none), which :func:`check_manifest` reports.
- The manifest (:data:`SCHEMA_VERSION` 1) records the command (canonical, rebuilt from the options), the
  rewardgym version, the time (UTC), each input's path (relative to the manifest's folder) and sha256,
  the dataset's path, sha256 and row count, every setting and the seed, and the counts per band, per
  domain and per drop reason, and per stage.
- :func:`check_manifest` re-hashes the inputs, rebuilds the dataset from the recorded inputs and
  settings, and compares it with the recorded hash and with the dataset file; it returns every problem
  found (empty: the dataset is exactly what its manifest says). A manifest is data from anywhere, so:
  it is read only when it is a regular file of at most :data:`MANIFEST_LIMIT` bytes; every path it
  names must be relative and stay inside the manifest's folder — or inside ``root`` when the caller
  names a wider folder (``--root``) — once links are resolved (else a
  :class:`~rewardgym.errors.DataError` naming the manifest and the field, before any file is opened);
  every file is opened as a regular file only (a FIFO or device is a problem, never read, never waited
  for); and its settings are bounded as on the command line (an error naming the manifest).
"""

from __future__ import annotations

import hashlib
import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

from rewardgym.dataset.build import Built, build
from rewardgym.dataset.options import SelectOptions, options_from_dict
from rewardgym.dataset.sources import Source, resolve_source
from rewardgym.errors import DataError, UsageError
from rewardgym.io.inputs import open_regular
from rewardgym.io.outputs import atomic_writer, guard_outputs

SCHEMA_VERSION = 1
MANIFEST_LIMIT = 64 << 20
"""A manifest is a few KiB per input file; anything past 64 MiB is not one."""
KIND = "rewardgym.data.select"


def manifest_path(output: Path) -> Path:
    stem = output.name[: -len(".jsonl")] if output.name.endswith(".jsonl") else output.name
    return output.with_name(stem + ".manifest.json")


def _relative(path: Path, folder: Path) -> str:
    return os.path.relpath(os.path.abspath(path), os.path.abspath(folder))


def command_line(sources: list[Path], output: Path, options: SelectOptions) -> str:
    """The ``gym data select`` command that gives these options (defaults left out)."""
    import shlex

    words = ["gym", "data", "select", *map(str, sources), "--output", str(output)]
    for name, value in options.as_dict().items():
        default = getattr(SelectOptions(), name)
        flag = "--" + name.replace("_", "-")
        if value == default or (name == "bands" and not value):
            continue
        if isinstance(value, bool):
            words.append(flag)
        elif name == "bands":
            for band in value:
                words += ["--band", band]
        else:
            words += [flag, str(value)]
    return shlex.join(words)


def _manifest(
    built: Built, sources: list[Source], output: Path, where: Path, options: SelectOptions, command: str
) -> dict[str, Any]:
    import rewardgym

    folder = where.parent
    role = {s.profile: "profile" for s in sources} | {s.health: "health" for s in sources if s.health}
    role |= {s.run: "run" for s in sources if s.run}
    return {
        "schema_version": SCHEMA_VERSION,
        "kind": KIND,
        "command": command,
        "rewardgym_version": rewardgym.__version__,
        "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "output": {
            "path": _relative(output, folder),
            "sha256": hashlib.sha256(built.data).hexdigest(),
            "rows": built.rows,
            "bytes": len(built.data),
        },
        "inputs": [
            {"role": role[path], "path": _relative(path, folder), "sha256": digest}
            for path, digest in built.read.hashes.items()
        ],
        "sources": [
            {
                "profile": _relative(s.profile, folder),
                "health": None if s.health is None else _relative(s.health, folder),
                "run": None if s.run is None or not options.drop_run_params else _relative(s.run, folder),
            }
            for s in sources
        ],
        "seed": options.seed,
        "settings": options.as_dict(),
        "counts": built.counts,
        "stages": built.stages,
    }


@dataclass(frozen=True)
class Written:
    output: Path
    manifest: Path
    built: Built


def select_files(
    paths: list[Path], output: Path, options: SelectOptions, manifest: Path | None = None
) -> Written:
    """Write the dataset and its manifest (see module doc)."""
    options.validate()
    where = manifest or manifest_path(output)
    sources = [resolve_source(path) for path in paths]
    inputs: list[tuple[Path | None, str]] = []
    for source in sources:
        inputs += [(source.profile, "profile"), (source.health, "health"), (source.run, "run")]
    guard_outputs([(output, "--output"), (where, "manifest")], inputs)
    if os.path.abspath(output) == os.path.abspath(where):
        raise DataError(f"the manifest would overwrite the dataset '{output}'; choose another --manifest")
    built = build(sources, options)
    document = _manifest(built, sources, output, where, options, command_line(paths, output, options))
    # Both temp files exist and are complete before either is renamed: a write that fails (a missing
    # folder, a full disk) changes neither file. The dataset is renamed first, then its manifest.
    with atomic_writer(where) as manifest_handle, atomic_writer(output) as data_handle:
        data_handle.write(built.data)
        manifest_handle.write(orjson.dumps(document, option=orjson.OPT_INDENT_2) + b"\n")
    return Written(output, where, built)


def _sha256(path: Path) -> str | None:
    """The file's sha256, or None when it is missing, unreadable or not a regular file (never waited on)."""
    digest = hashlib.sha256()
    try:
        with open_regular(path, "manifest entry") as handle:
            while block := handle.read(1 << 20):
                digest.update(block)
    except (OSError, DataError):
        return None
    return digest.hexdigest()


def read_manifest(path: Path) -> dict[str, Any]:
    try:
        with open_regular(path, "--check") as handle:
            data = handle.read(MANIFEST_LIMIT + 1)
        if len(data) > MANIFEST_LIMIT:
            raise DataError(f"{path}: larger than {MANIFEST_LIMIT >> 20} MiB: not a manifest")
        document = orjson.loads(data)
    except OSError as exc:
        raise DataError(f"manifest cannot be read: '{path}': {exc.strerror}") from None
    except orjson.JSONDecodeError as exc:
        raise DataError(f"{path}: not JSON ({exc.msg})") from None
    if not isinstance(document, dict) or document.get("kind") != KIND:
        raise DataError(f"{path}: not a manifest of 'gym data select'")
    if document.get("schema_version") != SCHEMA_VERSION:
        raise DataError(
            f"{path}: manifest schema version {document.get('schema_version')!r} is not supported"
        )
    if not _shaped(document):
        raise DataError(f"{path}: the manifest is damaged (output, inputs, sources or settings malformed)")
    return document


def _shaped(document: dict[str, Any]) -> bool:
    """Whether every part :func:`check_manifest` reads has the shape it expects."""
    output, inputs, sources = document.get("output"), document.get("inputs"), document.get("sources")

    def texts(entry: dict[str, Any], names: tuple[str, ...]) -> bool:
        return all(isinstance(entry.get(n), str) for n in names)

    return (
        isinstance(output, dict)
        and texts(output, ("path", "sha256"))
        and isinstance(inputs, list)
        and all(isinstance(e, dict) and texts(e, ("role", "path", "sha256")) for e in inputs)
        and isinstance(sources, list)
        and all(
            isinstance(s, dict)
            and isinstance(s.get("profile"), str)
            and isinstance(s.get("health"), str | None)
            and isinstance(s.get("run"), str | None)
            for s in sources
        )
        and isinstance(document.get("settings"), dict)
    )


@dataclass(frozen=True)
class CheckResult:
    problems: list[str]
    dataset: Path
    rows: int
    inputs: int


def _inside(manifest: Path, root: Path | None, field: str, name: str) -> Path:
    """``name`` (a path the manifest records) joined to the manifest's folder, refused when it is
    absolute or leaves the trusted folder — ``root``, else the manifest's — through ``..`` or a link."""
    where = manifest.parent / name
    base = os.path.realpath(root if root is not None else manifest.parent)
    if os.path.isabs(name) or os.path.commonpath([base, os.path.realpath(where)]) != base:
        trusted = f"--root '{root}'" if root is not None else "the manifest's folder"
        raise DataError(
            f"{manifest}: {field} {name!r} is outside {trusted}: refused, nothing read (pass --root DIR "
            "to trust a wider folder that holds the inputs)"
        )
    return where


def check_manifest(path: Path, root: Path | None = None) -> CheckResult:
    """Verify a dataset against its manifest (see module doc)."""
    import rewardgym

    document = read_manifest(path)
    folder = path.parent
    problems: list[str] = []
    located = {
        f"inputs[{i}].path": _inside(path, root, f"inputs[{i}].path", e["path"])
        for i, e in enumerate(document["inputs"])
    }
    dataset = _inside(path, root, "output.path", document["output"]["path"])
    for i, s in enumerate(document["sources"]):
        for role in ("profile", "health", "run"):
            if s[role] is not None:
                _inside(path, root, f"sources[{i}].{role}", s[role])
    try:
        options = options_from_dict(document["settings"])
    except UsageError as exc:
        raise DataError(f"{path}: settings: {exc}") from None
    for i, entry in enumerate(document["inputs"]):
        source = located[f"inputs[{i}].path"]
        now = _sha256(source)
        if now is None:
            problems.append(f"input {entry['role']} '{source}' is missing or unreadable")
        elif now != entry["sha256"]:
            problems.append(
                f"input {entry['role']} '{source}' changed since the dataset was built "
                f"(sha256 recorded {entry['sha256'][:12]}…, now {now[:12]}…)"
            )
    recorded = document["output"]["sha256"]
    actual = _sha256(dataset)
    if actual is None:
        problems.append(f"dataset '{dataset}' is missing or unreadable")
    elif actual != recorded:
        problems.append(
            f"dataset '{dataset}' differs from its manifest (sha256 recorded {recorded[:12]}…, "
            f"file {actual[:12]}…)"
        )
    if not problems:  # inputs as recorded: the rebuild must give the same bytes
        sources = [
            Source(
                folder / s["profile"],
                None if s["health"] is None else folder / s["health"],
                None if s["run"] is None else folder / s["run"],
            )
            for s in document["sources"]
        ]
        try:
            rebuilt = build(sources, options)
        except UsageError as exc:  # a setting the recorded tasks cannot mean (more stages than tasks…)
            raise DataError(f"{path}: settings: {exc}") from None
        digest = hashlib.sha256(rebuilt.data).hexdigest()
        if digest != recorded:
            version = document.get("rewardgym_version")
            problems.append(
                f"rebuilding from the recorded inputs and settings gives a different dataset "
                f"(sha256 {digest[:12]}…, recorded {recorded[:12]}…; built by rewardgym {version}, "
                f"this is {rewardgym.__version__})"
            )
    return CheckResult(problems, dataset, int(document["output"].get("rows", 0)), len(document["inputs"]))
