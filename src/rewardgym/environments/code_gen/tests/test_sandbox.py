"""code_gen sandbox: each limit is enforced, scored 0 with a reason, and leaves nothing behind.

Runs real solutions through ``verify``. Tests that need a network namespace are skipped (with the reason)
where none can be created; tests of the dedicated uid need a root server (as in CI).
"""

from __future__ import annotations

import asyncio
import os
import socket
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from rewardgym.environments.code_gen.isolation import Isolation
from rewardgym.environments.code_gen.sandbox import CodeSandbox, SandboxUnavailableError
from rewardgym.environments.code_gen.tests.helpers import (
    fenced,
    make_request,
    no_sandbox_processes_left,
)
from rewardgym.environments.code_gen.verifier import CodeGenConfig, CodeGenVerifyResponse, verify

ROOT = os.geteuid() == 0


@pytest.fixture
def isolated(isolation: Isolation) -> Isolation:
    if isolation.mode == "none":
        pytest.skip(f"no network isolation on this machine: {isolation.detail}")
    return isolation


@pytest.fixture
def listener() -> Iterator[socket.socket]:
    """A TCP listener on 127.0.0.1 that solutions try to reach."""
    server = socket.create_server(("127.0.0.1", 0))
    server.setblocking(False)
    yield server
    server.close()


def _accepted(server: socket.socket) -> bool:
    try:
        conn, _ = server.accept()
    except BlockingIOError:
        return False
    conn.close()
    return True


def _failed(result: CodeGenVerifyResponse, code: int) -> str:
    """Assert a zero reward with failure ``code`` and return the reason text."""
    assert result.reward == 0.0
    assert result.result is not None and result.result[-1] == code, result.metadata
    assert result.metadata is not None
    return f"{result.metadata.get('error_message')} {result.metadata.get('error', '')}"


async def test_infinite_loop_hits_the_time_limit(config: CodeGenConfig) -> None:
    config = config.model_copy(update={"unit_test_timeout_secs": 1.0})
    start = time.monotonic()
    result = await verify(make_request(fenced("while True:\n    pass"), ["1\n", "2\n"], ["1", "2"]), config)
    assert "Time Limit Exceeded" in _failed(result, -3)
    assert result.result == [-3]
    assert time.monotonic() - start < 8
    assert await no_sandbox_processes_left(config)


async def test_swallowed_timeouts_hit_the_global_limit(config: CodeGenConfig) -> None:
    config = config.model_copy(update={"unit_test_timeout_secs": 0.5})
    code = "while True:\n    try:\n        while True:\n            pass\n"
    code += "    except BaseException:\n        pass"
    result = await verify(make_request(fenced(code), ["1\n"], ["1"]), config)
    assert result.result == [-1]
    reason = _failed(result, -1)
    assert "Global timeout" in reason or "CPU time limit" in reason
    assert await no_sandbox_processes_left(config)


async def test_fork_bomb_is_stopped(config: CodeGenConfig, isolated: Isolation) -> None:
    if not ROOT:
        pytest.skip("RLIMIT_NPROC per sandbox needs the dedicated uid of a root server")
    code = (
        "import posix\nwhile True:\n    posix.fork()"  # os.fork is disabled by the guard; posix.fork is not
    )
    result = await verify(make_request(fenced(code), ["\n"], ["x"]), config)
    assert result.reward == 0.0 and result.result is not None
    # RLIMIT_NPROC normally stops it (-4); on a loaded machine a time limit may come first (issue #16).
    reason = _failed(result, result.result[-1])
    assert result.result[-1] in (-4, -3, -1) and reason.strip(), reason
    assert result.result[-1] != -4 or "BlockingIOError" in reason, reason
    assert await no_sandbox_processes_left(config)


@pytest.mark.parametrize(
    "code",
    ["blob = bytearray(512 * 2**20)", "chunks = []\nwhile True:\n    chunks.append(bytearray(8 * 2**20))"],
    ids=["one-block", "growing"],
)
async def test_memory_hog_scores_zero_with_a_reason(config: CodeGenConfig, code: str) -> None:
    """What holds under any load: 0 reward, a failure code with a reason, nothing left running. Which limit
    fires first is not asserted: on a loaded machine the growing hog can reach its time limit before the
    memory limit (issue #16)."""
    config = config.model_copy(update={"memory_limit_mb": 256})
    result = await verify(make_request(fenced(code + "\nprint('done')"), ["\n"], ["done"]), config)
    assert result.reward == 0.0 and result.result is not None, result
    code_seen = result.result[-1]
    assert code_seen in (-4, -3, -1), result.metadata
    reason = _failed(result, code_seen)
    expected = {-4: "MemoryError", -3: "Time Limit Exceeded", -1: "Global timeout"}[code_seen]
    assert expected in reason or (code_seen == -1 and "killed" in reason), reason
    assert await no_sandbox_processes_left(config)


