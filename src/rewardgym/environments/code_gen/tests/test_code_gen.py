"""code_gen: NeMo Gym compatibility on the recorded rollouts, reference vectors, LiveCodeBench semantics,
bad input. Every solution really runs in the sandbox."""

from __future__ import annotations

import base64
import json
import zlib
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from rewardgym.environments.code_gen.grading import UnitTests, decode, grade_call, grade_stdio
from rewardgym.environments.code_gen.lcb_execution import PRELUDE, encode, stdio_program, truncate
from rewardgym.environments.code_gen.tests.helpers import fenced, make_request
from rewardgym.environments.code_gen.verifier import (
    CodeGenConfig,
    CodeGenVerifyRequest,
    extract_code,
    has_reasoning_format_violation,
    verify,
)
from rewardgym.protocol import dump

DATA = Path(__file__).resolve().parents[1] / "data"
# Columns added by newer NeMo Gym versions than the one that recorded the rollouts (see README).
NEWER_KEYS = {"unit_tests_time_taken", "reasoning_format_violation_rate", "difficulty"}


def _lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def _prompt(row: dict[str, Any]) -> str:
    return str(row["responses_create_params"]["input"][0]["content"])


async def test_compatibility_with_recorded_rollouts(config: CodeGenConfig) -> None:
    rows = _lines(DATA / "example.jsonl")
    by_prompt = {_prompt(row): (i, row) for i, row in enumerate(rows)}
    table: list[str] = []
    seen = []
    for rollout in _lines(DATA / "example_rollouts.jsonl"):
        index, row = by_prompt[_prompt(rollout)]
        seen.append(index)
        body = CodeGenVerifyRequest.model_validate(row | {"response": rollout["response"]})
        result = dump(await verify(body, config))
        assert set(result) == set(rollout) | NEWER_KEYS
        for key in ("reward", "result", "extracted_model_output", "extracted_model_code"):
            assert result[key] == rollout[key], (index, key)
        if rollout["reward"] == 1.0:
            assert set(result["metadata"]) == set(rollout["metadata"]) == {"execution time"}
            assert isinstance(result["metadata"]["execution time"], float)
        else:
            assert result["metadata"] == rollout["metadata"], index
        assert result["reasoning_format_violation_rate"] == 0.0
        assert result["difficulty"] is None
        assert isinstance(result["unit_tests_time_taken"], float)

        def show(r: dict[str, Any]) -> str:
            codes = r["result"]
            return f"{r['reward']}, {codes if len(codes) <= 3 else f'{len(codes)} x True'}"

        table.append(f"{index} | {show(result)} | {show(rollout)}")
    assert sorted(seen) == [0, 1, 2, 3, 4]
    print("\n".join(["code_gen row | ours reward, result | NeMo Gym reward, result", *sorted(table)]))


async def test_vector_square(config: CodeGenConfig) -> None:
    result = await verify(
        make_request(fenced("n=int(input())\nprint(n*n)"), ["2\n", "5\n"], ["4", "25"]), config
    )
    assert (result.reward, result.result) == (1.0, [True, True])
    assert result.metadata is not None and set(result.metadata) == {"execution time"}


async def test_vector_wrong_answer(config: CodeGenConfig) -> None:
    result = await verify(make_request(fenced("n=int(input())\nprint(n+1)"), ["3\n"], ["9"]), config)
    assert (result.reward, result.result) == (0.0, [-2])
    assert result.metadata == {
        "output": "4\n",
        "inputs": "3\n",
        "expected": "9",
        "error_code": -2,
        "error_message": "Wrong answer at output_line_idx=0: 4 != 9",
    }


async def test_vector_unfenced(config: CodeGenConfig) -> None:
    text = "n=int(input())\nprint(n*n)"
    result = await verify(make_request(text, ["2\n"], ["4"]), config)
    assert (result.reward, result.extracted_model_output, result.extracted_model_code) == (0.0, text, None)
    assert result.result is None and result.metadata is None


