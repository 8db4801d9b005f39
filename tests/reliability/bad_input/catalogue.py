"""The bad-input catalogue: cases kept as data (``cases/*.yaml``), and how one case is run and judged.

A case is either a ``gym`` command line run as a real process in a fresh folder (``run``) or one HTTP request
to a server of the in-process stack (``http``). Each names the ``message`` fragment and the ``where``
fragment (``file:line`` or the field) that its one error message must hold, and the exit code or 4xx status.

:func:`run_cli_case` / :func:`run_http_case` return the list of failed checks (never raise on a product
failure), so :func:`judge` can tell a known product bug (``cases/known_bugs.yaml``) from a new one:

- ``exit`` / ``status``: the expected non-zero exit code / the expected 4xx status;
- ``message`` / ``where``: both fragments in the ``Error:`` message (CLI) or in ``error.message`` (HTTP);
- ``traceback``: no traceback printed or served;
- ``previous_outputs``: every file present before the command (inputs, an earlier run's outputs) is
  byte-identical afterwards;
- ``half_written``: no temp file left, and every new ``.jsonl``/``.json`` file parses completely;
- ``healthy``: the server still answers ``GET /`` after the bad request.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import orjson
import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from rewardgym.errors import DataError
from rewardgym.io.jsonl import read_jsonl
from tests.conftest import REPO_ROOT
from tests.stubs.client import call

HERE = Path(__file__).resolve().parent
CASES_DIR = HERE / "cases"
KNOWN_BUGS_FILE = CASES_DIR / "known_bugs.yaml"

Check = Literal[
    "exit", "status", "message", "where", "traceback", "previous_outputs", "half_written", "healthy"
]
ServerName = Literal["policy_model", "mcqa", "tool_env", "session_env", "mcqa_simple_agent", "head"]
_STRICT = ConfigDict(extra="forbid")


class Edit(BaseModel):
    """A change to a file of the earlier run, made before the snapshot of "previous outputs"."""

    model_config = _STRICT
    file: str
    """Path relative to the case folder."""
    line: int | None = Field(None, ge=1)
    """Replace this line (1-based) with ``text``."""
    text: str | None = None
    append: str | None = None
    """Append these bytes (UTF-8) to the file."""

    @model_validator(mode="after")
    def _one_kind(self) -> Edit:
        if (self.line is None) == (self.append is None) or (self.line is not None and self.text is None):
            raise ValueError("an edit is either {file, line, text} or {file, append}")
        return self


class HttpRequest(BaseModel):
    """One request to a server of the in-process stack."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True)
    server: ServerName
    method: str = "POST"
    path: str
    json_body: Any = Field(None, alias="json")
    raw: str | None = None
    """A raw body (not JSON-encoded), for bodies that are not valid JSON."""
    headers: dict[str, str] = Field(default_factory=dict)


class Case(BaseModel):
    """One catalogue entry (see the module docstring)."""

    model_config = _STRICT
    id: str
    about: str
    """What the case checks, in words."""
    run: list[str] | None = None
    """The gym command line (``{head}``, ``{agent}``, ``{free_port}`` are filled in)."""
    http: HttpRequest | None = None
    files: dict[str, str] = Field(default_factory=dict)
    """Files to create in the case folder (path → UTF-8 text)."""
    files_hex: dict[str, str] = Field(default_factory=dict)
    """Files given as hex bytes (e.g. invalid UTF-8)."""
    previous_run: bool = False
    """Start from a copy of a finished run (in.jsonl + out/, see the conftest)."""
    edits: list[Edit] = Field(default_factory=list)
    exit: int | None = None
    status: int | None = None
    message: str
    where: str
    """The file:line or field the message must name."""
    known_bug: str | None = None

    @model_validator(mode="after")
    def _consistent(self) -> Case:
        if (self.run is None) == (self.http is None):
            raise ValueError("a case has exactly one of 'run' and 'http'")
        if self.run is not None and not self.exit:
            raise ValueError("a 'run' case needs a non-zero 'exit'")
        if self.http is not None and not (self.status is not None and 400 <= self.status < 500):
            raise ValueError("an 'http' case needs a 4xx 'status'")
        if self.edits and not self.previous_run:
            raise ValueError("'edits' change files of the previous run: set previous_run: true")
        return self


class KnownBug(BaseModel):
    model_config = _STRICT
    owner: str
    checks: list[Check]
    description: str


def _load_yaml(path: Path) -> Any:
    try:
        return yaml.safe_load(path.read_text(encoding="utf-8"))
    except yaml.YAMLError as exc:
        raise DataError(f"{path}: malformed YAML ({exc})") from None


def load_known_bugs() -> dict[str, KnownBug]:
    raw = _load_yaml(KNOWN_BUGS_FILE)
    return {name: KnownBug.model_validate(entry) for name, entry in raw.items()}


def load_cases() -> list[Case]:
    """Every case of ``cases/*.yaml`` (ids unique, known bugs declared); errors name file and entry."""
    bugs = load_known_bugs()
    cases: list[Case] = []
    for path in sorted(CASES_DIR.glob("*.yaml")):
        if path == KNOWN_BUGS_FILE:
            continue
        for index, entry in enumerate(_load_yaml(path) or []):
            try:
                case = Case.model_validate(entry)
            except ValidationError as exc:
                raise DataError(f"{path.name}[{index}]: invalid case: {exc}") from None
            if case.known_bug is not None and case.known_bug not in bugs:
                raise DataError(f"{path.name}[{index}] ({case.id}): unknown known_bug {case.known_bug!r}")
            cases.append(case)
    ids = [c.id for c in cases]
    duplicates = sorted({i for i in ids if ids.count(i) > 1})
    if duplicates:
        raise DataError(f"duplicate case ids: {duplicates}")
    return cases


