"""A fault-injecting OpenAI-compatible upstream: a real process, fault rates configurable per kind, seeded.

Run it as a process::

    python -m tests.stubs.fault_upstream --port 0 --seed 7 --p-500 0.2 --p-429 0.05 --p-hang 0.05 \
        --p-reset 0.05

It prints ``fault upstream listening on http://127.0.0.1:<port>`` once it accepts connections (``--port 0``
picks a free port), or use :func:`start_fault_upstream` (a :class:`FaultUpstream` handle with ``url``,
``control()``, ``stats()`` and ``stop()``).

Fault kinds (each with a probability per request; the rates must sum to at most 1):

- ``500``, ``502``, ``503``, ``504``, ``401`` (a refused API key), ``400`` (a rejected request): that status
  with an OpenAI-style JSON error body;
- ``429``: 429 with ``Retry-After: <retry_after_s>``; ``429_bare``: 429 without the header;
- ``hang``: no answer at all; the connection is closed after ``hang_s`` (default 3600 s), so only the
  client's timeout ends the attempt;
- ``reset``: the status line, headers (full ``Content-Length``) and half of the body, then the connection is
  reset (RST) — a connection cut mid-body;
- ``malformed``: 200 with a JSON body cut in half; ``missing``: 200 with valid JSON that lacks a required
  field (``choices`` of a chat completion, ``output`` of a response);
- ``dribble``: the status line and headers of a normal answer, then its body one byte every ``dribble_s``
  (default 1 s) — each byte resets a client's read timeout, only a total timeout ends it;
- ``huge``: 200 with a valid JSON answer padded to ``huge_bytes`` (default 50 MB).

A request whose body contains ``[[fault:<kind>:<n>]]`` (e.g. in a prompt) gets that fault on its first
``n`` arrivals (``n = 0``: on every arrival) and passes afterwards, whatever the rates: one collection can
then exercise every kind on chosen rows.

Otherwise which requests fail is deterministic: a request's fault is drawn from ``(seed, sha256(body), n)``
where ``n`` counts earlier arrivals of that exact body (one logical call and all its retries share a body).
A run therefore gets the same faults whatever the arrival order, and ``max_faults_per_call`` (unlimited)
lets a body fail at most that many times before it passes. Fast path: a request no fault hits costs one
hash, one dict update and the stub answer (:class:`tests.stubs.openai_stub.OpenAIStub`, ``text`` default
``\\boxed{B}``), answered without a framework on a raw asyncio protocol (uvloop + httptools).

Endpoints: ``POST /v1/chat/completions`` and ``POST /v1/responses`` (also without ``/v1``), ``GET
/v1/models``, ``GET /`` (liveness), ``GET /_stats`` (the counters below), ``DELETE /_stats`` (reset them) and
``POST /_control`` (any of ``rates`` (kind → probability, replacing all rates), ``seed``, ``retry_after_s``,
``hang_s``, ``dribble_s``, ``huge_bytes``, ``max_faults_per_call``, ``latency_ms``, ``text``,
``reset_stats``).

Counters (``GET /_stats``): ``requests``, ``calls`` (distinct bodies), ``ok``, ``faults`` per kind,
``attempts`` (histogram: arrivals per call → number of calls), ``in_flight`` (calls not answered yet, hung
ones included), ``idle_s`` (since a call last arrived or ended) and ``retry_after`` — for every call answered
429 with ``Retry-After: s``, the gap until the same call arrived again: ``checked``, ``violations`` (gap
< s), ``min_margin_s`` (smallest gap − s).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import hashlib
import re
import socket
import struct
import subprocess
import sys
import time
import urllib.request
from collections import Counter
from dataclasses import dataclass, field
from http import HTTPStatus
from pathlib import Path
from typing import Any

import httptools
import orjson

from tests.stubs.openai_stub import OpenAIStub, StubState
from tests.stubs.stub_process import StubProcess, launch_stub

KINDS = (
    "500", "502", "503", "504", "401", "429", "429_bare", "hang", "reset", "malformed", "missing",
    "dribble", "huge", "400",
)  # fmt: skip
# ("dribble", "huge" and "400" last: the rate walk follows this order, so adding them changed no seeded draw
# of the other kinds.)
"""Every fault kind, in the order their rates are stacked on the unit interval."""

CHAT_PATHS = frozenset({"/v1/chat/completions", "/chat/completions"})
RESPONSES_PATHS = frozenset({"/v1/responses", "/responses"})
RESET_DELAY_S = 0.02
"""Pause between the partial body and the reset, so the partial body reaches the client first."""
READY_PREFIX = "fault upstream listening on "


@dataclass
class FaultSettings:
    """What the upstream does; changed at run time by ``POST /_control``."""

    rates: dict[str, float] = field(default_factory=dict)
    """Fault kind → probability per request (missing kinds: 0)."""
    seed: int = 0
    """Seed of the deterministic fault draw."""
    retry_after_s: float = 1.0
    """``Retry-After`` seconds sent with ``429`` faults."""
    hang_s: float = 3600.0
    """How long a hung request keeps its connection before it is closed without an answer."""
    dribble_s: float = 1.0
    """Seconds between the bytes of a ``dribble`` answer."""
    huge_bytes: int = 50_000_000
    """Size of a ``huge`` answer."""
    max_faults_per_call: int | None = None
    """A body that already failed this many times always passes (``None``: no limit)."""
    latency_ms: float = 0.0
    """Delay before every successful answer (simulated generation time)."""
    text: str = "\\boxed{B}"
    """The assistant's answer."""

    def validate(self) -> None:
        unknown = sorted(set(self.rates) - set(KINDS))
        if unknown:
            raise ValueError(f"unknown fault kind(s) {unknown}; known: {', '.join(KINDS)}")
        if any(not 0.0 <= p <= 1.0 for p in self.rates.values()):
            raise ValueError("every rate must be within [0, 1]")
        if sum(self.rates.values()) > 1.0 + 1e-9:
            raise ValueError(f"the rates sum to {sum(self.rates.values()):.3f} > 1")


