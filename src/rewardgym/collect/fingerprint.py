"""The fingerprint of a collection run (``<stem>_run.json``), checked before ``--resume``.

It holds hashes of the materialized inputs and of the ``--input`` file, the resolved settings that shape the
rollouts (config minus secrets, hosts and ports; repeat settings; sampling overrides) and the agent
instances. In ``--no-serve`` runs it also holds ``settings.models``: each model server's implementation and
the model name the head registry reports, so resuming onto servers of another model — two policies mixed
in one file — is refused. Resuming with any of them changed is refused with the list of what changed (old
→ new for short values), unless ``--force``. No secret is ever written: the caller passes the redacted
config, the registry reports model names only, and :func:`build_fingerprint` redacts the settings once more
(a value under a secret-looking key, any registered secret in any encoding, credentials in a URL) so that
nothing a caller forgot reaches the file. An adaptive run (``--adaptive``), whose later rounds append rows
to the materialized file, hashes only its first round — ``materialized_inputs_bytes`` says how many bytes —
and records its policy under ``settings.adaptive``.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import orjson

from rewardgym.config.secrets import redact
from rewardgym.errors import DataError, UsageError
from rewardgym.io.outputs import atomic_write_bytes

_VOLATILE_KEYS = frozenset({"host", "port", "url", "pid", "disallowed_ports", "head_server"})


def file_sha256(path: Path, limit: int | None = None) -> str:
    """SHA-256 of the file, or of its first ``limit`` bytes."""
    digest = hashlib.sha256()
    left = limit
    with open(path, "rb") as handle:
        while block := handle.read(1 << 20 if left is None else min(1 << 20, left)):
            digest.update(block)
            if left is not None:
                left -= len(block)
                if left <= 0:
                    break
    return digest.hexdigest()


def strip_volatile(value: Any) -> Any:
    """Drop hosts, ports and other per-start values, which may change between a run and its resume."""
    if isinstance(value, Mapping):
        return {k: strip_volatile(v) for k, v in value.items() if k not in _VOLATILE_KEYS}
    if isinstance(value, list):
        return [strip_volatile(v) for v in value]
    return value


def build_fingerprint(
    *,
    materialized: Path,
    input_path: Path | None,
    settings: Mapping[str, Any],
    prefix_bytes: int | None = None,
) -> dict[str, Any]:
    """``prefix_bytes`` (adaptive runs, which append rows in later rounds): hash only the first round."""
    fingerprint = {
        "version": 1,
        "materialized_inputs_sha256": file_sha256(materialized, prefix_bytes),
        "input_sha256": file_sha256(input_path) if input_path is not None and input_path.exists() else None,
        "settings": strip_volatile(redact(dict(settings))),
    }
    if prefix_bytes is not None:
        fingerprint["materialized_inputs_bytes"] = prefix_bytes
    return fingerprint


def write_fingerprint(path: Path, fingerprint: Mapping[str, Any]) -> None:
    atomic_write_bytes(path, orjson.dumps(fingerprint, option=orjson.OPT_INDENT_2 | orjson.OPT_SORT_KEYS))


def read_fingerprint(path: Path) -> dict[str, Any]:
    try:
        value = orjson.loads(path.read_bytes())
    except FileNotFoundError:
        raise UsageError(f"cannot resume: no previous run found ({path} does not exist)") from None
    except orjson.JSONDecodeError as exc:
        raise DataError(f"{path}: run fingerprint is not valid JSON ({exc.msg})") from None
    if not isinstance(value, dict):
        raise DataError(f"{path}: run fingerprint is not a JSON object")
    return value


def differences(old: Mapping[str, Any], new: Mapping[str, Any], prefix: str = "") -> list[str]:
    """Dotted paths whose values differ between two fingerprints.

    A key absent from ``new`` (a setting not given again on resume) or a ``None`` input hash (no
    ``--input`` given) is "unspecified" and never a difference.
    """
    changed: list[str] = []
    for key in sorted(new):
        path = f"{prefix}{key}"
        a, b = old.get(key), new.get(key)
        if key == "input_sha256" and (a is None or b is None):
            continue
        if key == "models" and prefix == "settings." and a is None:
            continue  # a run fingerprinted before model identities were recorded
        if isinstance(a, Mapping) and isinstance(b, Mapping):
            changed.extend(differences(a, b, prefix=f"{path}."))
        elif a != b:
            changed.append(path)
    return changed


def _at(fingerprint: Mapping[str, Any], path: str) -> Any:
    value: Any = fingerprint
    for part in path.split("."):
        value = value.get(part) if isinstance(value, Mapping) else None
    return value


def describe_changes(old: Mapping[str, Any], new: Mapping[str, Any], changed: list[str]) -> str:
    """``changed`` for a message: each path, with ``old → new`` when both values are short scalars."""
    parts = []
    for path in changed:
        a, b = _at(old, path), _at(new, path)
        if all(v is None or isinstance(v, (str, int, float, bool)) for v in (a, b)) and len(f"{a}{b}") < 120:
            parts.append(f"{path}: {a!r} → {b!r}")
        else:
            parts.append(path)
    return ", ".join(parts)
