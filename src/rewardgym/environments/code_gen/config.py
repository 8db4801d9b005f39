"""Environment config of ``code_gen`` (the ``resources_servers.code_gen`` block of ``configs/code_gen.yaml``).

NeMo Gym's fields keep their names and meaning (``num_processes`` is accepted as the old name of
``max_concurrent_executions``); the sandbox fields are ours. See ``README.md`` for what each limit does and
what happens when network isolation is unavailable.
"""

from __future__ import annotations

import os
from typing import ClassVar

from pydantic import AliasChoices, BaseModel, Field

from rewardgym.protocol import ReverifyMode


def _cpu_count() -> int:
    return max(1, os.cpu_count() or 1)


class CodeGenConfig(BaseModel):
    """How ``code_gen`` extracts, runs and scores solutions, and how the sandbox confines them."""

    REVERIFY_MODE: ClassVar[ReverifyMode] = ReverifyMode.STATELESS
    """Verify needs only the row and the response (it re-runs the tests; timing-dependent verdicts such as a
    borderline time limit can differ between runs, as on any re-run). NeMo Gym says ``unknown``."""

    unit_test_timeout_secs: float = Field(10.0, gt=0)
    """Wall-clock seconds each test (and the compilation) may take; beyond it the test scores ``-3``. The
    whole run is killed after ``(unit_test_timeout_secs + 1) × n_tests + 5`` seconds (result ``-1`` each)."""

    max_concurrent_executions: int = Field(
        default_factory=_cpu_count,
        ge=1,
        validation_alias=AliasChoices("max_concurrent_executions", "num_processes"),
    )
    """Solutions run at the same time (one sandboxed process each); default: the number of CPUs. NeMo Gym's
    ``num_processes`` is accepted as an alias."""

    debug: bool = False
    """Log each sandbox's stderr tail and confinement details at INFO level."""

    reasoning_format_penalty: float = 0.0
    """Reward given instead of the test outcome when ``<think>`` tags are misplaced (see README)."""

    require_network_isolation: bool = True
    """Refuse to run any code (verify raises ``SandboxUnavailableError``) when the sandbox cannot isolate it
    (no network/mount/pid namespaces, or the confinement self-test fails). When false, code then runs
    *without* isolation: with network access and the host's file system (a warning is logged once)."""

    unshare_command: str = "unshare"
    """The util-linux ``unshare`` program used to create the namespaces (name on ``PATH`` or a path)."""

    memory_limit_mb: int = Field(2048, ge=64)
    """Memory of a whole run — the solution and every process it makes — in MiB: a cgroup's
    ``memory.max`` (``cgroup_parent``), else ``RLIMIT_NPROC × RLIMIT_AS`` kept within it (see
    :mod:`.run_memory`)."""

    process_memory_mb: int | None = Field(None, ge=16)
    """Address space of each process of a run in the rlimits fallback (``RLIMIT_AS``), in MiB; the run
    then gets ``memory_limit_mb // process_memory_mb`` processes (at most ``max_processes``). Default:
    ``memory_limit_mb / max_processes``, at least 256."""

    cgroup_parent: str | None = None
    """A cgroup v2 folder delegated to the server (``memory`` and ``pids`` in its
    ``cgroup.subtree_control``): each run gets a cgroup below it capping the run's memory and processes."""

    max_file_size_mb: int = Field(16, ge=0)
    """Largest file the solution may write (``RLIMIT_FSIZE``), in MiB."""

    max_processes: int = Field(64, ge=1)
    """Processes and threads of one run (a cgroup's ``pids.max``, or ``RLIMIT_NPROC``, then at most what
    ``memory_limit_mb`` holds); stops fork bombs."""

    private_tmp_mb: int = Field(64, ge=1)
    """Size of the sandbox's only writable file system: a private tmpfs on ``/tmp`` (also ``/dev/shm`` and
    ``/var/tmp``) holding the work folder, with at most ``256 × private_tmp_mb`` files and folders."""

    max_output_mb: float = Field(32.0, gt=0)
    """Largest report of one test (printed text, or encoded return value), in MiB once JSON-encoded as UTF-8
    (plain text: one byte per character); a larger one scores as a wrong answer. It is also the hard cap on
    what the server reads: a report line longer than this (+64 KiB), or more than this on stderr, kills the
    run ("Output limit: …", ``-1``)."""

    sandbox_uid_base: int | None = Field(65000, ge=1)
    """When the server runs as root, each sandbox runs as a uid/gid from ``sandbox_uid_base`` up (no passwd
    entry needed) that no other run on the machine holds at the time — slot ``k`` prefers
    ``sandbox_uid_base + k``, a host-wide lock (:mod:`.uid_claim`) settles it — so each concurrent run has its
    own process limit and can touch no root-owned file.
    ``None`` keeps root (not recommended)."""

    work_dir: str | None = None
    """Parent folder of the per-run temporary working folders when there is no isolation (default: the system
    temp folder). With isolation the work folder lives on the sandbox's private tmpfs and nothing is created
    on the host."""

    python_executable: str | None = None
    """Interpreter that runs solutions (default: the server's own, so numpy is available to solutions)."""
