"""The last confinement steps of the sandboxed child: no capabilities, no new user namespaces. Stdlib only.

Contract:

- :func:`drop_bounding_set` empties the capability bounding set (needs ``CAP_SETPCAP``, i.e. before the uid
  drop), so no later ``execve`` -- not even of a program as (namespace) root -- can gain a capability.
- :func:`drop_capabilities` clears the effective, permitted, inheritable and ambient sets. After the uid
  drop of a root server they are empty already; in ``user-namespaces`` mode the code keeps uid 0 of its
  namespace, and this is what takes its power away.
- :func:`forbid_user_namespaces` installs a seccomp filter (``no_new_privs`` must be set) that makes
  ``unshare`` and ``clone`` fail with ``EPERM`` when asked for ``CLONE_NEWUSER``, and ``clone3`` (whose flags
  live in memory, out of a filter's reach) fail with ``ENOSYS``, upon which glibc falls back to ``clone``
  for threads and ``fork``. A user namespace is the door to every other namespace and to kernel code that
  unprivileged users otherwise never reach. Foreign system-call ABIs (i386 on x86_64, x32) get ``EPERM``
  for every call, so the filter cannot be bypassed through them. Other namespace kinds need
  ``CAP_SYS_ADMIN``, which the code no longer has.

Each function raises ``OSError`` when the kernel refuses; the caller reports a setup error and runs nothing.
"""

from __future__ import annotations

import ctypes
import errno
import os
import struct

PR_CAPBSET_DROP, PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL = 24, 47, 4
PR_SET_SECCOMP, SECCOMP_MODE_FILTER = 22, 2
LINUX_CAPABILITY_VERSION_3 = 0x20080522
CLONE_NEWUSER = 0x10000000
X32_SYSCALL_BIT = 0x40000000

# (audit arch, unshare, clone, clone3) per machine; see linux/audit.h and the unistd tables.
SYSCALLS = {
    "x86_64": (0xC000003E, 272, 56, 435),
    "aarch64": (0xC00000B7, 97, 220, 435),
}

# Classic BPF opcodes (linux/filter.h) and seccomp return values (linux/seccomp.h).
LD_W_ABS, JEQ_K, JGE_K, JSET_K, RET_K = 0x20, 0x15, 0x35, 0x45, 0x06
RET_ALLOW, RET_ERRNO = 0x7FFF0000, 0x00050000
OFFSET_NR, OFFSET_ARCH, OFFSET_ARG0 = 0, 4, 16  # struct seccomp_data (little-endian: low word of args[0])

_libc = ctypes.CDLL(None, use_errno=True)


def _check(result: int, what: str) -> None:
    if result != 0:
        code = ctypes.get_errno()
        raise OSError(code, f"{what}: {os.strerror(code)}")


def drop_bounding_set() -> None:
    """Empty the capability bounding set."""
    with open("/proc/sys/kernel/cap_last_cap") as handle:
        last = int(handle.read())
    for cap in range(last + 1):
        _check(_libc.prctl(PR_CAPBSET_DROP, cap, 0, 0, 0), f"drop capability {cap} from the bounding set")


class _CapHeader(ctypes.Structure):
    _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]


class _CapData(ctypes.Structure):
    _fields_ = [
        ("effective", ctypes.c_uint32),
        ("permitted", ctypes.c_uint32),
        ("inheritable", ctypes.c_uint32),
    ]


def drop_capabilities() -> None:
    """Clear the ambient, effective, permitted and inheritable capability sets of this process."""
    _check(_libc.prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0), "clear ambient capabilities")
    header = _CapHeader(LINUX_CAPABILITY_VERSION_3, 0)
    data = (_CapData * 2)()  # two 32-bit halves, all zero
    _check(_libc.capset(ctypes.byref(header), data), "capset")


def _instruction(code: int, jt: int, jf: int, k: int) -> bytes:
    return struct.pack("=HBBI", code, jt, jf, k)


def filter_program(machine: str) -> bytes:
    """The BPF program of :func:`forbid_user_namespaces` for ``machine`` (``os.uname().machine``)."""
    if machine not in SYSCALLS:
        raise RuntimeError(f"no seccomp filter for the {machine} architecture")
    arch, unshare, clone, clone3 = SYSCALLS[machine]
    eperm, enosys = RET_ERRNO | errno.EPERM, RET_ERRNO | errno.ENOSYS
    i = _instruction
    x32 = X32_SYSCALL_BIT if machine == "x86_64" else 0xFFFFFFFF  # aarch64 numbers never get this high
    program = [
        i(LD_W_ABS, 0, 0, OFFSET_ARCH),
        i(JEQ_K, 1, 0, arch),  # 1
        i(RET_K, 0, 0, eperm),  # 2: another ABI
        i(LD_W_ABS, 0, 0, OFFSET_NR),  # 3
        i(JGE_K, 0, 1, x32),  # 4
        i(RET_K, 0, 0, eperm),  # 5: x32 numbers
        i(JEQ_K, 0, 1, clone3),  # 6
        i(RET_K, 0, 0, enosys),  # 7
        i(JEQ_K, 2, 0, unshare),  # 8 -> 11
        i(JEQ_K, 1, 0, clone),  # 9 -> 11
        i(RET_K, 0, 0, RET_ALLOW),  # 10
        i(LD_W_ABS, 0, 0, OFFSET_ARG0),  # 11: the flags
        i(JSET_K, 0, 1, CLONE_NEWUSER),  # 12
        i(RET_K, 0, 0, eperm),  # 13
        i(RET_K, 0, 0, RET_ALLOW),  # 14
    ]
    return b"".join(program)


class _SockFprog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]


def forbid_user_namespaces() -> None:
    """Install the seccomp filter (see the module docstring); ``no_new_privs`` must already be set."""
    program = filter_program(os.uname().machine)
    buffer = ctypes.create_string_buffer(program, len(program))
    fprog = _SockFprog(len(program) // 8, ctypes.cast(buffer, ctypes.c_void_p))
    _check(
        _libc.prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, ctypes.byref(fprog), 0, 0), "install seccomp filter"
    )
