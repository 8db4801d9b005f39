"""The memory of one run — a solution and every process it makes — is bounded as a whole, not per process.

``RLIMIT_AS`` alone bounds one process: a solution forking 8 children under ``memory_limit_mb: 512`` held
3.3 GiB. :func:`plan_memory` chooses how ``memory_limit_mb`` caps the whole run:

- **cgroup v2** (``cgroup_parent`` names a cgroup v2 folder delegated to the server, with ``memory`` and
  ``pids`` in its ``cgroup.subtree_control``): each run gets its own cgroup below it
  (:func:`make_run_cgroup`: ``memory.max`` = ``memory_limit_mb``, ``memory.swap.max`` = 0, ``pids.max`` =
  ``max_processes``), the child moves itself into it before it confines itself (before any solution code
  exists), and :func:`remove_run_cgroup` removes it once every process of the run is dead. Each process
  keeps ``RLIMIT_AS`` = ``memory_limit_mb`` as a second line.
- **rlimits** (the fallback): the run may hold ``processes`` processes and threads (``RLIMIT_NPROC``) of
  ``process_bytes`` of address space each (``RLIMIT_AS``), with ``processes × process_bytes ≤
  memory_limit_mb``: each process gets ``process_memory_mb`` (default: ``memory_limit_mb /
  max_processes``, at least 256 MiB, at most ``memory_limit_mb``) and the run as many processes as fit,
  at most ``max_processes``. It holds only where ``RLIMIT_NPROC`` applies, which it does not for root:
  the child must run under a dedicated sandbox uid, or the server must not be root.
- **neither** holds (root without a sandbox uid and without a cgroup): :class:`MemoryUnbounded` — the
  server refuses to start (unless code runs without any isolation, ``require_network_isolation: false``,
  which gives up every protection).
"""

from __future__ import annotations

import contextlib
import os
import secrets
from dataclasses import dataclass
from pathlib import Path

from rewardgym.environments.code_gen.config import CodeGenConfig

MIN_PROCESS_MB = 256
"""Address space one process gets at least in the fallback (Python with numpy maps ~140 MiB)."""


class MemoryUnbounded(RuntimeError):
    """Neither a cgroup nor the rlimits fallback can bound a run's memory here."""


@dataclass(frozen=True)
class MemoryPlan:
    mode: str
    """``cgroup`` or ``rlimits``."""
    process_bytes: int
    """``RLIMIT_AS`` of each process of the run."""
    processes: int
    """``RLIMIT_NPROC`` of the run (processes and threads)."""
    run_bytes: int
    """What the whole run may hold."""

    def describe(self) -> str:
        mib = 2**20
        if self.mode == "cgroup":
            return f"a cgroup per run ({self.run_bytes // mib} MiB, {self.processes} processes)"
        return (
            f"{self.processes} processes x {self.process_bytes // mib} MiB per run "
            f"(RLIMIT_NPROC x RLIMIT_AS <= {self.run_bytes // mib} MiB)"
        )


def _cgroup_usable(parent: str) -> bool:
    try:
        enabled = Path(parent, "cgroup.subtree_control").read_text().split()
    except OSError:
        return False
    return {"memory", "pids"} <= set(enabled) and os.access(parent, os.W_OK)


def plan_memory(config: CodeGenConfig, *, nproc_applies: bool) -> MemoryPlan:
    """How a run's memory is bounded here (see the module docstring); ``nproc_applies``: the child's real
    uid is not root (a dedicated sandbox uid, or a server that is not root)."""
    run = config.memory_limit_mb
    if config.cgroup_parent is not None and _cgroup_usable(config.cgroup_parent):
        return MemoryPlan("cgroup", run * 2**20, config.max_processes, run * 2**20)
    if not nproc_applies:
        where = (
            f"cgroup_parent {config.cgroup_parent!r} is not a delegated cgroup v2 folder with memory and pids"
            if config.cgroup_parent is not None
            else "no cgroup_parent is set"
        )
        raise MemoryUnbounded(
            f"code_gen cannot bound a run's memory: {where}, and the sandbox would run as root, to which "
            "RLIMIT_NPROC does not apply (set sandbox_uid_base, run the server as another user, or give a "
            "delegated cgroup v2 folder as cgroup_parent)"
        )
    per_process = config.process_memory_mb or max(run // config.max_processes, MIN_PROCESS_MB)
    per_process = min(per_process, run)
    processes = max(1, min(config.max_processes, run // per_process))
    return MemoryPlan("rlimits", per_process * 2**20, processes, run * 2**20)


def make_run_cgroup(config: CodeGenConfig, plan: MemoryPlan, slot: int) -> str | None:
    """A fresh cgroup for one run (None in the rlimits fallback)."""
    if plan.mode != "cgroup" or config.cgroup_parent is None:
        return None
    path = os.path.join(config.cgroup_parent, f"rewardgym-run-{os.getpid()}-{slot}-{secrets.token_hex(4)}")
    os.mkdir(path)
    for name, value in (
        ("memory.max", str(plan.run_bytes)),
        ("memory.swap.max", "0"),
        ("pids.max", str(plan.processes)),
    ):
        with contextlib.suppress(FileNotFoundError):  # no swap accounting: nothing to switch off
            Path(path, name).write_text(value)
    return path


def remove_run_cgroup(path: str | None) -> None:
    """Remove a run's cgroup once its processes are gone (the kernel refuses while any is left)."""
    if path is not None:
        with contextlib.suppress(OSError):
            os.rmdir(path)