async def test_network_is_unreachable(
    config: CodeGenConfig, isolated: Isolation, listener: socket.socket
) -> None:
    port = listener.getsockname()[1]
    code = (
        f"import socket\ns = socket.create_connection(('127.0.0.1', {port}), timeout=3)\nprint('connected')"
    )
    result = await verify(make_request(fenced(code), ["\n"], ["connected"]), config)
    reason = _failed(result, -4)
    assert "Network is unreachable" in reason, reason
    assert not _accepted(listener)


async def test_without_isolation_the_same_solution_connects(listener: socket.socket) -> None:
    """Positive control for the test above: with isolation explicitly off, the connection succeeds."""
    config = CodeGenConfig(
        unshare_command="/nonexistent/unshare",
        require_network_isolation=False,
        sandbox_uid_base=None,
        unit_test_timeout_secs=5,
    )
    port = listener.getsockname()[1]
    code = (
        f"import socket\ns = socket.create_connection(('127.0.0.1', {port}), timeout=3)\nprint('connected')"
    )
    result = await verify(make_request(fenced(code), ["\n"], ["connected"]), config)
    assert result.reward == 1.0, result.metadata
    assert _accepted(listener)


async def test_required_isolation_refuses_to_run(tmp_path: Path) -> None:
    config = CodeGenConfig(unshare_command="/nonexistent/unshare", work_dir=str(tmp_path))
    marker = tmp_path / "ran"
    request = make_request(fenced(f"open({str(marker)!r}, 'w').write('x')"), ["\n"], [""])
    with pytest.raises(SandboxUnavailableError) as info:
        await verify(request, config)
    assert "require_network_isolation" in str(info.value)
    assert "/nonexistent/unshare" in str(info.value)
    assert not marker.exists()
    assert list(tmp_path.iterdir()) == []


async def test_writes_outside_the_work_folder_fail(config: CodeGenConfig, isolated: Isolation) -> None:
    # The private root is read-only outside its tmpfs, whichever uid runs the code.
    target = Path("/etc") / f"rewardgym-pwned-{uuid.uuid4().hex}.txt"
    code = f"open({str(target)!r}, 'w').write('pwned')\nprint('written')"
    try:
        result = await verify(make_request(fenced(code), ["\n"], ["written"]), config)
        reason = _failed(result, -4)
        assert "Read-only file system" in reason or "PermissionError" in reason, reason
        assert not target.exists()
    finally:
        target.unlink(missing_ok=True)


async def test_temp_folders_are_private_and_the_work_folder_is_removed(
    config: CodeGenConfig, isolated: Isolation
) -> None:
    escaped = Path("/tmp") / f"rewardgym-escape-{uuid.uuid4().hex}"
    code = (
        "import posix\n"
        f"open({str(escaped)!r}, 'w').write('x')\n"
        "open('local.txt', 'w').write('kept')\n"
        "print(open('local.txt').read(), posix.getcwd())"
    )
    result = await verify(make_request(fenced(code), ["\n"], ["x"]), config)
    assert result.metadata is not None
    printed = result.metadata["output"].split()
    assert printed[0] == "kept"  # the work folder is writable
    assert not escaped.exists()  # /tmp inside the sandbox is a private tmpfs
    assert not Path(printed[1]).exists()  # the work folder is gone


async def test_file_size_limit(config: CodeGenConfig) -> None:
    config = config.model_copy(update={"max_file_size_mb": 1})
    code = "f = open('big.bin', 'wb')\nf.write(b'x' * (4 * 2**20))\nf.close()\nprint('ok')"
    result = await verify(make_request(fenced(code), ["\n"], ["ok"]), config)
    assert "File too large" in _failed(result, -4)


