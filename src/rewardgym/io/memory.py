"""Giving freed heap memory back to the system (glibc), where a process holds memory for a long time.

Contract of :func:`release_freed_memory`: asks glibc's allocator to return the free parts of its heap to
the system (``malloc_trim(0)``: the free top, and free pages inside the heap); does nothing where the C
library is not glibc. Why: glibc keeps freed memory resident for reuse, so a process that has built and
dropped large temporaries keeps their size resident until it exits — and a forked process that still
shares those pages would hold them twice once either side reuses them.
"""

from __future__ import annotations

import contextlib


def release_freed_memory() -> None:
    """``malloc_trim(0)`` (see module doc)."""
    import ctypes

    # The running program's own symbols (no library search: that would spawn ``ldconfig``).
    with contextlib.suppress(OSError, AttributeError):  # not glibc: nothing to trim the same way
        ctypes.CDLL(None).malloc_trim(0)
