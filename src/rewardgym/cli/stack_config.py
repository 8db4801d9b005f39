"""The one rule for the model flags, shared by every command that loads a server stack.

``gym config show``, ``gym env start``, ``gym eval run`` (serving) and ``gym eval reverify`` load their
config through :func:`load_stack_config`, so the same flags mean the same stack everywhere:

* ``--model-type T`` selects the model server config ``T``; ``--model`` / ``--model-url`` /
  ``--model-api-key`` (or ``--model-api-key-file``, ``$REWARDGYM_MODEL_API_KEY``) fill its ``policy_*`` keys.
* No ``--model-type``: a model server defined by the config files (``--config``, env.yaml) is used, and the
  policy flags fill its keys.
* No ``--model-type`` and no model server in the files: without policy flags the embedded model
  (``embedded_model``) is added; with a policy flag it is an error naming ``--model-type`` — a URL alone
  does not say which API the endpoint speaks (``vllm_model`` for ``/chat/completions``, ``openai_model``
  for ``/responses``), and silently starting the embedded model instead would ignore the flag.

A command that needs no model (reverify of a verifier without a judge) drops the model server afterwards
(:func:`rewardgym.collect.reverify.reverify_config`), so it never asks for one.
"""

from __future__ import annotations

from pathlib import Path
from typing import Final

from rewardgym.config import GymConfig, load_config_from_flags
from rewardgym.errors import ConfigError, UsageError

DEFAULT_MODEL_TYPE: Final = "embedded_model"
MODEL_KIND: Final = "responses_api_models"


def _policy_flags(
    model: str | None, model_url: str | None, model_api_key: str | None, model_api_key_file: Path | None
) -> list[str]:
    # $REWARDGYM_MODEL_API_KEY alone names no model: the embedded model stays the default.
    given = {
        "--model": model,
        "--model-url": model_url,
        "--model-api-key": model_api_key,
        "--model-api-key-file": model_api_key_file,
    }
    return [flag for flag, value in given.items() if value is not None]


def missing_model_type_error(flags: list[str]) -> UsageError:
    """The error for policy flags without a model server to apply them to."""
    named = " / ".join(flags)
    return UsageError(
        f"{named} given, but no model server is configured: add --model-type vllm_model (any "
        "OpenAI-compatible /chat/completions endpoint: vLLM, SGLang, llama.cpp, Ollama) or --model-type "
        "openai_model (a /responses endpoint); without model flags the embedded model is used"
    )


def load_stack_config(
    *, overrides: list[str], config: list[Path], resources: list[str], model_types: list[str],
    agents: list[str], search_dirs: list[Path], model: str | None, model_url: str | None,
    model_api_key: str | None, model_api_key_file: Path | None = None, require_complete: bool = True,
) -> GymConfig:  # fmt: skip
    """The config of a server stack under the model-flag rule of the module docstring."""

    def load(types: list[str]) -> GymConfig:
        return load_config_from_flags(
            config_paths=config, resources_servers=resources, model_types=types, agents=agents,
            search_dirs=search_dirs, model=model, model_url=model_url, model_api_key=model_api_key,
            model_api_key_file=model_api_key_file, overrides=overrides, require_complete=require_complete,
            check_keys=True,
        )  # fmt: skip

    if model_types:
        return load(model_types)
    flags = _policy_flags(model, model_url, model_api_key, model_api_key_file)
    try:
        cfg = load([])
    except ConfigError as first:
        # Typically an agent refers to a model server the files do not define. With the embedded model
        # added the config may be complete; if it still fails, the first error is the one to report.
        try:
            with_default = load([DEFAULT_MODEL_TYPE])
        except ConfigError:
            raise first from None
        if flags:  # the files lack only a model server, and the flags ask for a non-default one
            raise missing_model_type_error(flags) from None
        return with_default
    if cfg.instances_of(MODEL_KIND):
        return cfg
    if flags:
        raise missing_model_type_error(flags)
    return load([DEFAULT_MODEL_TYPE])
