"""The sandbox's file system: a new root holding only what the interpreter needs (read-only) and one
size-capped private tmpfs. Stdlib only: runs in :mod:`.sandbox_child` before any solution code.

Contract of :func:`build_root` (called with ``CAP_SYS_ADMIN`` in fresh mount and pid namespaces, i.e. as root
after ``unshare --mount --pid --fork``):

- Every mount is made private first, so nothing done here propagates to the host.
- A small tmpfs becomes the new root. Into it, read-only (``nosuid``, ``nodev``; the mount flags of each
  source kept) and at their own paths: the interpreter's import folders (the ``sys.path`` entries under
  ``sys.prefix`` / ``sys.base_prefix`` and their ``lib`` folders: the standard library, ``lib-dynload``,
  site-packages; *not* an editable checkout), the shared-library folders (``/lib*``, ``/usr/lib*``,
  ``/usr/local/lib``; symlinked ones stay symlinks) and ``/etc/ld.so.cache``. ``/dev`` holds only ``null
  zero full random urandom`` and the ``fd``/``stdin``/``stdout``/``stderr`` links. ``/proc`` is a new procfs
  of the sandbox's pid namespace, so it lists the sandbox's own processes only (no other process's command
  line or environment).
- ``/tmp`` is a tmpfs of ``tmp_mb`` MiB and ``tmp_inodes`` inodes (``nosuid``, ``nodev``, ``noexec``); the
  same file system is also mounted on ``/dev/shm`` and ``/var/tmp``. It is the only writable place, and it
  disappears with the namespace when the run ends.
- ``pivot_root`` into the new root, the old root is detached (no host path is reachable by any name any
  more), the new root is remounted read-only, and ``workdir`` is created inside ``/tmp``.

Any failure raises ``OSError``/``RuntimeError``; the caller reports it as a setup error and runs nothing.
"""

from __future__ import annotations

import ctypes
import os
import sys

MS_RDONLY, MS_NOSUID, MS_NODEV, MS_NOEXEC, MS_REMOUNT = 1, 2, 4, 8, 32
MS_NOATIME, MS_NODIRATIME, MS_BIND, MS_REC, MS_PRIVATE, MS_RELATIME = (
    1024,
    2048,
    4096,
    16384,
    1 << 18,
    1 << 21,
)
ST_RELATIME = 4096
MNT_DETACH = 2
PIVOT_ROOT = {"x86_64": 155, "aarch64": 41}
"""``pivot_root`` syscall numbers (glibc has no wrapper)."""

STAGE = "/tmp"
"""Where the new root is assembled: a mount point in the private namespace (hidden from the host)."""

LIBRARY_DIRS = ("/lib", "/lib64", "/lib32", "/usr/lib", "/usr/lib64", "/usr/lib32", "/usr/local/lib")
FILES = ("/etc/ld.so.cache",)
DEVICES = ("null", "zero", "full", "random", "urandom")
DEV_LINKS = {"fd": "/proc/self/fd", "stdin": "/proc/self/fd/0", "stdout": "/proc/self/fd/1"}
DEV_LINKS["stderr"] = "/proc/self/fd/2"

_libc = ctypes.CDLL(None, use_errno=True)


def _check(result: int, what: str) -> None:
    if result != 0:
        errno = ctypes.get_errno()
        raise OSError(errno, f"{what}: {os.strerror(errno)}")


def _mount(source: str | None, target: str, fstype: str | None, flags: int, data: str | None = None) -> None:
    _check(
        _libc.mount(
            source.encode() if source else None,
            target.encode(),
            fstype.encode() if fstype else None,
            ctypes.c_ulong(flags),
            data.encode() if data else None,
        ),
        f"mount {source or ''} on {target}",
    )


def _locked_flags(path: str) -> int:
    """The flags of the mount holding ``path`` that a read-only remount must keep (a user namespace may not
    clear them)."""
    st = os.statvfs(path).f_flag
    flags = st & (MS_NOSUID | MS_NODEV | MS_NOEXEC | MS_NOATIME | MS_NODIRATIME)
    return flags | (MS_RELATIME if st & ST_RELATIME else 0)


def _bind_read_only(source: str, target: str, extra: int) -> None:
    _mount(source, target, None, MS_BIND)
    flags = MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | extra | _locked_flags(source)
    _mount(None, target, None, flags)


