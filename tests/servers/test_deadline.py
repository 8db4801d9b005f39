"""The collector's deadline bounds the upstream connection (issue 22, class 9): a model server called with
``X-Rewardgym-Deadline`` closes its connection to an upstream that never answers once the deadline
passes, although its own read timeout is ten minutes. The upstream is a real TCP server on 127.0.0.1 that
reads the request, never answers and records when the other side closes."""

from __future__ import annotations

import socket
import threading
from typing import Any

from rewardgym.http import deadline
from rewardgym.models.openai_model import OpenAIModel
from tests.stubs.client import call


class SilentUpstream:
    """Accepts connections, reads requests, never answers; ``closed`` is set when a peer hangs up."""

    def __init__(self) -> None:
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{self.sock.getsockname()[1]}"
        self.requests: list[bytes] = []
        self.closed = threading.Event()
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            threading.Thread(target=self._hold, args=(conn,), daemon=True).start()

    def _hold(self, conn: socket.socket) -> None:
        with conn:
            while chunk := conn.recv(65536):
                self.requests.append(chunk)
            self.closed.set()  # the client closed the connection

    def stop(self) -> None:
        self.sock.close()


def test_a_callers_deadline_closes_the_upstream_connection(serve: Any) -> None:
    upstream = SilentUpstream()
    try:
        model = serve(
            OpenAIModel({
                "name": "policy_model", "openai_base_url": f"{upstream.url}/v1", "openai_model": "m",
                "openai_api_key": "sk-dl-1234",
                "http": {"max_attempts": 1, "read_timeout_s": 600.0, "total_timeout_s": 600.0},
            })
        )  # fmt: skip
        reply = call(
            model.url, "POST", "/v1/responses", json={"input": "hello"},
            headers={deadline.HEADER: deadline.header_value(1.0)}, timeout=120,
        )  # fmt: skip
        assert reply.status == 504, reply.body  # the model server gave up at the deadline, not in 10 min
        assert upstream.closed.wait(60), "the upstream connection outlived the caller's deadline"
        assert any(deadline.HEADER.lower().encode() in r.lower() for r in upstream.requests)  # passed on
    finally:
        upstream.stop()
