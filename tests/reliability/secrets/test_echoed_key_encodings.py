"""A key with quotes, a backslash and non-ASCII characters, echoed back by the upstream in
every encoding a JSON body carries (orjson-escaped, ``json.dumps`` ASCII-escaped inside it, URL-encoded),
appears nowhere: not on screen, not in the failures file, not in any server log or other file written.

Real processes: ``gym eval run`` serves ``vllm_model`` → :class:`~tests.stubs.echo_upstream.
EchoCredentialUpstream` (a real HTTP server answering 400 with the echo), ``mcqa`` and ``simple_agent``. The
key is given the non-argv way (``--model-api-key-file``). The stub's record proves the key reached the
wire, and the failures file proves the echo travelled back (its message is there, the key masked).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any, cast
from urllib.parse import quote, quote_plus

import orjson

from rewardgym.launch.serve import ThreadedServer
from tests.conftest import REPO_ROOT
from tests.stubs.echo_upstream import EchoCredentialUpstream

KEY = 'RGq"uo\\te-é€-9c2e5b1d4a8e'
MCQA = REPO_ROOT / "src/rewardgym/environments/mcqa/data/example.jsonl"


def encodings(key: str) -> set[str]:
    once = {
        json.dumps(key)[1:-1],
        json.dumps(key, ensure_ascii=False)[1:-1],
        orjson.dumps(key).decode()[1:-1],
    }
    twice = {json.dumps(form)[1:-1] for form in once} | {
        json.dumps(form, ensure_ascii=False)[1:-1] for form in once
    }
    return {key, *once, *twice, quote(key, safe=""), quote_plus(key), repr(key)[1:-1]}


def leaks(text: str) -> list[str]:
    """The encodings of the key of which a 10-character piece occurs in ``text``."""
    return [form for form in encodings(KEY) if any(form[i : i + 10] in text for i in range(len(form) - 9))]


def _run(tmp_path: Path, stub: EchoCredentialUpstream, *extra: str) -> subprocess.CompletedProcess[str]:
    """``gym eval run`` of two mcqa rows against ``stub``, the key given in a 0600 file."""
    (tmp_path / "key.txt").write_text(KEY + "\n", encoding="utf-8")
    (tmp_path / "key.txt").chmod(0o600)
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT), "PYTHONUNBUFFERED": "1"}
    with ThreadedServer(cast(Any, stub), name="echo-credential") as upstream:
        return subprocess.run(
            [sys.executable, "-m", "rewardgym", "eval", "run", "--resources-server", "mcqa",
             "--model-type", "vllm_model", "--agent", "mcqa_simple_agent", "--model", "stub-model",
             "--model-url", f"{upstream.url}/v1", "--model-api-key-file", "key.txt", "--input", str(MCQA),
             "--limit", "2", "-o", "out/rollouts.jsonl", "--log-dir", "out/logs", *extra],
            cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300, check=False,
        )  # fmt: skip


def test_an_echoed_key_is_masked_in_every_encoding(tmp_path: Path) -> None:
    stub = EchoCredentialUpstream(status=400)
    run = _run(tmp_path, stub, "++max_attempts=1")
    printed = run.stdout + run.stderr
    assert KEY.encode("utf-8") in stub.received, stub.received  # the key went upstream, as UTF-8
    failures = [
        orjson.loads(line) for line in (tmp_path / "out/rollouts_failures.jsonl").read_bytes().splitlines()
    ]
    assert len(failures) == 2, printed
    reasons = " ".join(row["_ng_failure_reason"] for row in failures)
    assert "Incorrect API key provided" in reasons and "***" in reasons, reasons  # the echo came back, masked
    assert not (tmp_path / "out/rollouts.jsonl").read_bytes()  # a failure never becomes a reward

    files = {
        str(p.relative_to(tmp_path)): p.read_bytes().decode("utf-8", "replace")
        for p in tmp_path.rglob("*")
        if p.is_file() and p.name != "key.txt"
    }
    assert any(name.startswith("out/logs/") for name in files)
    assert leaks(KEY) and leaks(json.dumps({"k": KEY}))  # the detector sees the key where it is
    leaked = {name: leaks(text) for name, text in files.items() if leaks(text)}
    assert not leaked, leaked
    assert not leaks(printed), printed


def test_a_key_echoed_in_a_normal_answer_is_masked_in_every_stored_file(tmp_path: Path) -> None:
    """Issue 22 (3): the upstream answers 200 and quotes the key in its answer text; the stored rollouts
    (and the health files, report and logs written from them) hold the answer with the key masked."""
    run = _run(tmp_path, EchoCredentialUpstream(status=200))
    printed = run.stdout + run.stderr
    assert run.returncode == 0, printed
    rows = (tmp_path / "out/rollouts.jsonl").read_bytes().splitlines()
    assert len(rows) == 2 and all(b"(key ***;" in row for row in rows), rows  # the answer, the key masked
    files = {
        str(p.relative_to(tmp_path)): p.read_bytes().decode("utf-8", "replace")
        for p in tmp_path.rglob("*")
        if p.is_file() and p.name != "key.txt"
    }
    leaked = {name: leaks(text) for name, text in files.items() if leaks(text)}
    assert not leaked, leaked
    assert not leaks(printed), printed
