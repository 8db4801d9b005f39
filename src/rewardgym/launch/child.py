"""Entry point of one server process: ``python -m rewardgym.launch.child`` (spec on stdin).

Contract:
- Reads one :class:`~rewardgym.launch.child_spec.ChildSpec` as JSON from stdin (so secrets never appear on the
  command line or in the environment), asks the kernel to SIGTERM it when the supervisor dies
  (``PR_SET_PDEATHSIG``, Linux) and exits at once if the supervisor is already gone.
- Registers the spec's ``secrets`` for redaction, then finds the server class
  (:func:`~rewardgym.launch.child_spec.server_class`: registry lookup of ``kind`` and ``implementation``),
  builds the server from ``config`` (construction and launching stay separate: this module only launches),
  and serves until SIGINT/SIGTERM (graceful, bounded by ``graceful_shutdown_s``) — together with the spec's
  ``companions`` when it hosts a colocated group (:mod:`rewardgym.launch.colocate`).
- A user-caused failure (invalid config, port in use) prints one ``Error: …`` line to stderr and exits 1;
  stdout/stderr are the instance's log file, opened by the supervisor.
- Binding: a server listens on a non-loopback address only when its launcher placed it on a cluster
  (``spec.network_bind``, the Ray launcher) and only with the shared auth token set; otherwise
  :func:`~rewardgym.launch.binding.check_bind` refuses to start it with one ``Error:`` line naming the
  instance and what to do.
- :func:`run` is the same thing for a spec already in hand; the fork server
  (:mod:`rewardgym.launch.zygote`) calls it in each process it forks.
"""

from __future__ import annotations

import ctypes
import os
import signal
import sys

from pydantic import ValidationError

from rewardgym.config.secrets import redact_text, register_secret
from rewardgym.errors import RewardGymError
from rewardgym.launch.child_spec import ChildSpec

PR_SET_PDEATHSIG = 1


def die_with_parent(parent_pid: int | None) -> None:
    """Have the kernel send SIGTERM when the parent dies; exit now if it already did."""
    if sys.platform.startswith("linux"):
        try:
            libc = ctypes.CDLL(None, use_errno=True)
            libc.prctl(PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0)
        except (OSError, AttributeError):  # pragma: no cover - exotic libc
            pass
    if parent_pid is not None and os.getppid() != parent_pid:
        sys.exit(1)


def run(spec: ChildSpec) -> int:
    """Build the server of ``spec`` and serve it until SIGINT/SIGTERM; returns the exit code (a user-caused
    failure prints one ``Error: …`` line to stderr and returns 1)."""
    for secret in spec.secrets:
        register_secret(secret)
    try:
        from rewardgym.launch.colocate import build_server, serve_together
        from rewardgym.launch.serve import serve_forever
        from rewardgym.servers.logs import attach_library_loggers

        server = build_server(spec)
        attach_library_loggers(server.config.name, server.config.log_level)
        if not spec.companions:
            serve_forever(server)
            return 0
        return serve_together([server, *(build_server(companion) for companion in spec.companions)])
    except RewardGymError as exc:
        sys.stderr.write(f"Error: {spec.name}: {redact_text(str(exc))}\n")
        return 1
    return 0


def main() -> int:
    try:
        spec = ChildSpec.model_validate_json(sys.stdin.buffer.read())
    except ValidationError as exc:
        sys.stderr.write(f"Error: invalid child spec on stdin: {exc.error_count()} error(s)\n")
        return 2
    die_with_parent(spec.parent_pid)
    return run(spec)


if __name__ == "__main__":
    sys.exit(main())
