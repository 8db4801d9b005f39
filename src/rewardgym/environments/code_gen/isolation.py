"""Which isolation the ``code_gen`` sandbox can use on this machine, found once by trying it.

Contract: :func:`probe_isolation` runs the real launch prefix with a check program and returns the first
:class:`Isolation` that works, in this order:

1. ``namespaces`` (server runs as root): ``unshare --net --mount --pid --fork --kill-child``; the child then
   drops to a dedicated uid. New network namespace = only a *down* loopback, so no connection anywhere.
2. ``user-namespaces`` (unprivileged server): ``unshare --user --map-root-user --net --mount --pid --fork
   --kill-child``; same network/mount/pid isolation, but the code keeps the server's uid outside.
3. ``none``: ``unshare`` is missing or every attempt failed (``detail`` says why). Verify then refuses to run
   code unless ``require_network_isolation`` is false, in which case code runs with the server's network.

The check program passes only when the only network interface it sees is ``lo``. Nothing here runs
untrusted code. The sandbox then self-tests the full confinement (private root, ``/proc``, seccomp) once
with a real child before it runs any solution (:meth:`.sandbox.CodeSandbox.isolation`).
"""

from __future__ import annotations

import asyncio
import os
import shutil
from dataclasses import dataclass
from typing import Literal

CHECK_PROGRAM = "import socket, sys; sys.exit(0 if [n for _, n in socket.if_nameindex()] == ['lo'] else 7)"
PROBE_TIMEOUT_S = 20.0
_NAMESPACE_FLAGS = ("--net", "--mount", "--pid", "--fork", "--kill-child")

IsolationMode = Literal["namespaces", "user-namespaces", "none"]


@dataclass(frozen=True, slots=True)
class Isolation:
    """How sandboxed processes are launched."""

    mode: IsolationMode
    """Which of the three strategies (see the module docstring) is in use."""

    prefix: tuple[str, ...]
    """Command prefix placed before the interpreter (empty for ``none``)."""

    drop_privileges: bool
    """Whether the child switches to a dedicated uid (only when the server is root)."""

    detail: str
    """A human-readable account: the command used, or why isolation is unavailable."""

    @property
    def private_root(self) -> bool:
        """Whether the child is in its own mount and pid namespaces, where it builds a private root
        (:mod:`.sandbox_root`): only the interpreter's folders, a private ``/proc`` and one tmpfs."""
        return self.mode != "none"


async def _attempt(command: list[str]) -> str | None:
    """Run ``command``; ``None`` when it succeeded, else a one-line reason."""
    try:
        proc = await asyncio.create_subprocess_exec(
            *command,
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.DEVNULL,
            stderr=asyncio.subprocess.PIPE,
            env={"PATH": os.defpath, "LANG": "C.UTF-8"},
            start_new_session=True,
        )
    except OSError as exc:
        return f"{type(exc).__name__}: {exc}"
    try:
        _, stderr = await asyncio.wait_for(proc.communicate(), PROBE_TIMEOUT_S)
    except TimeoutError:
        proc.kill()
        await proc.wait()
        return f"no answer within {PROBE_TIMEOUT_S:g}s"
    if proc.returncode == 0:
        return None
    text = " ".join(stderr.decode("utf-8", "replace").split())[:300]
    return f"exit status {proc.returncode}" + (f": {text}" if text else "")


async def probe_isolation(unshare_command: str, python: str) -> Isolation:
    """The strongest isolation that works here (see the module docstring)."""
    unshare = shutil.which(unshare_command)
    if unshare is None:
        return Isolation("none", (), False, f"{unshare_command!r} (util-linux) was not found on PATH")
    candidates: list[tuple[IsolationMode, tuple[str, ...], bool]] = []
    if os.geteuid() == 0:
        candidates.append(("namespaces", (unshare, *_NAMESPACE_FLAGS, "--"), True))
    candidates.append(
        ("user-namespaces", (unshare, "--user", "--map-root-user", *_NAMESPACE_FLAGS, "--"), False)
    )
    failures = []
    for mode, prefix, drop in candidates:
        reason = await _attempt([*prefix, python, "-I", "-S", "-c", CHECK_PROGRAM])
        if reason is None:
            return Isolation(mode, prefix, drop, " ".join(prefix[:-1]))
        failures.append(f"`{' '.join(prefix[:-1])}` failed ({reason})")
    return Isolation("none", (), False, "; ".join(failures))
