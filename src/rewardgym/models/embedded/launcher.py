"""Start and stop the llama.cpp server child (:mod:`rewardgym.models.embedded.llama_server`).

Contract of :class:`EmbeddedLlama`:
- :meth:`~EmbeddedLlama.start` (or ``await`` :meth:`~EmbeddedLlama.astart`) spawns
  ``python -m rewardgym.models.embedded.llama_server`` in its own process group, with the parent-death
  signal (``PR_SET_PDEATHSIG`` = SIGKILL, Linux) so it dies with the thread that started it — start it from
  a long-lived thread (the main thread or the event loop thread, never a short-lived worker thread).
- It returns once ``GET /v1/models`` answers 200, within ``startup_timeout`` seconds; stdout and stderr go
  to ``log_path``. If the child exits first, or the deadline passes, the child is stopped and
  :class:`~rewardgym.errors.ServerError` is raised with the last 30 lines of its log.
- :meth:`~EmbeddedLlama.stop` sends SIGTERM to the process group, waits ``grace`` seconds, then SIGKILL.
  It is idempotent; the object is also a context manager.
- :attr:`~EmbeddedLlama.base_url` is the OpenAI-style base (``http://127.0.0.1:<port>/v1``).
"""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType

from rewardgym.errors import ServerError

_PR_SET_PDEATHSIG = 1
_LOG_TAIL_LINES = 30
_POLL_SECONDS = 0.05


@dataclass(frozen=True)
class LlamaServerOptions:
    """How to run the llama.cpp child."""

    model_path: Path
    """GGUF file to serve."""
    host: str = "127.0.0.1"
    """Interface to bind."""
    port: int = 0
    """Port to bind; 0 lets the child pick a free one (no race with other processes)."""
    threads: int = 1
    """CPU threads for generation and prompt processing."""
    parallel: int = 4
    """Concurrent slots (continuous batching)."""
    ctx_size: int = 8192
    """Total context tokens, split evenly over the slots."""
    alias: str | None = None
    """Model name reported by ``/v1/models`` (default: the file path)."""

    def argv(self, ready_file: Path) -> list[str]:
        """The child's command line."""
        args = [sys.executable, "-m", "rewardgym.models.embedded.llama_server"]
        args += ["--model", str(self.model_path)]
        args += ["--host", self.host, "--port", str(self.port), "--threads", str(self.threads)]
        args += ["--parallel", str(self.parallel), "--ctx-size", str(self.ctx_size)]
        args += ["--ready-file", str(ready_file)]
        if self.alias:
            args += ["--alias", self.alias]
        return args


def _die_with_parent_hook() -> Callable[[], None] | None:
    """A ``preexec_fn`` that makes the child receive SIGKILL when its parent thread ends (Linux only)."""
    if not sys.platform.startswith("linux"):
        return None
    libc = ctypes.CDLL(None, use_errno=True)  # resolved before fork: nothing to load in the child
    parent = os.getpid()

    def hook() -> None:
        libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
        if os.getppid() != parent:  # the parent died before prctl took effect
            os._exit(1)

    return hook


def log_tail(path: Path, lines: int = _LOG_TAIL_LINES) -> str:
    """The last ``lines`` lines of a log file ("" if it cannot be read)."""
    try:
        with open(path, "rb") as handle:
            handle.seek(0, os.SEEK_END)
            handle.seek(max(0, handle.tell() - 64 * 1024))
            data = handle.read()
    except OSError:
        return ""
    return "\n".join(data.decode("utf-8", errors="replace").splitlines()[-lines:])


