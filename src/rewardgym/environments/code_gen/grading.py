"""Grading one solution against its LiveCodeBench ``unit_tests``: drive a sandbox run, compare each output.

Contract (``docs/reference/environments.md`` §12, steps 3–6). :func:`run_unit_tests` returns
``(result, metadata, seconds)``:

- ``result`` holds ``True`` per passed test, in order, and stops at the first failure, which is ``-2``
  (wrong answer), ``-3`` (time limit) or ``-4`` (runtime error). A compilation failure, or an exception while
  comparing, gives ``[-4]`` with ``metadata = {"error_code": -4, "error_message": "Error during testing:
  <exc>"}``. A run that exceeds ``(timeout + 1) × n + 5`` seconds, or whose process dies before reporting
  every test, or that sends more output than the sandbox reads (a report line over ``max_output_mb``, more
than ``max_output_mb`` on stderr: "Output limit: …"), gives ``[-1] * n`` with ``{"error_code": -1,
"error_message": <reason>}`` (NeMo Gym: ``null``).
- Failure metadata: ``output`` (wrong answers), ``inputs``, ``expected``, ``error_code``, ``error_message``
  and, for ``-3``/``-4``, ``error`` (the exception repr) and, for ``-4``, ``traceback``; values are cut with
  :func:`~.lcb_execution.truncate`. Success metadata: ``{"execution time": <sum of test seconds>}``.
- Comparison happens here, in the server, so expected outputs never reach the untrusted process:
  stdin/stdout mode compares the ``strip()``-ped outputs line by line (each line stripped; equal strings, or
  equal lists of ``Decimal`` tokens); call-based mode passes when ``pred == gt`` (top-level tuples become
  lists), or ``json.dumps`` of both are equal, or ``numpy.allclose(float(pred), float(gt))``.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import json
import time
import zlib
from decimal import Decimal
from typing import Any

import numpy as np
from pydantic import BaseModel, ConfigDict, model_validator

from rewardgym.environments.code_gen.lcb_execution import truncate
from rewardgym.environments.code_gen.sandbox import CodeSandbox, big_ints

Verdict = bool | int
Outcome = tuple[list[Verdict], dict[str, Any] | None, float]


class UnitTests(BaseModel):
    """LiveCodeBench tests: ``inputs[i]`` must produce ``outputs[i]``; ``fn_name`` selects call-based mode.

    A ``{"packed": <base64 of zlib-compressed JSON {inputs, outputs}>, "fn_name": ...}`` object (NeMo Gym's
    compressed form) is unpacked on validation.
    """

    model_config = ConfigDict(extra="ignore")

    inputs: list[str]
    """Standard input of each test, or (call-based) one JSON argument per line."""

    outputs: list[str]
    """Expected standard output of each test, or (call-based) the JSON return value."""

    fn_name: str | None = None
    """Function (or ``Solution`` method) to call; ``None`` means stdin/stdout tests."""

    @model_validator(mode="before")
    @classmethod
    def _unpack(cls, data: Any) -> Any:
        if isinstance(data, dict) and "packed" in data:
            try:
                unpacked = json.loads(zlib.decompress(base64.b64decode(data["packed"])))
            except (ValueError, TypeError, zlib.error) as exc:
                raise ValueError(f"packed unit tests cannot be decoded: {exc}") from exc
            if not isinstance(unpacked, dict):
                raise ValueError("packed unit tests must decode to an object with inputs and outputs")
            return {
                "inputs": unpacked.get("inputs"),
                "outputs": unpacked.get("outputs"),
                "fn_name": data.get("fn_name"),
            }
        return data


def stripped_lines(text: str) -> list[str]:
    """``text.strip()`` split on ``"\\n"``, each line stripped."""
    return [line.strip() for line in text.strip().split("\n")]


def _decimals(line: str) -> list[Decimal] | None:
    try:
        return [Decimal(token) for token in line.split()]
    except Exception:
        return None


def grade_stdio(prediction: str, expected: str, inputs: str) -> tuple[Verdict, dict[str, Any] | None]:
    """Compare a printed output with the expected one (stdin/stdout mode)."""
    pred_lines, gt_lines = stripped_lines(prediction), stripped_lines(expected)
    wrong: dict[str, Any] = {
        "output": truncate(prediction),
        "inputs": truncate(inputs),
        "expected": truncate(expected),
        "error_code": -2,
    }
    if len(pred_lines) != len(gt_lines):
        return -2, wrong | {"error_message": "Wrong answer: mismatched output length"}
    for output_line_idx, (pred, gt) in enumerate(zip(pred_lines, gt_lines, strict=True)):
        if pred == gt:
            continue
        pred_numbers, gt_numbers = _decimals(pred), _decimals(gt)
        if pred_numbers is None or gt_numbers is None or pred_numbers != gt_numbers:
            message = f"Wrong answer at {output_line_idx=}: {truncate(pred)} != {truncate(gt)}"
            return -2, wrong | {"error_message": message}
    return True, None


class _Opaque:
    """A value that equals nothing (a prediction of a type whose equality cannot be replayed here)."""

    def __eq__(self, other: object) -> bool:
        return False

    __hash__ = object.__hash__


def decode(node: Any) -> Any:
    """Rebuild a prediction from :func:`~.lcb_execution.encode`'s JSON form."""
    if isinstance(node, list):
        return [decode(item) for item in node]
    if not isinstance(node, dict):
        return node
    kind, items = node.get("$"), node.get("v")
    try:
        if kind == "tuple":
            return tuple(decode(item) for item in items)  # type: ignore[union-attr]
        if kind in ("set", "frozenset"):
            members = (decode(item) for item in items)  # type: ignore[union-attr]
            return set(members) if kind == "set" else frozenset(members)
        if kind == "dict":
            return {decode(k): decode(v) for k, v in items}  # type: ignore[union-attr]
    except (TypeError, ValueError):
        pass
    return _Opaque()