@dataclass(frozen=True)
class Failure:
    check: Check
    detail: str

    def __str__(self) -> str:
        return f"[{self.check}] {self.detail}"


# ----------------------------------------------------------------------------------------- preparing
def prepare_folder(case: Case, folder: Path, previous_run: Path | None) -> None:
    """Lay out the case folder: the earlier run (if any), the case's files, then the edits."""
    if case.previous_run:
        assert previous_run is not None
        shutil.copytree(previous_run, folder, dirs_exist_ok=True)
    for name, text in case.files.items():
        target = folder / name
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text, encoding="utf-8")
    for name, data in case.files_hex.items():
        target = folder / name
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(bytes.fromhex(data))
    for edit in case.edits:
        target = folder / edit.file
        if edit.append is not None:
            with target.open("ab") as handle:
                handle.write(edit.append.encode())
            continue
        assert edit.line is not None and edit.text is not None
        lines = target.read_bytes().splitlines(keepends=True)
        assert edit.line <= len(lines), f"{case.id}: {edit.file} has only {len(lines)} lines"
        lines[edit.line - 1] = edit.text.encode() + b"\n"
        target.write_bytes(b"".join(lines))


def snapshot(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


# ----------------------------------------------------------------------------------------- CLI cases
def fill(args: list[str], values: dict[str, str]) -> list[str]:
    filled = []
    for arg in args:
        text = arg
        for key, value in values.items():
            text = text.replace("{" + key + "}", value)
        filled.append(text)
    return filled


def gym(args: list[str], cwd: Path, timeout: float = 120.0) -> subprocess.CompletedProcess[str]:
    """``gym <args>`` as a real process in ``cwd``."""
    env = {k: v for k, v in os.environ.items() if k != "REWARDGYM_DEBUG"}
    env.update({"PYTHONPATH": str(REPO_ROOT), "PYTHONUNBUFFERED": "1"})
    return subprocess.run(
        [sys.executable, "-m", "rewardgym", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


def _new_file_problem(path: Path) -> str | None:
    name = path.name
    if name.endswith(".tmp") or (name.startswith(".") and name != ".gitignore"):
        return f"temp file left behind: {path}"
    try:
        if name.endswith(".jsonl"):
            read_jsonl(path)
        elif name.endswith(".json"):
            orjson.loads(path.read_bytes())
    except (DataError, orjson.JSONDecodeError) as exc:
        return f"new output {path} is not complete: {exc}"
    return None


def check_files(before: dict[str, bytes], folder: Path) -> list[Failure]:
    failures: list[Failure] = []
    after = snapshot(folder)
    for name, content in before.items():
        if name not in after:
            failures.append(Failure("previous_outputs", f"{name} was deleted"))
        elif after[name] != content:
            failures.append(Failure("previous_outputs", f"{name} was changed"))
    for name in sorted(set(after) - set(before)):
        problem = _new_file_problem(folder / name)
        if problem:
            failures.append(Failure("half_written", problem))
    return failures


def run_cli_case(case: Case, folder: Path, values: dict[str, str]) -> tuple[list[Failure], str]:
    """Run a ``run`` case in its prepared folder; returns (failed checks, everything printed)."""
    assert case.run is not None
    before = snapshot(folder)
    done = gym(fill(case.run, values), folder)
    printed = done.stdout + done.stderr
    failures: list[Failure] = []
    if done.returncode != case.exit:
        failures.append(Failure("exit", f"exit code {done.returncode}, expected {case.exit}"))
    # The error: the ``Error: `` line and the short block that may follow it (e.g. one ``++key=`` per value).
    start = done.stderr.find("Error: ")
    error = done.stderr[start:] if start >= 0 else ""
    if not error:
        failures.append(Failure("message", "no 'Error: ' line on stderr"))
    elif case.message not in error:
        failures.append(Failure("message", f"{case.message!r} not in {error!r}"))
    if case.where not in error:
        failures.append(Failure("where", f"{case.where!r} not in {error!r}"))
    if "Traceback" in printed:
        failures.append(Failure("traceback", "a traceback was printed"))
    failures.extend(check_files(before, folder))
    return failures, printed


# ----------------------------------------------------------------------------------------- HTTP cases
def run_http_case(case: Case, urls: dict[str, str]) -> tuple[list[Failure], str]:
    """Send an ``http`` case's request; returns (failed checks, the answer's body)."""
    request = case.http
    assert request is not None
    base = urls[request.server]
    headers = dict(request.headers)
    if request.raw is not None:
        headers.setdefault("Content-Type", "application/json")
        reply = call(base, request.method, request.path, data=request.raw.encode(), headers=headers)
    else:
        reply = call(base, request.method, request.path, json=request.json_body, headers=headers)
    text = reply.body.decode("utf-8", "replace")
    failures: list[Failure] = []
    if reply.status != case.status:
        failures.append(Failure("status", f"HTTP {reply.status}, expected {case.status}: {text[:300]}"))
    try:
        message = str(reply.json()["error"]["message"])
    except (orjson.JSONDecodeError, KeyError, TypeError):
        message = ""
        failures.append(Failure("message", f"no JSON error.message in {text[:300]!r}"))
    if message and case.message not in message:
        failures.append(Failure("message", f"{case.message!r} not in {message!r}"))
    if case.where not in message:
        failures.append(Failure("where", f"{case.where!r} not in {message!r}"))
    if "Traceback" in text:
        failures.append(Failure("traceback", "a traceback was served"))
    alive = call(base, "GET", "/")
    if alive.status != 200:
        failures.append(Failure("healthy", f"GET / answered {alive.status} after the bad request"))
    return failures, text