@dataclass
class FaultStats:
    """Counters since start (or the last reset)."""

    requests: int = 0
    ok: int = 0
    faults: Counter[str] = field(default_factory=Counter)
    arrivals: dict[bytes, int] = field(default_factory=dict)
    """Arrivals per call (body digest)."""
    pending_retry_after: dict[bytes, tuple[float, float]] = field(default_factory=dict)
    """Call → (when its 429 was sent, the Retry-After it carried), until it arrives again."""
    in_flight: int = 0
    """Model calls not answered yet (hung ones included, until their connection closes)."""
    last_event: float = field(default_factory=time.monotonic)
    """When a model call last arrived or ended."""
    retry_after_checked: int = 0
    retry_after_violations: int = 0
    retry_after_min_margin_s: float | None = None

    def as_dict(self) -> dict[str, Any]:
        histogram = Counter(self.arrivals.values())
        return {
            "requests": self.requests,
            "calls": len(self.arrivals),
            "ok": self.ok,
            "faults": {kind: self.faults[kind] for kind in KINDS if self.faults[kind]},
            "attempts": {str(n): histogram[n] for n in sorted(histogram)},
            "in_flight": self.in_flight,
            "idle_s": round(time.monotonic() - self.last_event, 3),
            "retry_after": {
                "checked": self.retry_after_checked,
                "violations": self.retry_after_violations,
                "min_margin_s": self.retry_after_min_margin_s,
            },
        }


def draw(seed: int, digest: bytes, arrival: int) -> float:
    """A uniform number in [0, 1) fixed by the seed, the body digest and the arrival count."""
    material = struct.pack(">qq", seed, arrival) + digest
    return int.from_bytes(hashlib.blake2b(material, digest_size=8).digest(), "big") / 2**64


DIRECTIVE = re.compile(rb"\[\[fault:([a-z0-9_]+):(\d+)\]\]")


def directed_fault(raw: bytes, arrival: int) -> tuple[bool, str | None]:
    """(the body carries a directive, the fault it asks for on this arrival)."""
    if b"[[fault:" not in raw:
        return False, None
    match = DIRECTIVE.search(raw)
    if match is None or match[1].decode() not in KINDS:
        return False, None
    times = int(match[2])
    return True, (match[1].decode() if times == 0 or arrival < times else None)


def pick_fault(settings: FaultSettings, digest: bytes, arrival: int) -> str | None:
    """The fault kind of this arrival of this call by the rates, or ``None`` for a normal answer."""
    if not settings.rates:
        return None
    if settings.max_faults_per_call is not None and arrival >= settings.max_faults_per_call:
        return None
    u = draw(settings.seed, digest, arrival)
    edge = 0.0
    for kind in KINDS:
        edge += settings.rates.get(kind, 0.0)
        if u < edge:
            return kind
    return None


