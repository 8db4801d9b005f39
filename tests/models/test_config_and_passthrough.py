"""Model config classes, the shipped YAMLs, and the pass-through (native Responses) request builders."""

from __future__ import annotations

from typing import Any

import pytest
from omegaconf import OmegaConf
from pydantic import BaseModel, ValidationError

from rewardgym.models.config import (
    CONFIG_DIR,
    EmbeddedModelConfig,
    OpenAIModelConfig,
    VLLMModelConfig,
)
from rewardgym.models.errors import UpstreamReplyError
from rewardgym.models.passthrough import (
    build_native_responses_request,
    build_openai_chat_request,
    build_openai_request,
    parse_response,
)
from rewardgym.protocol import ResponseCreateParams

POLICY = {
    "policy_base_url": "http://127.0.0.1:8000/v1",
    "policy_api_key": "sk-secret-123",
    "policy_model_name": "m1",
}
SERVER_KEYS = ("entrypoint",)  # owned by the server layer's base config


def _inner_block(name: str, **top: Any) -> tuple[str, dict[str, Any]]:
    config = OmegaConf.merge(OmegaConf.load(CONFIG_DIR / f"{name}.yaml"), OmegaConf.create(top))
    data = OmegaConf.to_container(config, resolve=True)
    assert isinstance(data, dict)
    ((server_type, impls),) = data["policy_model"].items()
    assert server_type == "responses_api_models"
    ((impl, block),) = impls.items()
    assert block["entrypoint"] == "app.py"
    return impl, {k: v for k, v in block.items() if k not in SERVER_KEYS}


@pytest.mark.parametrize(
    ("name", "cls"), [("openai_model", OpenAIModelConfig), ("vllm_model", VLLMModelConfig)]
)
def test_remote_model_yamls_validate_with_the_policy_keys(name: str, cls: type[BaseModel]) -> None:
    impl, block = _inner_block(name, **POLICY)
    assert impl == name
    config = cls.model_validate(block)
    assert "sk-secret-123" not in repr(config) and "sk-secret-123" not in str(config.model_dump())


def test_vllm_yaml_values() -> None:
    _, block = _inner_block("vllm_model", **POLICY)
    config = VLLMModelConfig.model_validate(block)
    assert config.base_urls() == ["http://127.0.0.1:8000/v1"]
    assert config.api_key.get_secret_value() == "sk-secret-123"
    assert config.model == "m1" and config.uses_reasoning_parser and not config.tool_calls_via_json_schema


def test_embedded_yaml_needs_no_policy_keys() -> None:
    impl, block = _inner_block("embedded_model")  # no policy_* keys at all: must resolve
    assert impl == "embedded_model"
    # llama_port_range is a server field (the launcher's), not part of the model settings
    assert "llama_port_range" in block
    config = EmbeddedModelConfig.model_validate({k: v for k, v in block.items() if k != "llama_port_range"})
    assert config.tool_calls_via_json_schema and config.threads == 1 and config.parallel == 4
    assert config.model == "SmolLM2-135M-Instruct" and config.model_path is None


def test_unknown_keys_and_bad_values_are_rejected_naming_the_field() -> None:
    with pytest.raises(ValidationError, match="base_urll"):
        VLLMModelConfig.model_validate({"base_urll": "http://x/v1", "model": "m", "base_url": "http://x/v1"})
    with pytest.raises(ValidationError, match="not an http"):
        VLLMModelConfig.model_validate({"base_url": "localhost:8000", "model": "m"})
    with pytest.raises(ValidationError, match="training mode"):
        VLLMModelConfig.model_validate(
            {"base_url": "http://x/v1", "model": "m", "return_token_id_information": True}
        )
    with pytest.raises(ValidationError, match="threads"):
        EmbeddedModelConfig.model_validate({"threads": 0})


def test_base_url_list_and_trailing_slash() -> None:
    config = VLLMModelConfig(base_url=["http://a:1/v1/", "http://b:2/v1"], model="m")
    assert config.base_urls() == ["http://a:1/v1", "http://b:2/v1"]


def test_field_docstrings_become_descriptions() -> None:
    assert "Bearer token" in (VLLMModelConfig.model_fields["api_key"].description or "")


def _openai(**fields: Any) -> OpenAIModelConfig:
    return OpenAIModelConfig.model_validate(
        {"openai_base_url": "http://up/v1", "openai_api_key": "k", "openai_model": "gpt-x", **fields}
    )


def test_openai_request_is_the_dumped_params_over_extra_body() -> None:
    params = ResponseCreateParams.model_validate(
        {
            "input": [
                {"role": "user", "content": "q"},
                {"type": "reasoning", "summary": [{"type": "summary_text", "text": "r"}]},
            ],
            "temperature": 0.2,
            "model": "caller",
        }
    )
    body = build_openai_request(params, _openai(extra_body={"temperature": 1.0, "service_tier": "flex"}))
    assert body == {
        "input": [
            {"role": "user", "content": "q"},
            {"type": "reasoning", "summary": [{"type": "summary_text", "text": "r"}]},
        ],
        "temperature": 0.2,
        "model": "gpt-x",
        "service_tier": "flex",
    }
    dropped = build_openai_request(params, _openai(drop_input_reasoning_items=True))
    assert dropped["input"] == [{"role": "user", "content": "q"}]
    assert params.model_dump(exclude_unset=True)["input"][1]["type"] == "reasoning"  # not mutated


def test_openai_chat_request() -> None:
    body = build_openai_chat_request(
        {"messages": [], "model": "c", "seed": 1}, _openai(extra_body={"seed": 9, "x": 1})
    )
    assert body == {"messages": [], "model": "gpt-x", "seed": 1, "x": 1}


def test_native_responses_request_for_vllm() -> None:
    config = VLLMModelConfig(
        base_url="http://x/v1",
        model="served",
        extra_body={"top_k": 3, "temperature": 0.0},
        chat_template_kwargs={"a": 1},
        sampling_overrides={"top_p": 0.1},
    )
    params = ResponseCreateParams.model_validate(
        {"input": "q", "temperature": 0.7, "top_p": 0.9, "metadata": {"extra_body": '{"seed": 5}'}}
    )
    body = build_native_responses_request(params, config)
    assert body["model"] == "served" and body["temperature"] == 0.7 and body["top_p"] == 0.1
    assert body["top_k"] == 3 and body["seed"] == 5 and body["chat_template_kwargs"] == {"a": 1}


def test_parse_response_rejects_garbage() -> None:
    assert parse_response({"id": "r", "created_at": 1, "model": "m", "output": []}).id == "r"
    with pytest.raises(UpstreamReplyError, match="created_at"):
        parse_response({"id": "r", "model": "m"})