async def test_vector_syntax_error(config: CodeGenConfig) -> None:
    code = "print('hello'  # Missing closing parenthesis"
    result = await verify(make_request(fenced(code), ["\n"], ["hello"]), config)
    assert (result.reward, result.result) == (0.0, [-4])
    assert result.metadata == {
        "error_code": -4,
        "error_message": "Error during testing: '(' was never closed (<string>, line 1)",
    }


async def test_vector_runtime_error(config: CodeGenConfig) -> None:
    result = await verify(make_request(fenced("n=int(input())\nprint(n/0)"), ["5\n"], ["error"]), config)
    assert (result.reward, result.result) == (0.0, [-4])
    assert result.metadata is not None
    assert result.metadata["error_message"] == "Runtime Error"
    assert result.metadata["error"] == "ZeroDivisionError('division by zero')"
    assert "ZeroDivisionError" in result.metadata["traceback"]


def test_vector_missing_response_is_a_validation_error() -> None:
    data = make_request("x", [], []).model_dump(mode="json")
    del data["response"]
    with pytest.raises(ValidationError) as info:
        CodeGenVerifyRequest.model_validate(data)
    assert ("response",) in [e["loc"] for e in info.value.errors()]


@pytest.mark.parametrize(
    ("loc", "data_change"),
    [
        (("verifier_metadata",), lambda d: d.pop("verifier_metadata")),
        (("verifier_metadata", "unit_tests"), lambda d: d["verifier_metadata"].pop("unit_tests")),
        (
            ("verifier_metadata", "unit_tests", "outputs"),
            lambda d: d["verifier_metadata"]["unit_tests"].pop("outputs"),
        ),
    ],
)
def test_missing_row_fields_are_validation_errors(loc: tuple[str, ...], data_change: Any) -> None:
    data = make_request("x", ["1"], ["1"]).model_dump(mode="json")
    data_change(data)
    with pytest.raises(ValidationError) as info:
        CodeGenVerifyRequest.model_validate(data)
    assert loc in [e["loc"] for e in info.value.errors()]


@pytest.mark.parametrize("text", [None, "", "  \n "])
async def test_no_assistant_text_scores_zero_without_running(text: str | None, config: CodeGenConfig) -> None:
    result = await verify(make_request(text, ["1"], ["1"], difficulty="easy"), config)
    assert result.reward == 0.0
    assert (result.extracted_model_output, result.extracted_model_code, result.result, result.metadata) == (
        None,
        None,
        None,
        None,
    )
    assert (result.difficulty, result.reasoning_format_violation_rate) == ("easy", 0.0)


def test_extract_code_takes_the_last_fenced_block() -> None:
    text = "```python\nfirst()\n```\ntext\n```py\nsecond()\nthird()\n``` trailing"
    assert extract_code(text) == "second()\nthird()"
    assert extract_code("```\nonly one fence") == ""
    assert extract_code("inline ```x``` then\n```\ny\n```") == "y"


async def test_empty_fenced_block_is_not_run(config: CodeGenConfig) -> None:
    result = await verify(make_request("```python\n```", ["1"], ["1"]), config)
    assert (result.reward, result.extracted_model_code, result.result) == (0.0, None, None)


async def test_no_tests_scores_one(config: CodeGenConfig) -> None:
    result = await verify(make_request(fenced("print(1)"), [], []), config)
    assert (result.reward, result.result) == (1.0, [])


async def test_stdin_mocking(config: CodeGenConfig) -> None:
    code = "\n".join(
        [
            "import sys",
            "first = sys.stdin.readline()",  # StringIO semantics: the newline is kept (see README)
            "print(repr(first))",
            "print(input())",
            "rest = [line.rstrip() for line in sys.stdin]",
            "print(rest)",
            "print(len(sys.stdin.read()), sys.stdin.readlines()[:2], sys.stdin.buffer.read()[:1])",
            # The prelude's `from sys import *` binds the original stdin, whose readline was patched.
            "print(repr(stdin.readline()), repr(sys.__stdin__.readline()))",
        ]
    )
    expected = "'a b\\n'\nc\n['d', 'e']\n10 ['a b', 'c'] b'a'\n'a b' 'c'"
    result = await verify(make_request(fenced(code), ["a b\nc\nd\ne\n"], [expected]), config)
    assert result.result == [True], result.metadata


