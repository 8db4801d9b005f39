"""Host-wide uid claims: two holders never get the same uid, a dead holder's claim is gone, and the
sandbox runs under the claimed uid."""

from __future__ import annotations

import fcntl
import os
import subprocess
import sys

import pytest

from rewardgym.environments.code_gen import uid_claim
from rewardgym.environments.code_gen.uid_claim import SEARCH, claim_uid, release_uid

# Claims are host-wide: each test searches its own range, and the ranges depend on this process's id, so
# tests running at once — on other pytest-xdist workers, or from another checkout on the same machine (the
# exhaustion test holds every uid of its range) — never see each other's claims. These numbers only name
# lock files; no process runs under them here. Far above the servers' default base and any real uid.
BASE = 100_000_000 + (os.getpid() % 100_000) * 3 * SEARCH
DEAD_HOLDER_BASE = BASE + SEARCH
EXHAUSTED_BASE = BASE + 2 * SEARCH


def test_claims_are_exclusive_and_prefer_the_slot() -> None:
    first, fd1 = claim_uid(BASE, preferred=3)
    second, fd2 = claim_uid(BASE, preferred=3)  # another open file description: a rival holder
    try:
        assert first == BASE + 3
        assert second != first and BASE <= second < BASE + SEARCH
    finally:
        release_uid(fd1)
        release_uid(fd2)
    again, fd3 = claim_uid(BASE, preferred=3)
    release_uid(fd3)
    assert again == BASE + 3  # released: free again


def test_a_claim_held_by_another_process_is_skipped_and_freed_by_its_death() -> None:
    holder = subprocess.Popen(
        [sys.executable, "-c",
         "import sys; from rewardgym.environments.code_gen.uid_claim import claim_uid;"
         f"uid, fd = claim_uid({DEAD_HOLDER_BASE}, 7); print(uid, flush=True); sys.stdin.read()"],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        assert holder.stdout is not None
        assert int(holder.stdout.readline()) == DEAD_HOLDER_BASE + 7
        uid, fd = claim_uid(DEAD_HOLDER_BASE, 7)
        release_uid(fd)
        assert uid != DEAD_HOLDER_BASE + 7
    finally:
        holder.kill()
        holder.wait()
    uid, fd = claim_uid(DEAD_HOLDER_BASE, 7)  # the kernel dropped the dead holder's lock
    release_uid(fd)
    assert uid == DEAD_HOLDER_BASE + 7


def test_every_uid_held_is_an_error(monkeypatch: pytest.MonkeyPatch) -> None:
    # A small range: the rule is the same for 64 uids as for SEARCH, and SEARCH descriptors held at once
    # would press on the process's open-file limit.
    search = 64
    locks = 0
    real_flock = fcntl.flock

    def counted(fd: int, op: int) -> None:
        nonlocal locks
        locks += 1
        real_flock(fd, op)

    monkeypatch.setattr(fcntl, "flock", counted)  # uid_claim calls fcntl.flock: counted
    held: list[int] = []
    try:
        with pytest.raises(
            RuntimeError, match=rf"{EXHAUSTED_BASE}\.\.{EXHAUSTED_BASE + search - 1} is in use"
        ):
            for _ in range(search + 1):
                held.append(claim_uid(EXHAUSTED_BASE, search=search)[1])
        assert len(held) == search
        # Linear: each claim locks one new uid (the held ones are not probed again), the failing one none.
        assert locks == search
    finally:
        for fd in held:
            release_uid(fd)
        for uid in range(EXHAUSTED_BASE, EXHAUSTED_BASE + search):  # this process's range: no other user
            (uid_claim.lock_folder() / f"{uid}.lock").unlink(missing_ok=True)
