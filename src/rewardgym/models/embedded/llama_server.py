"""Run llama.cpp's own OpenAI-compatible HTTP server (via xllamacpp) as a standalone process.

Usage::

    python -m rewardgym.models.embedded.llama_server --model PATH [--host 127.0.0.1] [--port 0]
        [--threads 1] [--parallel 4] [--ctx-size 8192] [--alias NAME] [--ready-file PATH]

Contract:
- Serves ``GET /v1/models``, ``POST /v1/chat/completions`` (and llama.cpp's other routes) on ``host:port``;
  ``--port 0`` picks a free port. Continuous batching over ``--parallel`` slots, each with
  ``ctx-size / parallel`` tokens of context. Binds 127.0.0.1 unless told otherwise; no web UI.
- Once listening it prints ``listening on <url>`` and, with ``--ready-file``, atomically writes the URL
  there (how :class:`~rewardgym.models.embedded.launcher.EmbeddedLlama` learns the port).
- SIGTERM or SIGINT stops it cleanly (exit 0). A missing model file exits 2, a failed load exits 1, each
  with one ``error:`` line on stderr. llama.cpp's own log goes to stderr.
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
from pathlib import Path
from typing import Any

_STOP_SIGNALS = {signal.SIGTERM, signal.SIGINT}


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m rewardgym.models.embedded.llama_server",
        description="Serve a GGUF model with llama.cpp's OpenAI-compatible server (xllamacpp).",
    )
    parser.add_argument("--model", required=True, type=Path, help="GGUF model file")
    parser.add_argument("--host", default="127.0.0.1", help="interface to bind (default 127.0.0.1)")
    parser.add_argument("--port", type=int, default=0, help="port (0: any free port)")
    parser.add_argument("--threads", type=int, default=1, help="CPU threads (default 1)")
    parser.add_argument("--parallel", type=int, default=4, help="concurrent slots (default 4)")
    parser.add_argument("--ctx-size", type=int, default=8192, help="total context tokens, split over slots")
    parser.add_argument("--alias", default=None, help="model name reported by /v1/models")
    parser.add_argument("--ready-file", type=Path, default=None, help="write the URL here once listening")
    args = parser.parse_args(argv)
    for name in ("threads", "parallel", "ctx_size"):
        if getattr(args, name) < 1:
            parser.error(f"--{name.replace('_', '-')} must be at least 1")
    if not 0 <= args.port <= 65535:
        parser.error("--port must be in 0..65535")
    return args


def build_params(args: argparse.Namespace) -> Any:
    """The xllamacpp ``CommonParams`` for ``args``."""
    import xllamacpp

    params = xllamacpp.CommonParams()
    params.model.path = str(args.model)
    params.hostnames = [args.host]
    params.port = args.port
    params.n_parallel = args.parallel
    params.n_ctx = args.ctx_size
    params.cpuparams.n_threads = args.threads
    params.cpuparams_batch.n_threads = args.threads
    params.cont_batching = True
    params.ui = False
    params.cors_origins = ""  # no cross-origin access: a web page must not drive the local model
    if args.alias:
        params.model_alias = {args.alias}
    return params


def _write_ready_file(path: Path, url: str) -> None:
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(url, encoding="utf-8")
    os.replace(tmp, path)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if not args.model.is_file():
        sys.stderr.write(f"error: model file not found: {args.model}\n")
        return 2
    # Block the stop signals before llama.cpp starts its threads (they inherit the mask), then wait for
    # one synchronously in this thread: shutdown then runs here, never inside a native thread.
    signal.pthread_sigmask(signal.SIG_BLOCK, _STOP_SIGNALS)
    import xllamacpp

    try:
        server = xllamacpp.Server(build_params(args))
    except Exception as exc:  # the binding raises plain exceptions for load failures
        sys.stderr.write(f"error: llama.cpp could not load {args.model}: {exc}\n")
        return 1
    url = str(server.listening_address)
    sys.stdout.write(f"listening on {url}\n")
    sys.stdout.flush()
    if args.ready_file is not None:
        _write_ready_file(args.ready_file, url)
    received = signal.sigwait(_STOP_SIGNALS)
    sys.stdout.write(f"stopping on {signal.Signals(received).name}\n")
    sys.stdout.flush()
    del server
    return 0


if __name__ == "__main__":
    sys.exit(main())
