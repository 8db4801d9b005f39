"""Verifier cases: an environment's ``/verify`` behaviour as data, run by one generic test.

Each environment folder may keep a ``verifier_cases.jsonl`` beside its ``app.py``; every line is one case::

    {"case": "boxed letter", "row": {...}, "answer": "\\\\boxed{B}", "expect": {"reward": 1.0}}
    {"case": "no reply", "row": {...}, "response": {"output": []}, "expect": {"reward": 0.0}}
    {"case": "no gold", "row": {...}, "answer": "x", "status": 422, "error_loc": ["body", "expected_answer"]}
    {"case": "rule", "config": {"grading_rule": "seq_match"}, "row": {...}, "answer": "hi", "expect": {...}}

- ``row``: the dataset row (``responses_create_params`` and the environment's own fields);
- the model's reply: ``answer`` (the text of one assistant message) or ``response`` (a Responses API body,
  ``id``/``created_at``/``model`` filled in when absent); neither: the row is posted as it is;
- ``config``: fields of the environment's config block for this case (a server per distinct config);
- ``status`` (default 200); with 200, ``expect`` holds fields the answer must carry with these values;
  otherwise ``error_loc`` (optional) must be one of the ``detail[].loc`` of the error body and ``error_says``
  (optional) part of its ``error.message``.

:func:`load_cases` reads a file (a bad line is a :class:`~rewardgym.errors.DataError` naming ``file:line``);
:func:`check_cases` serves the environment on a real 127.0.0.1 port per config and returns the mismatches.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import orjson
from pydantic import BaseModel, ConfigDict, ValidationError

from rewardgym.errors import DataError
from rewardgym.launch.serve import ThreadedServer
from rewardgym.testing.client import call
from rewardgym.testing.items import message, response

CASES_FILE = "verifier_cases.jsonl"
"""The cases' file name in an environment folder."""


class VerifierCase(BaseModel):
    """One line of ``verifier_cases.jsonl`` (module docstring)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    case: str
    """What the case shows (named in a mismatch)."""
    row: dict[str, Any]
    """The dataset row."""
    answer: str | None = None
    """The model's reply as the text of one assistant message."""
    response: dict[str, Any] | None = None
    """The model's reply as a Responses API body (instead of ``answer``)."""
    config: dict[str, Any] = {}
    """Config fields of the environment for this case."""
    status: int = 200
    """The HTTP status ``/verify`` must answer."""
    expect: dict[str, Any] = {}
    """Fields of a 200 answer and their values."""
    error_loc: list[str | int] | None = None
    """With an error status: a ``loc`` the error's ``detail`` must name."""
    error_says: str | None = None
    """With an error status: text the error's ``error.message`` must contain."""

    def body(self) -> dict[str, Any]:
        """The ``/verify`` request of the case."""
        if self.answer is not None:
            return self.row | {"response": response([message(self.answer)])}
        if self.response is not None:
            return self.row | {"response": response([]) | self.response}
        return dict(self.row)


def load_cases(path: Path) -> list[VerifierCase]:
    """The cases of ``path``; a bad line is a DataError naming ``file:line``."""
    cases = []
    for number, line in enumerate(path.read_bytes().splitlines(), start=1):
        if not line.strip():
            continue
        try:
            cases.append(VerifierCase.model_validate(orjson.loads(line)))
        except (orjson.JSONDecodeError, ValidationError) as exc:
            first = str(exc).splitlines()[0 if isinstance(exc, orjson.JSONDecodeError) else 1 :][:2]
            raise DataError(f"{path}:{number}: not a verifier case ({' '.join(first).strip()})") from None
    return cases


def _mismatch(case: VerifierCase, status: int, answer: Any) -> str | None:
    if status != case.status:
        return f"{case.case}: HTTP {status}, expected {case.status}: {str(answer)[:300]}"
    if status == 200:
        wrong = {k: answer.get(k) for k, v in case.expect.items() if answer.get(k, ...) != v}
        return f"{case.case}: {wrong} where {case.expect} was expected" if wrong else None
    if case.error_loc is not None:
        locs = [entry.get("loc") for entry in answer.get("detail") or []]
        if case.error_loc not in locs:
            return f"{case.case}: error names {locs}, not {case.error_loc}"
    message = str((answer.get("error") or {}).get("message", ""))
    if case.error_says is not None and case.error_says not in message:
        return f"{case.case}: error message {message[:200]!r} does not say {case.error_says!r}"
    return None


def check_cases(make_server: Callable[[dict[str, Any]], Any], cases: Sequence[VerifierCase]) -> list[str]:
    """Serve ``make_server(config)`` on a real port for each distinct case config, post every case to
    ``/verify``; returns the mismatches (empty: every case holds)."""
    problems: list[str] = []
    configs = {orjson.dumps(case.config, option=orjson.OPT_SORT_KEYS): case.config for case in cases}
    for key, config in configs.items():
        with ThreadedServer(make_server(config)) as server:
            for case in cases:
                if orjson.dumps(case.config, option=orjson.OPT_SORT_KEYS) != key:
                    continue
                reply = call(server.url, "POST", "/verify", json=case.body())
                problem = _mismatch(case, reply.status, reply.json())
                if problem is not None:
                    problems.append(problem)
    return problems
