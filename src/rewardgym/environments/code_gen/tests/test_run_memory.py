"""A run's memory is bounded as a whole (issue 22, class 1): a forking memory hog, the plan per machine,
the cgroup files a run gets, and the refusal where neither a cgroup nor the rlimits can hold.

The hog (the hostile catalogue's) is small on purpose (a 256 MiB run of 64 MiB processes; each child stops
at 128 MiB): without the bound its eight children would together hold up to 1 GiB, with it the whole run
stays within 256 MiB."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from rewardgym.environments.code_gen.isolation import Isolation
from rewardgym.environments.code_gen.run_memory import (
    MemoryUnbounded,
    make_run_cgroup,
    plan_memory,
    remove_run_cgroup,
)
from rewardgym.environments.code_gen.sandbox import CodeSandbox, SandboxUnavailableError
from rewardgym.environments.code_gen.tests.helpers import fenced, make_request
from rewardgym.environments.code_gen.tests.hostile import FORKING_HOG, SERVER_SETTINGS
from rewardgym.environments.code_gen.verifier import CodeGenConfig, verify

RUN_MB = SERVER_SETTINGS["memory_limit_mb"]


@pytest.fixture
def isolated(isolation: Isolation) -> Isolation:
    if isolation.mode == "none":
        pytest.skip(f"no isolation on this machine: {isolation.detail}")
    return isolation


async def test_a_forking_memory_hog_holds_at_most_the_run_limit(
    config: CodeGenConfig, isolated: Isolation
) -> None:
    config = config.model_copy(update={"memory_limit_mb": RUN_MB, "process_memory_mb": 64})
    result = await verify(make_request(fenced(FORKING_HOG), ["\n"], ["-"]), config)
    assert result.metadata is not None
    words = str(result.metadata.get("output", "")).split()  # "run total within limit children N MiB M"
    assert words[:4] == ["run", "total", "within", "limit"], result.metadata
    children, held = int(words[5]), int(words[7])
    assert children >= 2 and held <= RUN_MB, (children, held)  # several forked; together within the run


def test_the_fallback_keeps_processes_times_address_space_within_the_run() -> None:
    defaults = plan_memory(CodeGenConfig(), nproc_applies=True)
    assert (defaults.mode, defaults.processes, defaults.process_bytes >> 20) == ("rlimits", 8, 256)
    for run_mb, processes, process_mb in ((512, 64, None), (64, 64, None), (4096, 8, None), (256, 64, 64)):
        config = CodeGenConfig(memory_limit_mb=run_mb, max_processes=processes, process_memory_mb=process_mb)
        plan = plan_memory(config, nproc_applies=True)
        assert plan.processes * plan.process_bytes <= run_mb * 2**20 and plan.processes >= 1
        assert plan.processes <= processes
    assert (
        plan_memory(CodeGenConfig(memory_limit_mb=512), nproc_applies=True).processes == 2
    )  # issue: 512 MiB


def test_a_delegated_cgroup_gives_each_run_its_own_limits(tmp_path: Path) -> None:
    """The files a run's cgroup gets (a plain folder stands in for the cgroup file system here)."""
    (tmp_path / "cgroup.subtree_control").write_text("cpu memory pids\n")
    config = CodeGenConfig(memory_limit_mb=512, max_processes=16, cgroup_parent=str(tmp_path))
    plan = plan_memory(config, nproc_applies=False)  # a cgroup holds even for root
    assert (plan.mode, plan.run_bytes, plan.processes) == ("cgroup", 512 * 2**20, 16)
    path = make_run_cgroup(config, plan, slot=0)
    assert path is not None
    assert Path(path, "memory.max").read_text() == str(512 * 2**20)
    assert (Path(path, "memory.swap.max").read_text(), Path(path, "pids.max").read_text()) == ("0", "16")
    for name in os.listdir(path):
        os.unlink(os.path.join(path, name))  # the kernel's files vanish with the cgroup; a folder's do not
    remove_run_cgroup(path)
    assert not os.path.exists(path)


def test_neither_a_cgroup_nor_rlimits_is_refused() -> None:
    with pytest.raises(MemoryUnbounded, match="RLIMIT_NPROC does not apply"):
        plan_memory(CodeGenConfig(), nproc_applies=False)
    with pytest.raises(MemoryUnbounded, match="not a delegated cgroup v2 folder"):
        plan_memory(CodeGenConfig(cgroup_parent="/nonexistent"), nproc_applies=False)


@pytest.mark.skipif(os.geteuid() != 0, reason="root runs without a sandbox uid only as root")
async def test_a_root_server_without_a_sandbox_uid_or_cgroup_refuses_to_run_code(isolated: Isolation) -> None:
    sandbox = CodeSandbox(CodeGenConfig(sandbox_uid_base=None, require_network_isolation=True))
    with pytest.raises(SandboxUnavailableError, match="cannot bound a run's memory"):
        await sandbox.ensure_available()
