"""Proving who answers at a head URL, before a signal or the shared token goes there.

Threat: anything can listen on a head URL — a decoy on a free port, a process of another user on a shared
machine, a stale stack's port reused. ``gym env stop`` used to signal whatever pid the answer named (when
the process looked like ``gym``), and ``gym eval run --no-serve`` sent the shared token to whatever
answered. Now both ask the head to prove itself first, with a challenge it can answer only if it holds a
secret — the answer never reveals the secret, and a fresh challenge makes a recorded answer useless:

- **The stack's own secret** (``gym env stop``, ``gym env status``): when a supervisor's head registry
  starts, it writes :func:`record_path` — ``<runtime dir>/rewardgym/heads/<host>_<port>.json``, a ``0600``
  file in a ``0700`` folder of this user (``$XDG_RUNTIME_DIR``, else ``~/.cache``) — holding its pid, that
  pid's start time and command line (``/proc/<pid>``) and a random stack secret; it removes it at stop.
  :func:`verified_supervisor` sends a random challenge to ``POST /identity`` and checks the answer
  against the record's secret, then checks that the pid still has the recorded start time and command
  line (a reused pid has not), and only then returns the process to signal. Any mismatch is a
  :class:`~rewardgym.errors.ServerError` and nothing is signalled.
- **The shared token** (``gym eval run --no-serve``, which has no local record when the servers run
  elsewhere): :func:`verify_token_holder` sends a random challenge and checks ``HMAC(token, challenge)``
  before the first request that carries the token; a head that cannot answer gets nothing.

``POST /identity`` is open (it must answer before the client trusts it) and serves nothing but the two
HMACs of the challenge it was sent.
"""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import os
import secrets
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import orjson

from rewardgym.errors import ServerError
from rewardgym.io.outputs import atomic_write_bytes, process_start


def proof(secret: str, challenge: str, purpose: str) -> str:
    """``HMAC-SHA256(secret, "<purpose>|<challenge>")``, hex."""
    message = f"rewardgym-head|{purpose}|{challenge}".encode()
    return hmac.new(secret.encode(), message, hashlib.sha256).hexdigest()


def identity_answer(challenge: object, stack_secret: str, token: str | None) -> dict[str, Any]:
    """What a head answers to ``POST /identity`` (see the module docstring)."""
    if not isinstance(challenge, str) or not 16 <= len(challenge) <= 256:
        return {"error": "send {'challenge': a random string of 16 to 256 characters}"}
    return {
        "stack": proof(stack_secret, challenge, "stack"),
        "token": proof(token, challenge, "token") if token else None,
    }


def _folder() -> Path:
    base = os.environ.get("XDG_RUNTIME_DIR") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "rewardgym" / "heads"


def record_path(head_url: str) -> Path:
    """Where the supervisor of ``head_url`` keeps its record on this machine."""
    split = urlsplit(head_url)
    return _folder() / f"{split.hostname}_{split.port}.json"


def _cmdline(pid: int) -> list[str]:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().decode("utf-8", "replace").split("\0")[:-1]
    except OSError:
        return []


def write_record(head_url: str, stack_secret: str) -> Path:
    """Record this process as the supervisor of ``head_url`` (see the module docstring)."""
    folder = _folder()
    folder.mkdir(mode=0o700, parents=True, exist_ok=True)
    os.chmod(folder, 0o700)
    pid = os.getpid()
    record = {"pid": pid, "start": process_start(pid), "cmdline": _cmdline(pid), "secret": stack_secret}
    path = record_path(head_url)
    old = os.umask(0o077)  # created 0600: the stack secret is readable by this user only
    try:
        atomic_write_bytes(path, orjson.dumps(record))
    finally:
        os.umask(old)
    return path


def remove_record(path: Path | None) -> None:
    if path is not None:
        with contextlib.suppress(OSError):
            os.unlink(path)


def new_stack_secret() -> str:
    return secrets.token_hex(32)


def new_challenge() -> str:
    return secrets.token_hex(32)


@dataclass(frozen=True)
class Supervisor:
    pid: int
    start: int | None
    cmdline: list[str]


def _read_record(head_url: str) -> dict[str, Any]:
    path = record_path(head_url)
    try:
        info = os.lstat(path)
        record = orjson.loads(path.read_bytes())
    except FileNotFoundError:
        raise ServerError(
            f"no stack started on this machine by this user is recorded for {head_url} ({path}): not "
            "signalling anything (stop it where it runs, or with Ctrl-C in its terminal)"
        ) from None
    except (OSError, orjson.JSONDecodeError) as exc:
        raise ServerError(f"the record of {head_url} ({path}) cannot be read: {exc}") from None
    if info.st_uid != os.getuid() or info.st_mode & 0o077 or not isinstance(record, dict):
        raise ServerError(f"the record of {head_url} ({path}) is not this user's private file: not trusted")
    return record


def check_answer(answer: Any, expected: str, what: str, head_url: str) -> None:
    given = answer.get(what) if isinstance(answer, dict) else None
    if not isinstance(given, str) or not hmac.compare_digest(given, expected):
        holder = "this stack's secret" if what == "stack" else "the shared auth token"
        raise ServerError(
            f"the server at {head_url} could not prove it holds {holder}: it is not the head you mean "
            "(a decoy or another stack); nothing was signalled or sent"
        )


def verified_supervisor(head_url: str, answer_of: Any) -> Supervisor:
    """The supervisor of ``head_url``, proven (see the module docstring). ``answer_of(challenge)`` posts
    the challenge to the head's ``/identity`` and returns its JSON answer."""
    record = _read_record(head_url)
    secret, pid = record.get("secret"), record.get("pid")
    if not isinstance(secret, str) or type(pid) is not int:
        raise ServerError(f"the record of {head_url} is damaged: not trusted")
    challenge = new_challenge()
    check_answer(answer_of(challenge), proof(secret, challenge, "stack"), "stack", head_url)
    start, cmdline = process_start(pid), _cmdline(pid)
    if start is None or start != record.get("start") or cmdline != record.get("cmdline"):
        raise ServerError(
            f"pid {pid} is no longer the supervisor of {head_url} (its start time or command line differ "
            "from those recorded when it started): not signalling it"
        )
    return Supervisor(pid, start, cmdline)
