"""The Ray actor that runs one server process (one replica) on whichever node Ray placed it.

Contract of :class:`ServerActor` (made a Ray actor by :mod:`rewardgym.launch.ray_launch`; this module
imports no Ray at import time):
- Its constructor arguments are two paths — the replica's spec file and its log file — and nothing else:
  **no secret is ever an actor argument** (Ray keeps arguments in its object store and shows actors in its
  dashboard and state API). The spec file (:class:`~rewardgym.launch.child_spec.ChildSpec` as JSON, API
  keys and the shared token included) is written by the driver with mode ``0600`` in a ``0700`` folder
  every node sees (a shared file system, or a Kubernetes Secret mounted at the same path).
- :meth:`ServerActor.locate` answers where the actor runs (node id, node IP) and a port free on that node.
- :meth:`ServerActor.start` reads the spec file, binds the server to this node's IP (so it is reachable
  from the other nodes: the server itself refuses unless the shared token is set, see
  :func:`rewardgym.launch.binding.check_bind`) and spawns ``python -m rewardgym.launch.child`` with the spec
  on its stdin, exactly as the local launcher does (the child dies with the actor: ``PR_SET_PDEATHSIG``).
- When the server process exits without :meth:`ServerActor.stop`, the actor exits too, so Ray restarts it
  (up to the instance's ``max_restarts``); a restarted actor finds the spec file and starts the server
  again at once, on the port it had (its node may differ when the old node died).
- :meth:`ServerActor.status` answers ``{pid, node_id, node_ip, url, incarnation}``.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

from rewardgym.config.ports import pick_free_port
from rewardgym.config.secrets import child_environ
from rewardgym.launch.child_spec import ChildSpec


def _free_port(host: str) -> int:
    with socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        return int(sock.getsockname()[1])


class ServerActor:
    """One server replica inside a Ray actor (see the module docstring)."""

    def __init__(self, spec_file: str, log_file: str) -> None:
        import ray

        self._spec_file = Path(spec_file)
        self._log_file = Path(log_file)
        self._process: subprocess.Popen[bytes] | None = None
        self._stopping = False
        context = ray.get_runtime_context()
        self._node_id = context.get_node_id()
        self._node_ip: str = ray.util.get_node_ip_address()  # type: ignore[no-untyped-call]
        self._incarnation = 0
        self._url: str | None = None
        if self._spec_file.exists():  # a restart: the driver wrote the spec before the first start
            self._incarnation = 1
            self.start()

    def locate(self, low: int = 0, high: int = 0) -> dict[str, Any]:
        """Where this replica runs and a free port there (from ``low..high``, the config's port range)."""
        port = pick_free_port(self._node_ip, (), (low, high)) if low else _free_port(self._node_ip)
        return {"node_id": self._node_id, "node_ip": self._node_ip, "port": port}

    def start(self) -> dict[str, Any]:
        spec = ChildSpec.model_validate_json(self._spec_file.read_bytes())
        config = {**spec.config, "host": self._node_ip}
        spec = spec.model_copy(update={"config": config, "parent_pid": os.getpid(), "network_bind": True})
        self._log_file.parent.mkdir(parents=True, exist_ok=True)
        with self._log_file.open("ab") as log:
            process = subprocess.Popen(
                [sys.executable, "-m", "rewardgym.launch.child"],
                stdin=subprocess.PIPE,
                stdout=log,
                stderr=subprocess.STDOUT,
                env=child_environ(PYTHONUNBUFFERED="1"),
                start_new_session=True,
            )
        assert process.stdin is not None
        process.stdin.write(spec.model_dump_json().encode())  # the secrets travel on the pipe only
        process.stdin.close()
        self._process = process
        self._url = spec.url
        threading.Thread(target=self._watch, args=(process,), daemon=True).start()
        return self.status()

    def _watch(self, process: subprocess.Popen[bytes]) -> None:
        process.wait()
        if not self._stopping:
            os._exit(1)  # the server died: let Ray restart this actor (bounded by max_restarts)

    def status(self) -> dict[str, Any]:
        process = self._process
        return {
            "pid": process.pid if process else None,
            "exit_code": process.poll() if process else None,
            "node_id": self._node_id,
            "node_ip": self._node_ip,
            "url": self._url,
            "incarnation": self._incarnation,
        }

    def stop(self, grace_s: float = 5.0) -> None:
        self._stopping = True
        process = self._process
        if process is None or process.poll() is not None:
            return
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(timeout=grace_s)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(process.pid, signal.SIGKILL)
            process.wait()