def _import_folders() -> list[str]:
    """The interpreter's installation: ``lib``/``lib64`` of each prefix (standard library, ``lib-dynload``,
    site-packages, and the shared libraries a conda-style prefix keeps there) and the ``sys.path`` entries
    under a prefix. An editable checkout on ``sys.path`` lies outside every prefix and is not included."""
    prefixes = {os.path.realpath(p) for p in (sys.prefix, sys.base_prefix, sys.exec_prefix)}
    found = [f"{p}/{lib}" for p in prefixes for lib in ("lib", "lib64") if os.path.isdir(f"{p}/{lib}")]
    for entry in sys.path:
        real = os.path.realpath(entry) if entry else ""
        if real and os.path.isdir(real) and any(real == p or real.startswith(p + "/") for p in prefixes):
            found.append(real)
    return [os.path.realpath(p) for p in found]


def _covered(path: str, mounted: list[str]) -> bool:
    return any(path == m or path.startswith(m + "/") for m in mounted)


def _expose(new_root: str) -> list[str]:
    """Bind the interpreter's folders into ``new_root``; returns the folders exposed."""
    mounted: list[str] = []
    links = []
    folders = []
    for path in LIBRARY_DIRS:
        if os.path.islink(path):
            links.append(path)
        elif os.path.isdir(path):
            folders.append(path)
    folders += _import_folders()
    for path in sorted(set(folders), key=len):  # parents first; a folder inside an exposed one is skipped
        if _covered(path, mounted):
            continue
        os.makedirs(new_root + path, mode=0o755, exist_ok=True)
        _bind_read_only(path, new_root + path, MS_NODEV)
        mounted.append(path)
    for path in links:
        os.makedirs(os.path.dirname(new_root + path), mode=0o755, exist_ok=True)
        os.symlink(os.readlink(path), new_root + path)
    for path in FILES:
        if os.path.isfile(path):
            os.makedirs(os.path.dirname(new_root + path), mode=0o755, exist_ok=True)
            open(new_root + path, "x").close()
            _bind_read_only(path, new_root + path, MS_NODEV | MS_NOEXEC)
    return mounted


def _devices(new_root: str, tmp: str) -> None:
    dev = new_root + "/dev"
    os.mkdir(dev, 0o755)
    for name in DEVICES:
        open(f"{dev}/{name}", "x").close()
        # Device nodes need a mount without nodev; read-only stops nothing here (writes to a device node are
        # not writes to the file system), so /dev/null stays writable.
        _bind_read_only(f"/dev/{name}", f"{dev}/{name}", MS_NOEXEC)
    for name, target in DEV_LINKS.items():
        os.symlink(target, f"{dev}/{name}")
    for path in ("/dev/shm", "/var/tmp"):
        os.makedirs(new_root + path, mode=0o755, exist_ok=True)
        _mount(tmp, new_root + path, None, MS_BIND)


def build_root(tmp_mb: int, tmp_inodes: int, workdir: str, owner: int | None) -> list[str]:
    """Assemble the new root and switch to it (see the module docstring); returns the folders exposed."""
    number = PIVOT_ROOT.get(os.uname().machine)
    if number is None:
        raise RuntimeError(f"no pivot_root syscall number known for {os.uname().machine}")
    _mount(None, "/", None, MS_REC | MS_PRIVATE)
    new_root = STAGE
    _mount("rewardgym-root", new_root, "tmpfs", MS_NOSUID | MS_NODEV, "size=1m,nr_inodes=4096,mode=755")
    exposed = _expose(new_root)
    tmp = new_root + "/tmp"
    os.mkdir(tmp, 0o755)
    options = f"size={tmp_mb}m,nr_inodes={tmp_inodes},mode=1777"
    _mount("rewardgym-tmp", tmp, "tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC, options)
    _devices(new_root, tmp)
    os.mkdir(new_root + "/proc", 0o555)
    _mount("proc", new_root + "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC)
    os.chdir(new_root)
    # pivot_root(".", "."): the old root ends up stacked on the new one and is then detached.
    _check(_libc.syscall(ctypes.c_long(number), b".", b"."), "pivot_root")
    _check(_libc.umount2(b".", ctypes.c_int(MNT_DETACH)), "detach the old root")
    os.chdir("/")
    _mount(None, "/", None, MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NODEV)
    os.makedirs(workdir, mode=0o700)
    if owner is not None:
        os.chown(workdir, owner, owner)
    return exposed
