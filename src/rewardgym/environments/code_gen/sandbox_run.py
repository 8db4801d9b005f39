"""One running sandbox child, as :mod:`.sandbox` sees it: its report lines, its stderr tail and how it ended.

Contract of :class:`SandboxRun`: every byte the child sends back is counted in the reader before it is kept
(chunks of 64 KiB); a report line over ``line_limit`` or more than ``stderr_limit`` bytes on stderr kills
the process group at once and :meth:`SandboxRun.events` ends with an ``overflow`` event, so a flood never
grows the server's memory beyond one line. :func:`describe_exit` names how a child ended (a signal's
reason, or the exit status); :func:`big_ints` raises Python's integer-digits limit around synchronous work;
:class:`SandboxError` is an infrastructure fault of a run (never a reward).
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import json
import os
import signal
import sys
import time
from collections.abc import AsyncIterator, Iterator
from typing import Any

from rewardgym.environments.code_gen.lcb_execution import INT_MAX_STR_DIGITS
from rewardgym.errors import ServerError

STDERR_TAIL_BYTES = 16_384
READ_CHUNK = 65_536
_SIGNAL_REASONS = {
    signal.SIGXCPU: "CPU time limit exceeded",
    signal.SIGKILL: "killed (CPU hard limit or out of memory)",
    signal.SIGSEGV: "crashed (segmentation fault)",
}


class SandboxError(ServerError):
    """The sandbox itself failed (could not start or confine the child): no reward can be given."""


class SandboxUnavailableError(SandboxError):
    """Network isolation is unavailable and the config requires it, so no code is run."""


@contextlib.contextmanager
def big_ints() -> Iterator[None]:
    """Parse and print integers as long as the solutions may (NeMo Gym raises the limit process-wide; this
    raises it only around synchronous work, never across an ``await``)."""
    previous = sys.get_int_max_str_digits()
    sys.set_int_max_str_digits(max(previous, INT_MAX_STR_DIGITS))
    try:
        yield
    finally:
        sys.set_int_max_str_digits(previous)


def describe_exit(returncode: int | None) -> str:
    """A short reason for how the child ended (``unshare`` reports a signal death as ``128 + signal``)."""
    if returncode is None:
        return "still running"
    number = -returncode if returncode < 0 else returncode - 128 if returncode > 128 else 0
    if number:
        with contextlib.suppress(ValueError):
            sig = signal.Signals(number)
            return f"{sig.name}: {_SIGNAL_REASONS.get(sig, 'killed by a signal')}"
    return f"exit status {returncode}"


class SandboxRun:
    """One running child: its report lines and how it ended.

    Every byte the child sends back is counted before it is kept: a report line longer than
    ``line_limit`` or more than ``stderr_limit`` bytes on stderr ends the run at once (the process group is
    killed; :attr:`overflow` names the channel), so a flood never grows the server's memory beyond one line.
    """

    def __init__(self, proc: asyncio.subprocess.Process, line_limit: int, stderr_limit: int) -> None:
        self.proc = proc
        self.line_limit = line_limit
        self.stderr_limit = stderr_limit
        self.overflow: str | None = None
        self.confinement: dict[str, Any] = {}
        self._stderr: collections.deque[bytes] = collections.deque()
        self._stderr_size = 0
        self.stderr_bytes = 0
        self.started = time.monotonic()
        self.stderr_task = asyncio.ensure_future(self._drain_stderr())

    def _stop(self, reason: str) -> None:
        """Record the first overflow and kill the run (the full cleanup still happens on leaving ``run``)."""
        if self.overflow is None:
            self.overflow = reason
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.proc.pid, signal.SIGKILL)
        with contextlib.suppress(ProcessLookupError):
            self.proc.kill()

    async def _drain_stderr(self) -> None:
        assert self.proc.stderr is not None
        while chunk := await self.proc.stderr.read(READ_CHUNK):
            self.stderr_bytes += len(chunk)
            if self.stderr_bytes > self.stderr_limit:
                self._stop(f"more than {self.stderr_limit} bytes on stderr")
                return
            self._stderr.append(chunk)
            self._stderr_size += len(chunk)
            while self._stderr_size - len(self._stderr[0]) >= STDERR_TAIL_BYTES:
                self._stderr_size -= len(self._stderr.popleft())

    def stderr_tail(self) -> str:
        """The last bytes the child wrote on stderr (for diagnostics; may contain the solution's output)."""
        return b"".join(self._stderr)[-STDERR_TAIL_BYTES:].decode("utf-8", "replace")

    async def _lines(self) -> AsyncIterator[bytes]:
        """Complete report lines (without the newline); a partial last line is dropped (the child died)."""
        assert self.proc.stdout is not None
        pending = bytearray()
        while chunk := await self.proc.stdout.read(READ_CHUNK):
            start = 0
            while (end := chunk.find(b"\n", start)) >= 0:
                if len(pending) + end - start > self.line_limit:
                    break
                pending += chunk[start:end]
                yield bytes(pending)
                pending.clear()
                start = end + 1
            pending += chunk[start : start + self.line_limit + 1 - len(pending)]
            if len(pending) > self.line_limit:
                self._stop(f"a report line longer than {self.line_limit} bytes")
                return

    async def events(self) -> AsyncIterator[dict[str, Any]]:
        """The report lines after confinement, in order, until the child closes its report channel or sends
        more than the limits allow (then one ``{"event": "overflow", "reason"}``)."""
        async for line in self._lines():
            try:
                with big_ints():
                    event = json.loads(line.decode("utf-8", "surrogatepass"))
            except ValueError:
                event = None
            if not isinstance(event, dict):
                yield {"event": "invalid"}
            elif event.get("event") == "setup_error" and not self.confinement:
                raise SandboxError(f"sandbox setup failed: {event.get('error')}")
            elif event.get("event") == "sandbox" and not self.confinement:
                self.confinement = event
            else:
                yield event
        # A stderr flood is noticed before the child can go on (its write blocks until the reader has read).
        if self.overflow is not None:
            yield {"event": "overflow", "reason": f"Output limit: {self.overflow} (max_output_mb)"}
            return
        if not self.confinement:
            await self.proc.wait()
            ended = describe_exit(self.proc.returncode)
            raise SandboxError(
                f"sandbox child ended before confining itself ({ended}): {self.stderr_tail().strip()[-500:]}"
            )

    async def exit_reason(self, timeout: float = 5.0) -> str:
        """How the child ended (waits up to ``timeout`` seconds for it to exit)."""
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self.proc.wait(), timeout)
        if self.overflow is not None:
            return f"output limit: {self.overflow}"
        return describe_exit(self.proc.returncode)
