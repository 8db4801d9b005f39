"""structured_outputs: NeMo Gym compatibility, reference test vectors and bad input."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import xmltodict  # type: ignore[import-untyped]
import yaml
from pydantic import ValidationError

from rewardgym.environments.structured_outputs.schema import strictify
from rewardgym.environments.structured_outputs.verifier import (
    DescriptiveFields,
    StructuredOutputsConfig,
    StructuredOutputsVerifyRequest,
    StructuredOutputsVerifyResponse,
    verify,
)

DATA = Path(__file__).resolve().parents[1] / "data"
PARAMS = {"input": [{"role": "user", "content": "extract"}]}


def _lines(name: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (DATA / name).read_text(encoding="utf-8").splitlines()]


def _message(text: str) -> dict[str, Any]:
    return {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": text}]}


def _call(arguments: str, name: str = "extract_record", call_id: str = "c1") -> dict[str, Any]:
    return {"type": "function_call", "call_id": call_id, "name": name, "arguments": arguments}


def _response(*items: dict[str, Any], error: dict[str, Any] | None = None) -> dict[str, Any]:
    return {"id": "resp_1", "created_at": 0.0, "model": "m", "output": list(items), "error": error}


def _verify(
    schema: dict[str, Any], *items: dict[str, Any], config: StructuredOutputsConfig | None = None, **row: Any
) -> StructuredOutputsVerifyResponse:
    body = {
        "responses_create_params": PARAMS,
        "schema_str": json.dumps(schema),
        "response": _response(*items),
        **row,
    }
    return verify(StructuredOutputsVerifyRequest.model_validate(body), config or StructuredOutputsConfig())


# --- (1) compatibility with NeMo Gym's recorded rollouts ------------------------------------------------
ROLLOUTS = _lines("example_rollouts.jsonl")
_DECODER = json.JSONDecoder()


def schema_from_prompt(params: dict[str, Any]) -> dict[str, Any]:
    """The longest JSON object embedded in the prompt; a bare property map becomes an object schema.

    The recording predates the current ``example.jsonl`` and carries no ``schema_str``; its prompts show
    the schema (as a property map) to the model.
    """
    best: tuple[int, dict[str, Any]] | None = None
    for item in params["input"]:
        content = item["content"]
        for start, char in enumerate(content):
            if char != "{":
                continue
            try:
                found, end = _DECODER.raw_decode(content, start)
            except ValueError:
                continue
            if isinstance(found, dict) and (best is None or end - start > best[0]):
                best = (end - start, found)
    assert best is not None
    found = best[1]
    return found if "type" in found else {"type": "object", "properties": found}


def _ours(rollout: dict[str, Any]) -> StructuredOutputsVerifyResponse:
    body = {
        "responses_create_params": rollout["responses_create_params"],
        "response": rollout["response"],
        "schema_str": json.dumps(schema_from_prompt(rollout["responses_create_params"])),
    }
    return verify(StructuredOutputsVerifyRequest.model_validate(body), StructuredOutputsConfig())


@pytest.mark.parametrize("index", range(len(ROLLOUTS)))
def test_recorded_rollout_reward(index: int) -> None:
    rollout = ROLLOUTS[index]
    ours = _ours(rollout)
    assert ours.reward == rollout["reward"]
    text = rollout["response"]["output"][-1]["content"][0]["text"]
    if rollout["reward"] == 0.0:
        # Every recorded failure is a ```json code fence, which json.loads rejects.
        assert text.startswith("```json")
        assert ours.error_type == "parse_error"
        json.loads(text.strip().removeprefix("```json").removesuffix("```"))
    else:
        assert (ours.error_type, ours.error_message) == (None, None)


def test_compatibility_table(capsys: pytest.CaptureFixture[str]) -> None:
    lines = ["structured_outputs: rollout (file order) | ours (error_type) | NeMo Gym"]
    for index, rollout in enumerate(ROLLOUTS):
        ours = _ours(rollout)
        lines.append(f"  {index} | {ours.reward} ({ours.error_type}) | {rollout['reward']}")
        assert ours.reward == rollout["reward"]
    with capsys.disabled():
        print("\n" + "\n".join(lines))


def test_current_example_rows_validate_and_echo_descriptive_fields() -> None:
    rows = _lines("example.jsonl")
    assert len(rows) == 5
    for row in rows:
        body = StructuredOutputsVerifyRequest.model_validate(
            {**row, "response": _response(_call("{}", "other"))}
        )
        result = verify(body, StructuredOutputsConfig())
        assert body.response_mode == "tool_call"
        assert (result.reward, result.error_type) == (0.0, "wrong_tool_name")
        for name in DescriptiveFields.model_fields:
            assert getattr(result, name) == row.get(name)
        assert result.schema_str == row["schema_str"]


# --- (2) tool-call vectors of docs/reference/environments.md §14 -------------------------------------------
RECORD = {"type": "object", "properties": {"name": {"type": "string"}, "age": {"type": "integer"}}}
PAYLOAD = {"name": "Alice", "age": 30}
TOOL_ROW: dict[str, Any] = {"response_mode": "tool_call", "tool_name": "extract_record"}


@pytest.mark.parametrize(
    ("items", "key", "reward", "error_type"),
    [
        ([_call(json.dumps(PAYLOAD))], None, 1.0, None),
        ([_call(json.dumps({"extraction": PAYLOAD}))], "extraction", 1.0, None),
        ([_call(json.dumps({"summary": PAYLOAD}))], "summary", 1.0, None),
        ([_call(json.dumps(PAYLOAD), name="distractor_tool")], None, 0.0, "wrong_tool_name"),
        ([_message(json.dumps(PAYLOAD))], None, 0.0, "missing_tool_call"),
        (
            [_call(json.dumps(PAYLOAD)), _call(json.dumps(PAYLOAD), call_id="c2")],
            None,
            0.0,
            "multiple_tool_calls",
        ),
        ([_call('{"name":')], None, 0.0, "tool_arguments_parse_error"),
        ([_call(json.dumps({"result": PAYLOAD}))], "extraction", 0.0, "missing_tool_payload_key"),
        ([_call(json.dumps({"name": "Alice", "age": "thirty"}))], None, 0.0, "validation_error"),
    ],
)
def test_tool_call_vectors(
    items: list[dict[str, Any]], key: str | None, reward: float, error_type: str | None
) -> None:
    result = _verify(RECORD, *items, **TOOL_ROW, tool_payload_key=key)
    assert (result.reward, result.error_type) == (reward, error_type)
    assert (result.error_message is None) == (error_type is None)


def test_multiple_calls_checked_before_the_name() -> None:
    items = [_call("{}", name="a"), _call("{}", name="b", call_id="c2")]
    assert _verify(RECORD, *items, **TOOL_ROW).error_type == "multiple_tool_calls"


def test_api_error_comes_first_and_is_truncated() -> None:
    body = {
        "responses_create_params": PARAMS,
        "schema_str": json.dumps(RECORD),
        "response": _response(_call(json.dumps(PAYLOAD)), error={"code": "x", "message": "m" * 500}),
        **TOOL_ROW,
    }
    result = verify(StructuredOutputsVerifyRequest.model_validate(body), StructuredOutputsConfig())
    assert (result.reward, result.error_type, result.error_message) == (0.0, "api_error", "m" * 200)


# --- text mode: JSON / YAML / TOML --------------------------------------------------------------------------
NESTED = {
    "type": "object",
    "properties": {
        "name": {"type": "string"},
        "address": {"type": "object", "properties": {"city": {"type": "string"}, "zip": {"type": "integer"}}},
        "tags": {"type": "array", "items": {"type": "string"}},
    },
}
GOOD = {"name": "Ann", "address": {"city": "Oslo", "zip": 150}, "tags": ["a", "b"]}
TOML_GOOD = 'name = "Ann"\ntags = ["a", "b"]\n\n[address]\ncity = "Oslo"\nzip = 150\n'
YAML_GOOD = "name: Ann\naddress:\n  city: Oslo\n  zip: 150\ntags: [a, b]\n"


@pytest.mark.parametrize(
    ("schema_type", "text"), [("json", json.dumps(GOOD)), ("yaml", YAML_GOOD), ("toml", TOML_GOOD)]
)
def test_valid_nested_documents_score_one(schema_type: str, text: str) -> None:
    result = _verify(NESTED, _message(text), schema_type=schema_type)
    assert (result.reward, result.error_type, result.schema_type) == (1.0, None, schema_type)


@pytest.mark.parametrize(
    ("schema_type", "text"),
    [
        ("json", '{"name": "Ann",'),
        ("yaml", "name: [unclosed"),
        ("toml", 'name = "Ann'),
        ("json", "```json\n{}\n```"),
    ],
)
def test_broken_syntax_is_a_parse_error(schema_type: str, text: str) -> None:
    result = _verify(NESTED, _message(text), schema_type=schema_type)
    assert (result.reward, result.error_type) == (0.0, "parse_error")


@pytest.mark.parametrize(
    "document",
    [
        {"name": "Ann", "tags": []},  # missing required (strictify makes every property required)
        {**GOOD, "extra": 1},  # extra top-level field
        {**GOOD, "address": {"city": "Oslo", "zip": 150, "street": "x"}},  # extra nested field
        {**GOOD, "address": {"city": "Oslo", "zip": "150"}},  # wrong type
    ],
)
def test_schema_violations_are_validation_errors(document: dict[str, Any]) -> None:
    result = _verify(NESTED, _message(json.dumps(document)))
    assert (result.reward, result.error_type) == (0.0, "validation_error")
    assert result.error_message is not None
    assert result.error_message.startswith("ValidationError: ")


def test_yaml_unquoted_date_is_not_a_string() -> None:
    schema = {"type": "object", "properties": {"day": {"type": "string"}}}
    assert _verify(schema, _message("day: 2024-01-02"), schema_type="yaml").error_type == "validation_error"
    assert _verify(schema, _message("day: '2024-01-02'"), schema_type="yaml").reward == 1.0


# --- text mode: XML -----------------------------------------------------------------------------------------
XML_SCHEMA = {
    "type": "object",
    "properties": {
        "root": {
            "type": "object",
            "properties": {
                "name": {"type": "string"},
                "age": {"type": "integer"},
                "score": {"type": "number"},
                "active": {"type": "boolean"},
                "tag": {"type": "array", "items": {"type": "string"}},
            },
        }
    },
}
XML_DATA = {"root": {"name": "Alice", "age": 25, "score": 9.5, "active": True, "tag": ["x", "y"]}}


def _xml(data: dict[str, Any]) -> str:
    return str(xmltodict.unparse(data))


@pytest.mark.parametrize(
    ("text", "coerce", "reward"),
    [
        (_xml(XML_DATA), True, 1.0),
        ("<root><name>Alice</name><age>25", True, 0.0),
        (_xml({"root": {k: v for k, v in XML_DATA["root"].items() if k != "age"}}), True, 0.0),
        (_xml({"root": {**XML_DATA["root"], "extra": "1"}}), True, 0.0),
        (_xml(XML_DATA), False, 0.0),
    ],
)
def test_xml_vectors(text: str, coerce: bool, reward: float) -> None:
    config = StructuredOutputsConfig(xml_coerce_types=coerce)
    assert _verify(XML_SCHEMA, _message(text), config=config, schema_type="xml").reward == reward


def test_xml_single_item_and_wrapper_arrays_are_normalised() -> None:
    one_tag = "<root><name></name><age>1</age><score>2</score><active>0</active><tag>x</tag></root>"
    assert _verify(XML_SCHEMA, _message(one_tag), schema_type="xml").reward == 1.0
    schema = {"type": "object", "properties": {"l": {"type": "array", "items": {"type": "integer"}}}}
    wrapped = "<l><item>1</item><item>2</item></l>"
    assert _verify(schema, _message(wrapped), schema_type="xml").reward == 1.0
    assert _verify(schema, _message("<l></l>"), schema_type="xml").reward == 1.0


# --- text mode: CSV -----------------------------------------------------------------------------------------
def _csv_schema(age_type: Any = "integer") -> dict[str, Any]:
    return {
        "type": "array",
        "items": {
            "type": "object",
            "properties": {
                "name": {},
                "age": {"type": age_type},
                "score": {"type": "number"},
                "active": {"type": "boolean"},
            },
        },
    }


@pytest.mark.parametrize(
    ("text", "age_type", "reward", "error_type"),
    [
        ("name,age,score,active\nAlice,30,95.5,true\nBob,25,88.0,false\n", "integer", 1.0, None),
        ("", "integer", 0.0, "empty_response"),
        ("name,age,score\nAlice,30,95.5\n", "integer", 0.0, "validation_error"),
        ("name,age,score,active,x\nAlice,30,95.5,true,1\n", "integer", 0.0, "validation_error"),
        ("name,age,score,active\nAlice,not_a_number,95.5,true\n", "integer", 0.0, "validation_error"),
        ("name,age,score,active\nAlice,,1,0\n", ["integer", "null"], 1.0, None),
        ("name,age,score,active\nAlice,,1,0\n", "integer", 0.0, "validation_error"),
        ("name,age,score,active\nAlice,7,1,1\n", ["null", "boolean", "integer"], 1.0, None),
    ],
)
def test_csv_vectors(text: str, age_type: Any, reward: float, error_type: str | None) -> None:
    result = _verify(_csv_schema(age_type), _message(text), schema_type="csv")
    assert (result.reward, result.error_type) == (reward, error_type)


@pytest.mark.parametrize(
    ("age_type", "reward"), [(["boolean", "integer"], 0.0), (["integer", "boolean"], 1.0)]
)
def test_csv_type_list_first_converting_type_wins(age_type: list[str], reward: float) -> None:
    schema = _csv_schema(age_type)
    schema["items"]["properties"]["age"]["enum"] = [1]  # 1 is valid, True is not (JSON Schema equality)
    result = _verify(schema, _message("name,age,score,active\nAlice,1,1,1\n"), schema_type="csv")
    assert result.reward == reward


# --- strictify and bad input --------------------------------------------------------------------------------
def test_strictify_requires_all_properties_but_skips_lists() -> None:
    schema = {
        "type": "object",
        "properties": {"a": {"type": "object", "properties": {"b": {"type": "string"}}}},
        "anyOf": [{"type": "object", "properties": {"c": {"type": "string"}}}],
    }
    strict = strictify(schema)
    assert strict["required"] == ["a"] and strict["additionalProperties"] is False
    assert strict["properties"]["a"]["required"] == ["b"]
    assert "required" not in strict["anyOf"][0]
    assert "required" not in schema  # the row's schema is not modified


def test_no_assistant_message_is_an_empty_response() -> None:
    result = _verify(NESTED)
    assert (result.reward, result.error_type) == (0.0, "empty_response")
    assert _verify(NESTED, _message("   \n")).error_type == "empty_response"


def test_schema_that_is_not_json_is_a_schema_error() -> None:
    body = {
        "responses_create_params": PARAMS,
        "schema_str": "{not json",
        "response": _response(_message("{}")),
    }
    result = verify(StructuredOutputsVerifyRequest.model_validate(body), StructuredOutputsConfig())
    assert (result.reward, result.error_type) == (0.0, "schema_error")


def test_missing_schema_str_is_a_validation_error_naming_it() -> None:
    with pytest.raises(ValidationError) as info:
        StructuredOutputsVerifyRequest.model_validate(
            {"responses_create_params": PARAMS, "response": _response()}
        )
    assert "schema_str" in {error["loc"][0] for error in info.value.errors()}


def test_unknown_schema_type_is_a_validation_error_naming_it() -> None:
    body = {
        "responses_create_params": PARAMS,
        "schema_str": "{}",
        "response": _response(),
        "schema_type": "ini",
    }
    with pytest.raises(ValidationError) as info:
        StructuredOutputsVerifyRequest.model_validate(body)
    assert "schema_type" in {error["loc"][0] for error in info.value.errors()}


def test_config_yaml_declares_the_server_and_its_agent() -> None:
    root = DATA.parent
    config = yaml.safe_load((root / "configs" / "structured_outputs.yaml").read_text(encoding="utf-8"))
    server = config["structured_outputs"]["resources_servers"]["structured_outputs"]
    assert server["entrypoint"] == "app.py"
    assert server["domain"]
    catalogue = {"entrypoint", "domain", "verified", "description", "value", "verified_url"}
    StructuredOutputsConfig.model_validate(
        {key: value for key, value in server.items() if key not in catalogue}
    )
    agent = config["structured_outputs_v4_simple_agent"]["responses_api_agents"]["simple_agent"]
    assert agent["resources_server"] == {"type": "resources_servers", "name": "structured_outputs"}
    assert agent["model_server"] == {"type": "responses_api_models", "name": "policy_model"}
    assert (root / agent["datasets"][0]["jsonl_fpath"]).is_file()
