"""Configuration of the model adapters (the inner block of a ``responses_api_models`` instance).

Contract:
- :class:`ChatAdapterConfig` holds everything the Responses ⇄ Chat Completions translation reads; the pure
  functions of :mod:`rewardgym.models.chat_adapter` take only this.
- :class:`VLLMModelConfig` (``vllm_model``) adds the upstream connection; :class:`EmbeddedModelConfig`
  (``embedded_model``) adds the local llama.cpp child instead; :class:`OpenAIModelConfig` (``openai_model``)
  is the pass-through to a native Responses API.
- Unknown keys are rejected (a typo in a YAML file is an error naming the key). The server layer composes
  these classes with its own base config by inheritance (``class C(ServerConfig, VLLMModelConfig)``), which
  brings host/port, the NeMo Gym catalogue keys (``entrypoint`` …) and the outbound ``http`` block
  (connect/read timeouts, bounded retries with backoff): those are deliberately not repeated here.
- API keys are :class:`pydantic.SecretStr`: they never appear in ``repr``, logs or dumps; read them only with
  ``get_secret_value()`` when building the ``Authorization`` header.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Self

from pydantic import BaseModel, ConfigDict, Field, SecretStr, field_validator, model_validator

from rewardgym.protocol.headers import valid_headers, valid_secret_value

_CONFIG = ConfigDict(extra="forbid", use_attribute_docstrings=True)

CONFIG_DIR = Path(__file__).resolve().parent / "configs"
"""The shipped model config YAMLs: ``openai_model.yaml``, ``vllm_model.yaml``, ``embedded_model.yaml``."""

EMBEDDED_MODEL_NAME = "SmolLM2-135M-Instruct"
"""The model name the embedded model reports in every Response."""


class ChatAdapterConfig(BaseModel):
    """What the Responses ⇄ Chat Completions translation reads (shared by vllm_model and embedded_model)."""

    model_config = _CONFIG

    model: str
    """Model name sent upstream and reported in every Response (replaces the caller's ``model``)."""

    uses_reasoning_parser: bool = True
    """The upstream splits reasoning into ``reasoning_content``/``reasoning``; ``<think>`` text is parsed."""

    uses_interleaved_reasoning: bool = True
    """Send past reasoning back to the upstream as ``reasoning_content``/``reasoning`` on assistant turns."""

    preserve_reasoning_in_assistant_content: bool = False
    """Keep ``<think>`` text inside assistant history content instead of moving it to reasoning fields."""

    replace_developer_role_with_system: bool = False
    """Rewrite ``developer`` messages as ``system`` (for chat templates that lack the developer role)."""

    sequential_reasoning_allowed: bool = True
    """When false, a history ending in an empty assistant turn is answered locally as ``content_filter``."""

    chat_template_kwargs: dict[str, Any] | None = None
    """Sent as ``chat_template_kwargs``; a row's ``metadata.chat_template_kwargs`` (JSON string) wins."""

    sampling_overrides: dict[str, Any] | None = None
    """Fields forced onto every upstream body, applied last (they beat the caller and ``extra_body``)."""

    extra_body: dict[str, Any] | None = None
    """Fields merged under every upstream body; a row's ``metadata.extra_body`` (JSON string) wins over it,
    and the request's own fields win over both."""

    tool_calls_via_json_schema: bool = False
    """Emulate tool calls with a ``response_format`` JSON schema (for upstreams whose chat template has no
    tool support, such as the embedded model)."""

    return_token_id_information: bool = False
    """Training mode (token ids and logprobs). Not supported by rewardgym: must stay false."""

    @field_validator("return_token_id_information")
    @classmethod
    def _no_training_mode(cls, value: bool) -> bool:
        if value:
            raise ValueError("training mode (token id information) is not supported by rewardgym")
        return value


class VLLMModelConfig(ChatAdapterConfig):
    """``vllm_model``: Responses API in front of any OpenAI-compatible ``/chat/completions`` server."""

    base_url: str | list[str]
    """Upstream base URL ending in ``/v1``, or a list of replicas (each session sticks to one)."""

    api_key: SecretStr = SecretStr("")
    """Bearer token for the upstream (empty: no ``Authorization`` header)."""

    default_headers: dict[str, str] = Field(default_factory=dict)
    """Extra HTTP headers sent with every upstream call."""

    is_responses_native: bool = False
    """The upstream speaks the Responses API itself: forward bodies to ``{base_url}/responses``."""

    use_completions_api: bool = False
    """Use the legacy ``/completions`` API. Not supported by rewardgym: must stay false."""

    max_concurrent_requests: int | None = Field(default=None, ge=1)
    """Upper bound on simultaneous upstream calls from this server (``null``: no bound)."""

    @field_validator("base_url")
    @classmethod
    def _check_base_url(cls, value: str | list[str]) -> str | list[str]:
        urls = [value] if isinstance(value, str) else value
        if not urls:
            raise ValueError("at least one base URL is required")
        for url in urls:
            if not url.startswith(("http://", "https://")):
                raise ValueError(f"{url!r} is not an http(s) URL")
        return value.rstrip("/") if isinstance(value, str) else [u.rstrip("/") for u in value]

    # Both go out as HTTP headers: a CR/LF is refused at configuration time, for both transports.
    _api_key_is_one_header_line = field_validator("api_key")(valid_secret_value)
    _default_headers_are_valid = field_validator("default_headers")(valid_headers)

    @field_validator("use_completions_api")
    @classmethod
    def _no_completions_api(cls, value: bool) -> bool:
        if value:
            raise ValueError("the completions API path is not supported by rewardgym")
        return value

    @model_validator(mode="after")
    def _native_path_limits(self) -> Self:
        if self.is_responses_native:
            if self.replace_developer_role_with_system:
                raise ValueError("is_responses_native excludes replace_developer_role_with_system: true")
            if not self.sequential_reasoning_allowed:
                raise ValueError("is_responses_native excludes sequential_reasoning_allowed: false")
        return self

    def base_urls(self) -> list[str]:
        """The replica URLs as a list (one element when ``base_url`` is a string)."""
        return [self.base_url] if isinstance(self.base_url, str) else list(self.base_url)


class EmbeddedModelConfig(ChatAdapterConfig):
    """``embedded_model``: the bundled SmolLM2-135M served by a llama.cpp child process (no API key)."""

    model: str = EMBEDDED_MODEL_NAME
    """Model name reported in every Response."""

    model_path: str | None = None
    """GGUF file to serve; ``null`` means the verified cached asset (fetched on first use)."""

    threads: int = Field(default=1, ge=1)
    """CPU threads llama.cpp uses for generation and prompt processing (1 is fastest on a busy machine)."""

    parallel: int = Field(default=4, ge=1)
    """Slots decoded together by continuous batching (concurrent generations)."""

    ctx_size: int = Field(default=8192, ge=256)
    """Total KV-cache size in tokens, split evenly between the slots."""

    startup_timeout_seconds: float = Field(default=120.0, gt=0)
    """Time allowed for the llama.cpp child to load the model and answer ``GET /v1/models``."""

    replace_developer_role_with_system: bool = True
    """SmolLM2 knows the ``system`` role only: ``developer`` messages are sent as ``system``."""

    tool_calls_via_json_schema: bool = True
    """SmolLM2's chat template has no tools: tool calls are emulated with a JSON schema (docs/models.md)."""


class OpenAIModelConfig(BaseModel):
    """``openai_model``: forwards Responses requests unchanged to a native ``/responses`` upstream."""

    model_config = _CONFIG

    openai_base_url: str
    """Upstream base URL ending in ``/v1``."""

    openai_api_key: SecretStr = SecretStr("")
    """Bearer token for the upstream."""

    openai_model: str
    """Model name sent upstream (replaces the caller's ``model``)."""

    extra_body: dict[str, Any] = Field(default_factory=dict)
    """Fields merged under every request body (the request's own fields win)."""

    openai_default_headers: dict[str, str] = Field(default_factory=dict)
    """Extra HTTP headers sent with every upstream call."""

    drop_input_reasoning_items: bool = False
    """Remove ``reasoning`` items from the input before forwarding (for upstreams that reject them)."""

    max_concurrent_requests: int | None = Field(default=None, ge=1)
    """Upper bound on simultaneous upstream calls from this server (``null``: no bound)."""

    _api_key_is_one_header_line = field_validator("openai_api_key")(valid_secret_value)
    _default_headers_are_valid = field_validator("openai_default_headers")(valid_headers)

    @field_validator("openai_base_url")
    @classmethod
    def _check_base_url(cls, value: str) -> str:
        if not value.startswith(("http://", "https://")):
            raise ValueError(f"{value!r} is not an http(s) URL")
        return value.rstrip("/")