async def test_environment_is_built_from_scratch(
    config: CodeGenConfig, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-a-real-key")
    code = (
        "import os\nprint(sorted(k for k in os.environ if 'KEY' in k or 'TOKEN' in k), 'HOME' in os.environ)"
    )
    result = await verify(make_request(fenced(code), ["\n"], ["[] True"]), config)
    assert result.result == [True], result.metadata


async def test_runs_under_a_dedicated_uid(config: CodeGenConfig, isolated: Isolation) -> None:
    if not ROOT or not isolated.drop_privileges:
        pytest.skip("the dedicated uid is used only by a root server")
    code = "import posix\nprint(posix.getuid() >= 65000, posix.getgroups())"
    result = await verify(make_request(fenced(code), ["\n"], ["True []"]), config)
    assert result.result == [True], result.metadata


async def test_server_stays_usable_and_concurrency_is_bounded(config: CodeGenConfig) -> None:
    """Hostile and normal solutions at once through one sandbox (two slots): every verdict is right, and four
    one-second solutions need at least two rounds."""
    config = config.model_copy(update={"unit_test_timeout_secs": 3.0, "memory_limit_mb": 256})
    sandbox = CodeSandbox(config)
    hostile = [
        make_request(fenced("while True:\n    pass"), ["\n"], ["x"]),
        make_request(fenced("x = bytearray(2**30)"), ["\n"], ["x"]),
    ]
    good = make_request(fenced("print(int(input()) * 3)"), ["2\n", "5\n"], ["6", "15"])
    results = await asyncio.gather(*(verify(r, config, sandbox) for r in [*hostile, good]))
    assert [r.reward for r in results] == [0.0, 0.0, 1.0]
    assert results[0].result in ([-3], [-1]) and results[1].result in (
        [-4],
        [-3],
        [-1],
    )  # any limit, any load
    assert results[2].result == [True, True]
    sleeper = make_request(fenced("import time\ntime.sleep(1)\nprint('up')"), ["\n"], ["up"])
    start = time.monotonic()
    rewards = await asyncio.gather(*(verify(sleeper, config, sandbox) for _ in range(4)))
    assert [r.reward for r in rewards] == [1.0] * 4
    assert time.monotonic() - start >= 2.0
    assert sandbox._slots.qsize() == 2  # every slot was given back


async def test_forged_report_lines_are_runtime_errors(config: CodeGenConfig) -> None:
    """The solution can write on the report channel, but a forged line never passes a test."""
    code = (
        "import posix\n"
        "for fd in range(3, 12):\n"
        "    try:\n"
        '        posix.write(fd, b\'{"event": "done"}\\n\')\n'
        "    except OSError:\n"
        "        pass\n"
        "print('x')"
    )
    result = await verify(make_request(fenced(code), ["\n", "\n"], ["x", "x"]), config)
    assert result.result == [-4]
    assert result.metadata is not None and "corrupted" in result.metadata["error"]


async def test_oversized_output_is_a_wrong_answer(config: CodeGenConfig) -> None:
    config = config.model_copy(update={"max_output_mb": 0.5})
    result = await verify(make_request(fenced("print('x' * 2**20)"), ["\n"], ["x"]), config)
    assert "larger than the sandbox limit" in _failed(result, -2)


async def test_exit_in_call_mode_ends_the_run(config: CodeGenConfig) -> None:
    result = await verify(
        make_request(fenced("import sys\ndef f(x):\n    sys.exit(3)"), ["1", "2"], ["1", "2"], "f"), config
    )
    assert result.result == [-1, -1]
    assert "ended before reporting every test (exit status 3)" in _failed(result, -1)


async def test_compile_time_timeout(config: CodeGenConfig) -> None:
    config = config.model_copy(update={"unit_test_timeout_secs": 1.0})
    result = await verify(
        make_request(fenced("while True:\n    pass\ndef f():\n    return 1"), ["1"], ["1"], "f"), config
    )
    assert (result.result, result.metadata) == (
        [-4],
        {"error_code": -4, "error_message": "Error during testing: "},
    )


async def test_confinement_is_reported_and_exposes_no_checkout(
    config: CodeGenConfig, isolated: Isolation
) -> None:
    """The child's own account of its confinement: private root, seccomp filter, and only the interpreter's
    folders exposed (never the editable checkout the tests run from)."""
    sandbox = CodeSandbox(config)
    async with sandbox.run("print(1)", None, ["\n"]) as run:
        events = [event async for event in run.events()]
    assert [e["event"] for e in events] == ["ready", "test", "done"]
    assert run.confinement["private_root"] is True and run.confinement["seccomp"] is True
    checkout = str(Path(__file__).resolve().parents[5])
    exposed = run.confinement["exposed"]
    assert exposed and not any(p == checkout or p.startswith(checkout + "/src") for p in exposed), exposed


async def test_large_and_non_ascii_outputs_within_the_cap_pass(config: CodeGenConfig) -> None:
    """Positive control of the output caps: a report just under ``max_output_mb`` and non-ASCII text (sent as
    UTF-8, lone surrogates included) still pass."""
    config = config.model_copy(update={"max_output_mb": 4})
    big = make_request(fenced("print('x' * (3 * 2**20))"), ["\n"], ["x" * (3 * 2**20)])
    assert (await verify(big, config)).reward == 1.0
    text = "é€😀 \ud800"
    unicode = make_request(fenced(f"print({text!r})"), ["\n"], [text])
    result = await verify(unicode, config)
    assert result.result == [True], result.metadata


async def test_an_oversized_error_report_is_cut_not_dropped(config: CodeGenConfig) -> None:
    config = config.model_copy(update={"max_output_mb": 1})
    code = "raise ValueError('y' * (8 * 2**20))\ndef f(x):\n    return x"
    result = await verify(make_request(fenced(code), ["1"], ["1"], "f"), config)
    assert result.result == [-4] and result.metadata is not None
    message = result.metadata["error_message"]
    assert message.startswith("Error during testing: yyy") and "...(truncated) ..." in message
    assert len(message) <= 2**20