def _head(status: int, length: int, extra: tuple[tuple[str, str], ...] = (), close: bool = False) -> bytes:
    lines = [
        f"HTTP/1.1 {status} {HTTPStatus(status).phrase}",
        "content-type: application/json",
        f"content-length: {length}",
        *(f"{name}: {value}" for name, value in extra),
    ]
    if close:
        lines.append("connection: close")
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")


class FaultApp:
    """The decisions and counters, shared by every connection."""

    def __init__(self, settings: FaultSettings) -> None:
        settings.validate()
        self.settings = settings
        self.stats = FaultStats()
        self.answers = OpenAIStub(StubState(text=settings.text, record=False))

    def control(self, updates: dict[str, Any]) -> None:
        names = {"rates", "seed", "retry_after_s", "hang_s", "dribble_s", "huge_bytes", "max_faults_per_call"}
        names |= {"latency_ms", "text"}
        unknown = sorted(set(updates) - names - {"reset_stats"})
        if unknown:
            raise ValueError(f"unknown control key(s) {unknown}")
        candidate = FaultSettings(
            **{**vars(self.settings), **{k: v for k, v in updates.items() if k in names}}
        )
        candidate.rates = {str(k): float(v) for k, v in candidate.rates.items()}
        candidate.validate()
        self.settings = candidate
        self.answers.state.text = candidate.text
        if updates.get("reset_stats"):
            self.stats = FaultStats()

    def arrive(self, raw: bytes) -> tuple[bytes, int]:
        """Count an arrival of a model call; check a pending ``Retry-After``; return (digest, arrival n)."""
        stats = self.stats
        digest = hashlib.sha256(raw).digest()
        arrival = stats.arrivals.get(digest, 0)
        stats.arrivals[digest] = arrival + 1
        stats.requests += 1
        stats.in_flight += 1
        stats.last_event = time.monotonic()
        pending = stats.pending_retry_after.pop(digest, None)
        if pending is not None:
            sent_at, wanted = pending
            margin = time.monotonic() - sent_at - wanted
            stats.retry_after_checked += 1
            if margin < -0.005:
                stats.retry_after_violations += 1
            if stats.retry_after_min_margin_s is None or margin < stats.retry_after_min_margin_s:
                stats.retry_after_min_margin_s = round(margin, 4)
        return digest, arrival

    def answer(self, path: str, raw: bytes) -> bytes:
        try:
            body = orjson.loads(raw) if raw else {}
        except orjson.JSONDecodeError:
            body = {}
        if not isinstance(body, dict):
            body = {}
        result = self.answers.chat(body) if path in CHAT_PATHS else self.answers.responses(body)
        return orjson.dumps(result)