class EmbeddedLlama:
    """A llama.cpp server child process serving one GGUF model over HTTP."""

    def __init__(
        self, options: LlamaServerOptions, *, log_path: Path | None = None, startup_timeout: float = 120.0
    ) -> None:
        self.options = options
        self.startup_timeout = startup_timeout
        if log_path is None:
            fd, name = tempfile.mkstemp(prefix="rewardgym-llama-", suffix=".log")
            os.close(fd)
            log_path = Path(name)
        self.log_path = log_path
        self._proc: subprocess.Popen[bytes] | None = None
        self._workdir: Path | None = None
        self._url: str | None = None

    # -- state -------------------------------------------------------------------------------------------
    @property
    def pid(self) -> int | None:
        """Process id of the child (None before start)."""
        return self._proc.pid if self._proc is not None else None

    @property
    def running(self) -> bool:
        """Whether the child process is alive."""
        return self._proc is not None and self._proc.poll() is None

    @property
    def url(self) -> str:
        """Root URL of the server (``http://host:port``); valid after a successful start."""
        if self._url is None:
            raise ServerError("the embedded llama.cpp server is not started")
        return self._url

    @property
    def base_url(self) -> str:
        """OpenAI-style base URL (``…/v1``) for chat completions."""
        return self.url + "/v1"

    # -- start ------------------------------------------------------------------------------------------
    def _spawn(self) -> None:
        if self._proc is not None:
            raise ServerError("the embedded llama.cpp server was already started")
        if not self.options.model_path.is_file():
            raise ServerError(f"model file not found: {self.options.model_path} (run 'gym model fetch')")
        self._workdir = Path(tempfile.mkdtemp(prefix="rewardgym-llama-"))
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        with open(self.log_path, "ab") as log:
            self._proc = subprocess.Popen(
                self.options.argv(self._workdir / "address"),
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                process_group=0,
                # The hook only calls prctl/getppid/_exit (no locks, no allocation): safe after fork.
                preexec_fn=_die_with_parent_hook(),  # noqa: PLW1509
            )

    def _check(self, deadline: float) -> str | None:
        """One readiness step: the URL from the address file, else None; raises on exit or timeout."""
        assert self._proc is not None and self._workdir is not None
        code = self._proc.poll()
        if code is not None:
            self._cleanup()
            raise ServerError(
                f"the embedded llama.cpp server exited during startup (exit code {code}); "
                f"last lines of {self.log_path}:\n{log_tail(self.log_path)}"
            )
        if time.monotonic() > deadline:
            self.stop()
            raise ServerError(
                f"the embedded llama.cpp server did not answer GET /v1/models within "
                f"{self.startup_timeout:g} s; last lines of {self.log_path}:\n{log_tail(self.log_path)}"
            )
        address_file = self._workdir / "address"
        return address_file.read_text(encoding="utf-8").strip() if address_file.is_file() else None

    def _probe(self, url: str) -> bool:
        try:
            with urllib.request.urlopen(url + "/v1/models", timeout=2.0) as reply:
                return bool(reply.status == 200)
        except (urllib.error.URLError, OSError):
            return False

    def start(self) -> str:
        """Start the child and block until it serves; returns :attr:`base_url`."""
        self._spawn()
        deadline = time.monotonic() + self.startup_timeout
        while True:
            url = self._check(deadline)
            if url is not None and self._probe(url):
                self._url = url
                self._cleanup()  # the address file has done its job
                return self.base_url
            time.sleep(_POLL_SECONDS)

    async def astart(self) -> str:
        """Like :meth:`start` without blocking the event loop (spawns in the calling thread)."""
        import aiohttp

        self._spawn()
        deadline = time.monotonic() + self.startup_timeout
        timeout = aiohttp.ClientTimeout(total=2.0)
        async with aiohttp.ClientSession(timeout=timeout) as session:
            while True:
                url = self._check(deadline)
                if url is not None:
                    with contextlib.suppress(aiohttp.ClientError, OSError, asyncio.TimeoutError):
                        async with session.get(url + "/v1/models") as reply:
                            if reply.status == 200:
                                self._url = url
                                self._cleanup()
                                return self.base_url
                await asyncio.sleep(_POLL_SECONDS)

    # -- stop -------------------------------------------------------------------------------------------
    def _cleanup(self) -> None:
        if self._workdir is not None:
            shutil.rmtree(self._workdir, ignore_errors=True)
            self._workdir = None

    def stop(self, grace: float = 10.0) -> int | None:
        """SIGTERM the child's process group, SIGKILL after ``grace`` s; returns its exit code."""
        proc = self._proc
        if proc is None:
            return None
        if proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGTERM)
            try:
                proc.wait(timeout=grace)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
        self._cleanup()
        return proc.returncode

    def __enter__(self) -> EmbeddedLlama:
        self.start()
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()