async def test_main_guard_and_exit(config: CodeGenConfig) -> None:
    code = (
        "def main():\n    print(int(input()) + 1)\n    exit()\n    print('never')\n\n"
        "if __name__ == '__main__':\n    main()"
    )
    result = await verify(make_request(fenced(code), ["1\n", "41\n"], ["2", "42"]), config)
    assert (result.reward, result.result) == (1.0, [True, True]), result.metadata


@pytest.mark.parametrize(
    ("printed", "expected", "passes"),
    [
        ("1.0 2", "1 2.00", True),
        ("1e3", "1000", True),
        ("  x  \n\n", "x", True),
        ("a\nb", "a b", False),
        ("0.1", "0.10000001", False),
        ("yes", "YES", False),
    ],
)
def test_stdio_comparison(printed: str, expected: str, passes: bool) -> None:
    verdict, metadata = grade_stdio(printed, expected, "in")
    assert (verdict is True) is passes
    if not passes:
        assert metadata is not None and metadata["error_code"] == -2


def test_truncate_matches_livecodebench() -> None:
    assert truncate("x" * 300) == "x" * 300
    text = "a" * 150 + "b" * 151
    assert truncate(text) == "a" * 150 + "...(truncated) ..." + "b" * 150
    assert truncate([1, 2]) == "[1, 2]"


def test_prelude_is_the_livecodebench_one() -> None:
    lines = PRELUDE.splitlines()
    assert len(lines) == 35 and lines[0] == "from string import *" and lines[17] == "from typing import *"
    assert lines[18] == "import string" and lines[-2] == "import json"
    assert lines[-1] == "sys.setrecursionlimit(50000)"
    wrapped = stdio_program("import os\nx = 1\nprint(x)")
    assert wrapped == PRELUDE + "\nimport os\ndef wrapped_function():\n    x = 1\n    print(x)"


@pytest.mark.parametrize(
    ("value", "expected", "passes"),
    [
        ((1, 2), [1, 2], True),
        ([(1, 2)], [[1, 2]], True),  # nested tuples pass through json.dumps equality
        ({1: "a"}, {"1": "a"}, True),  # json.dumps turns int keys into strings
        (0.1 + 0.2, 0.3, True),  # numpy.allclose
        ("2.0", 2, True),  # float("2.0") is close to 2
        (True, 1, True),  # Python equality
        ({1, 2}, [1, 2], False),
        ([1, 2], [2, 1], False),
        (None, "null", False),
    ],
)
def test_call_comparison(value: Any, expected: Any, passes: bool) -> None:
    if isinstance(value, tuple):
        value = list(value)  # what the child does with a top-level tuple
    try:
        as_json: str | None = json.dumps(value)
    except TypeError:
        as_json = None
    try:
        as_float: float | None = float(value)
    except (TypeError, ValueError):
        as_float = None
    report = {"value": json.loads(json.dumps(encode(value))), "json": as_json, "float": as_float}
    assert grade_call(report, expected) is passes


def test_encoding_round_trip_keeps_equality() -> None:
    value = {"k": [(1, 2.5), frozenset({3}), {4}, None, True, "s"]}
    assert decode(json.loads(json.dumps(encode(value)))) == value

    class Weird:
        def __eq__(self, other: object) -> bool:
            return True

        __hash__ = object.__hash__

    assert decode(json.loads(json.dumps(encode(Weird())))) != Weird()


async def test_call_based_solution_class(config: CodeGenConfig) -> None:
    code = (
        "class Solution:\n"
        "    def twoSum(self, nums: List[int], target: int) -> List[int]:\n"
        "        seen = {}\n"
        "        for i, x in enumerate(nums):\n"
        "            if target - x in seen:\n"
        "                return (seen[target - x], i)\n"
        "            seen[x] = i\n"
    )
    tests = (["[2, 7, 11, 15]\n9", "[3, 2, 4]\n6", "[3, 3]\n6"], ["[0, 1]", "[1, 2]", "[0, 1]"])
    result = await verify(make_request(fenced(code), *tests, fn_name="twoSum"), config)
    assert (result.reward, result.result) == (1.0, [True, True, True]), result.metadata