class FaultConnection(asyncio.Protocol):
    """One client connection: HTTP/1.1 keep-alive, parsed by httptools, answered by :class:`FaultApp`."""

    def __init__(self, app: FaultApp) -> None:
        self.app = app
        self.parser = httptools.HttpRequestParser(self)
        self.transport: asyncio.Transport | None = None
        self.url = b""
        self.body: list[bytes] = []
        self.stalled = False
        """A hung or reset request: the connection takes no further requests."""
        self.timers: list[asyncio.TimerHandle] = []
        self.call_open = False
        """A model call on this connection has arrived and is not answered yet."""

    # -- asyncio.Protocol
    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]  # uvloop's TCPTransport is duck-typed

    def data_received(self, data: bytes) -> None:
        if self.stalled:
            return
        try:
            self.parser.feed_data(data)
        except httptools.HttpParserError:
            self._send(400, b'{"error": {"message": "bad request"}}', close=True)

    def connection_lost(self, exc: Exception | None) -> None:
        for timer in self.timers:
            timer.cancel()
        self.transport = None
        self._end_call()

    def _end_call(self) -> None:
        if self.call_open:
            self.call_open = False
            stats = self.app.stats
            stats.in_flight = max(0, stats.in_flight - 1)
            stats.last_event = time.monotonic()

    # -- httptools callbacks
    def on_message_begin(self) -> None:
        self.url = b""
        self.body = []

    def on_url(self, url: bytes) -> None:
        self.url += url

    def on_body(self, body: bytes) -> None:
        self.body.append(body)

    def on_message_complete(self) -> None:
        method = self.parser.get_method().decode("latin-1")
        path = self.url.decode("latin-1").split("?", 1)[0]
        self.handle(method, path, b"".join(self.body))

    # -- answering
    def _send(
        self, status: int, payload: bytes, extra: tuple[tuple[str, str], ...] = (), close: bool = False
    ) -> None:
        self._end_call()
        if self.transport is None:
            return
        close = close or not self.parser.should_keep_alive()
        self.transport.write(_head(status, len(payload), extra, close) + payload)
        if close:
            self.transport.close()

    def _later(self, delay: float, callback: Any, *args: Any) -> None:
        loop = asyncio.get_running_loop()
        self.timers.append(loop.call_later(delay, callback, *args))

    def handle(self, method: str, path: str, raw: bytes) -> None:
        app = self.app
        if path in CHAT_PATHS or path in RESPONSES_PATHS:
            if method != "POST":
                self._send(405, b'{"error": {"message": "method not allowed"}}')
                return
            self.model_call(path, raw)
        elif path in ("/v1/models", "/models") and method == "GET":
            self._send(
                200, orjson.dumps({"object": "list", "data": [{"id": "fault-model", "object": "model"}]})
            )
        elif path == "/" and method == "GET":
            self._send(200, b'{"status": "ok", "name": "fault_upstream"}')
        elif path == "/_stats" and method in ("GET", "DELETE"):
            if method == "DELETE":
                app.stats = FaultStats()
            self._send(200, orjson.dumps({**app.stats.as_dict(), "settings": vars(app.settings)}))
        elif path == "/_control" and method == "POST":
            try:
                updates = orjson.loads(raw or b"{}")
                if not isinstance(updates, dict):
                    raise ValueError("the control body must be a JSON object")
                app.control(updates)
            except (ValueError, TypeError) as exc:
                self._send(400, orjson.dumps({"error": {"message": str(exc)}}))
                return
            self._send(200, orjson.dumps(vars(app.settings)))
        else:
            self._send(404, b'{"error": {"message": "not found"}}')

    def model_call(self, path: str, raw: bytes) -> None:
        app = self.app
        settings = app.settings
        digest, arrival = app.arrive(raw)
        self.call_open = True
        directed, kind = directed_fault(raw, arrival)
        if not directed:
            kind = pick_fault(settings, digest, arrival)
        if kind is None:
            app.stats.ok += 1
            payload = app.answer(path, raw)
            if settings.latency_ms > 0:
                self._later(settings.latency_ms / 1000, self._send, 200, payload)
            else:
                self._send(200, payload)
            return
        app.stats.faults[kind] += 1
        if kind.isdigit():
            status = int(kind)
            extra: tuple[tuple[str, str], ...] = ()
            if status == 429:
                extra = (("retry-after", f"{settings.retry_after_s:g}"),)
            error = {"error": {"message": f"injected fault {kind}", "type": "fault_upstream", "code": status}}
            self._send(status, orjson.dumps(error), extra)
            if status == 429:
                app.stats.pending_retry_after[digest] = (time.monotonic(), settings.retry_after_s)
        elif kind == "429_bare":
            self._send(429, b'{"error": {"message": "injected fault 429 without Retry-After"}}')
        elif kind == "hang":
            self.stalled = True
            if self.transport is not None:
                self._later(settings.hang_s, self.transport.close)
        elif kind == "reset":
            self.stalled = True
            payload = app.answer(path, raw)
            if self.transport is not None:
                self.transport.write(_head(200, len(payload)) + payload[: len(payload) // 2])
                self._later(RESET_DELAY_S, self._reset)
        elif kind == "malformed":
            payload = app.answer(path, raw)
            self._send(200, payload[: len(payload) // 2])
        elif kind == "dribble":
            self.stalled = True
            payload = app.answer(path, raw)
            if self.transport is not None:
                self.transport.write(_head(200, len(payload)))
                self._later(settings.dribble_s, self._dribble, payload, settings.dribble_s)
        elif kind == "huge":
            payload = app.answer(path, raw)
            padding = max(0, settings.huge_bytes - len(payload) - 12)
            self._send(200, payload[:-1] + b', "pad": "' + b"x" * padding + b'"}')
        else:  # missing: a well-formed JSON object without the field every client needs
            result = orjson.loads(app.answer(path, raw))
            result.pop("choices" if path in CHAT_PATHS else "output", None)
            self._send(200, orjson.dumps(result))

    def _dribble(self, rest: bytes, every_s: float) -> None:
        if self.transport is None or not rest:
            return
        self.transport.write(rest[:1])
        self._later(every_s, self._dribble, rest[1:], every_s)

    def _reset(self) -> None:
        if self.transport is None:
            return
        sock = self.transport.get_extra_info("socket")
        if sock is not None:
            with contextlib.suppress(OSError):
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        self.transport.abort()


async def serve(settings: FaultSettings, host: str, port: int) -> None:
    app = FaultApp(settings)
    loop = asyncio.get_running_loop()
    server = await loop.create_server(lambda: FaultConnection(app), host, port, backlog=4096)
    bound = server.sockets[0].getsockname()[1]
    sys.stdout.write(f"{READY_PREFIX}http://{host}:{bound}\n")
    sys.stdout.flush()
    async with server:
        await server.serve_forever()


def parse_args(argv: list[str] | None = None) -> tuple[FaultSettings, str, int]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=0, help="0 picks a free port (printed on stdout)")
    parser.add_argument("--seed", type=int, default=0)
    for kind in KINDS:
        parser.add_argument(f"--p-{kind.replace('_', '-')}", type=float, default=0.0, dest=f"p_{kind}")
    parser.add_argument("--retry-after", type=float, default=1.0, help="Retry-After seconds of 429 faults")
    parser.add_argument("--hang-s", type=float, default=3600.0)
    parser.add_argument("--dribble-s", type=float, default=1.0)
    parser.add_argument("--huge-bytes", type=int, default=50_000_000)
    parser.add_argument("--max-faults-per-call", type=int, default=None)
    parser.add_argument("--latency-ms", type=float, default=0.0)
    parser.add_argument("--text", default="\\boxed{B}")
    args = parser.parse_args(argv)
    rates = {kind: getattr(args, f"p_{kind}") for kind in KINDS if getattr(args, f"p_{kind}") > 0}
    settings = FaultSettings(
        rates=rates,
        seed=args.seed,
        retry_after_s=args.retry_after,
        hang_s=args.hang_s,
        dribble_s=args.dribble_s,
        huge_bytes=args.huge_bytes,
        max_faults_per_call=args.max_faults_per_call,
        latency_ms=args.latency_ms,
        text=args.text,
    )
    try:
        settings.validate()
    except ValueError as exc:
        parser.error(str(exc))
    return settings, args.host, args.port


def main(argv: list[str] | None = None) -> None:
    settings, host, port = parse_args(argv)
    try:
        import uvloop

        uvloop.run(serve(settings, host, port))
    except ImportError:  # pragma: no cover - uvloop is a dependency on Linux
        asyncio.run(serve(settings, host, port))
    except KeyboardInterrupt:
        pass


# ------------------------------------------------------------------------------------------------ client
class FaultUpstream(StubProcess):
    """A running fault upstream process (see :func:`start_fault_upstream`)."""

    def __init__(self, proc: subprocess.Popen[str], url: str) -> None:
        super().__init__(proc, url)
        self.base_url = f"{url}/v1"

    def _call(self, method: str, path: str, body: dict[str, Any] | None = None) -> Any:
        data = orjson.dumps(body) if body is not None else None
        request = urllib.request.Request(self.url + path, data=data, method=method)
        if data is not None:
            request.add_header("Content-Type", "application/json")
        with urllib.request.urlopen(request, timeout=10) as reply:
            return orjson.loads(reply.read())

    def control(self, **updates: Any) -> dict[str, Any]:
        """Change the behaviour (``rates={...}``, ``seed``, ``latency_ms``, ``reset_stats=True``, …)."""
        return dict(self._call("POST", "/_control", updates))

    def stats(self) -> dict[str, Any]:
        return dict(self._call("GET", "/_stats"))

    def reset_stats(self) -> None:
        self._call("DELETE", "/_stats")

    def wait_idle(self, quiet_s: float = 0.5, timeout: float = 60.0) -> bool:
        """Wait until no call is in flight and none arrived for ``quiet_s`` (leftovers of earlier work)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            stats = self.stats()
            if stats["in_flight"] == 0 and stats["idle_s"] >= quiet_s:
                return True
            time.sleep(0.1)
        return False

    @property
    def pid(self) -> int:
        return self.proc.pid


def start_fault_upstream(*args: str, cwd: Path | None = None, timeout_s: float = 30.0) -> FaultUpstream:
    """Start ``python -m tests.stubs.fault_upstream <args>`` on a free port and wait until it listens."""
    return FaultUpstream(*launch_stub("fault_upstream", READY_PREFIX, args, cwd=cwd, timeout_s=timeout_s))


if __name__ == "__main__":
    main()