def grade_call(report: dict[str, Any], expected: Any) -> bool:
    """Whether a call-based prediction report matches the expected (JSON-decoded) value."""
    if decode(report.get("value")) == expected:
        return True
    as_json = report.get("json")
    if isinstance(as_json, str) and as_json == json.dumps(expected):
        return True
    as_float = report.get("float")
    if isinstance(as_float, int | float) and not isinstance(as_float, bool):
        with contextlib.suppress(TypeError, ValueError, OverflowError):
            return bool(np.allclose(float(as_float), float(expected)))
    return False


class _Tests:
    """The expected side of one run: parsed lazily, in the parent only."""

    def __init__(self, tests: UnitTests) -> None:
        self.tests = tests
        self.call_based = tests.fn_name is not None
        self.expected: list[Any] = list(tests.outputs)

    def parse_expected(self) -> None:
        """Call-based mode: decode every expected output (raises like NeMo Gym's grader would)."""
        if self.call_based:
            self.expected = [json.loads(text) for text in self.tests.outputs]

    def shown_inputs(self, index: int) -> str:
        text = self.tests.inputs[index]
        return truncate([json.loads(line) for line in text.split("\n")] if self.call_based else text)

    def grade(self, index: int, report: dict[str, Any]) -> tuple[Verdict, dict[str, Any] | None]:
        """The verdict and failure metadata of test ``index`` from its report (``{}``: a corrupt report)."""
        status = report.get("status")
        expected = self.expected[index]
        shown = {"inputs": self.shown_inputs(index), "expected": truncate(expected)}
        if status == "ok" and not self.call_based and isinstance(report.get("output"), str):
            return grade_stdio(report["output"], expected, self.tests.inputs[index])
        if status == "ok" and self.call_based:
            if grade_call(report, expected):
                return True, None
            output = str(report.get("text"))
            return -2, {"output": output, **shown, "error_code": -2, "error_message": "Wrong Answer"}
        if status == "output_limit":
            message = "Wrong answer: output larger than the sandbox limit (max_output_mb)"
            return -2, {"output": "", **shown, "error_code": -2, "error_message": message}
        if status == "timeout":
            error = str(report.get("error"))
            return -3, {"error": error, "error_code": -3, "error_message": "Time Limit Exceeded", **shown}
        error = str(report.get("error", "the solution corrupted the sandbox report"))
        trace = str(report.get("traceback", ""))
        return -4, {
            "error": error,
            "error_code": -4,
            "error_message": "Runtime Error",
            **shown,
            "traceback": trace,
        }


def _testing_error(exc: BaseException, started: float) -> Outcome:
    metadata = {"error_code": -4, "error_message": f"Error during testing: {exc}"}
    return [-4], metadata, time.monotonic() - started


async def run_unit_tests(code: str, tests: UnitTests, sandbox: CodeSandbox) -> Outcome:
    """Run ``code`` against ``tests`` in ``sandbox`` and grade it (see the module docstring)."""
    n = len(tests.inputs)
    expected = _Tests(tests)
    results: list[Verdict] = []
    seconds_total = 0.0
    ready = False
    wall = (sandbox.config.unit_test_timeout_secs + 1) * n + 5
    async with sandbox.run(code, tests.fn_name, tests.inputs) as run:
        try:
            async with asyncio.timeout(wall):
                async for event in run.events():
                    kind = event.get("event")
                    if kind == "compile_error" and not ready:
                        return _testing_error(Exception(event.get("error")), run.started)
                    if kind == "ready" and not ready:
                        ready = True
                        try:
                            with big_ints():
                                expected.parse_expected()
                        except Exception as exc:
                            return _testing_error(exc, run.started)
                        continue
                    if kind == "overflow":  # the run was killed: it sent more than the sandbox reads
                        reason = str(event.get("reason"))
                        return (
                            [-1] * n,
                            {"error_code": -1, "error_message": reason},
                            time.monotonic() - run.started,
                        )
                    if kind == "done" and ready and len(results) == n:
                        return results, {"execution time": seconds_total}, time.monotonic() - run.started
                    # Anything but the next test's report was written by the solution itself: a runtime error.
                    is_next = ready and kind == "test" and event.get("index") == len(results) < n
                    try:
                        with big_ints():
                            verdict, metadata = expected.grade(
                                min(len(results), n - 1), event if is_next else {}
                            )
                    except Exception as exc:
                        return _testing_error(exc, run.started)
                    results.append(verdict)
                    if verdict is not True:
                        return results, metadata, time.monotonic() - run.started
                    seconds = event.get("seconds")
                    seconds_total += float(seconds) if isinstance(seconds, int | float) else 0.0
        except TimeoutError:
            reason = f"Global timeout: the run exceeded {wall:g} seconds and was killed"
            return [-1] * n, {"error_code": -1, "error_message": reason}, time.monotonic() - run.started
        reason = f"Sandbox process ended before reporting every test ({await run.exit_reason()})"
        return [-1] * n, {"error_code": -1, "error_message": reason}, time.monotonic() - run.started