async def test_call_based_wrong_answer_and_big_ints(config: CodeGenConfig) -> None:
    code = "def power(e):\n    return 10 ** e"
    big = "1" + "0" * 5000
    result = await verify(make_request(fenced(code), ["5000", "2"], [big, "99"], fn_name="power"), config)
    assert result.result == [True, -2]
    assert result.metadata == {
        "output": "100",
        "inputs": "[2]",
        "expected": "99",
        "error_code": -2,
        "error_message": "Wrong Answer",
    }


async def test_call_based_missing_function(config: CodeGenConfig) -> None:
    result = await verify(
        make_request(fenced("def other():\n    return 1"), ["1"], ["1"], fn_name="f"), config
    )
    assert (result.result, result.metadata) == (
        [-4],
        {
            "error_code": -4,
            "error_message": "Error during testing: cannot unpack non-iterable NoneType object",
        },
    )


async def test_reliability_guard_is_applied(config: CodeGenConfig) -> None:
    code = "import os, subprocess\nprint(os.system is None, subprocess.Popen is None, os.getcwd is None)"
    result = await verify(make_request(fenced(code), ["\n"], ["True True True"]), config)
    assert result.result == [True], result.metadata


async def test_reasoning_format_penalty(config: CodeGenConfig) -> None:
    penalised = config.model_copy(update={"reasoning_format_penalty": -0.5})
    good = fenced("print(int(input()) * 2)")
    clean = await verify(make_request(good, ["2"], ["4"], reasoning=["<think>fine</think>"]), penalised)
    assert (clean.reward, clean.reasoning_format_violation_rate) == (1.0, 0.0)
    leaked = await verify(make_request("<think>hmm</think>\n" + good, ["2"], ["4"]), penalised)
    assert (leaked.reward, leaked.reasoning_format_violation_rate, leaked.result) == (-0.5, 1.0, [True])
    doubled = make_request(good, ["2"], ["4"], reasoning=["<think>a", "</think><think>b</think>"])
    assert has_reasoning_format_violation(doubled.response)
    assert (await verify(doubled, penalised)).reward == -0.5


def test_packed_unit_tests_are_unpacked() -> None:
    packed = base64.b64encode(
        zlib.compress(json.dumps({"inputs": ["1"], "outputs": ["2"]}).encode())
    ).decode()
    tests = UnitTests.model_validate({"packed": packed, "fn_name": None})
    assert (tests.inputs, tests.outputs, tests.fn_name) == (["1"], ["2"], None)
    with pytest.raises(ValidationError) as info:
        UnitTests.model_validate({"packed": "not base64!"})
    assert "packed unit tests cannot be decoded" in str(info.value)


async def test_difficulty_is_echoed(config: CodeGenConfig) -> None:
    result = await verify(make_request(fenced("print(1)"), ["\n"], ["1"], difficulty="hard"), config)
    assert (result.reward, result.difficulty) == (1.0, "hard")


def test_yaml_config_validates() -> None:
    from omegaconf import OmegaConf

    document = OmegaConf.to_container(
        OmegaConf.load(Path(__file__).resolve().parents[1] / "configs" / "code_gen.yaml")
    )
    assert isinstance(document, dict)
    block = document["code_gen"]["resources_servers"]["code_gen"]
    config = CodeGenConfig.model_validate(block)
    assert (config.unit_test_timeout_secs, config.require_network_isolation, config.memory_limit_mb) == (
        10,
        True,
        2048,
    )
    agent = document["code_gen_simple_agent"]["responses_api_agents"]["simple_agent"]
    assert agent["resources_server"] == {"type": "resources_servers", "name": "code_gen"}
    assert CodeGenConfig.model_validate({"num_processes": 8}).max_concurrent_executions == 8
    with pytest.raises(ValidationError):
        CodeGenConfig.model_validate({"unit_test_timeout_secs": 0})
