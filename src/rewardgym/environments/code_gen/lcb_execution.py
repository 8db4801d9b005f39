"""LiveCodeBench execution semantics, as run inside the sandboxed child of ``code_gen``.

Stdlib only: :mod:`.sandbox_child` loads this file as a top-level module (without the rewardgym package).
The server imports :data:`PRELUDE`, :func:`truncate`, :func:`encode` and :data:`INT_MAX_STR_DIGITS` from it.
Contract of :func:`run_tests` (the ``job`` fields ``code``, ``fn_name``, ``inputs``, ``timeout``,
``limits.output_chars``; ``send`` delivers one report dict to the parent):

- A stdin/stdout program: a final ``if __name__ == '__main__':`` block is replaced by its body, every
  non-import statement is wrapped into ``wrapped_function`` behind :data:`PRELUDE`. Call-based code gets
  :data:`PRELUDE` prepended and, when it contains ``class Solution``, a ``Solution()`` instance.
- Compilation then each test runs under a wall-clock timer of ``timeout`` seconds (:class:`TimeoutException`).
  Reports: ``compile_error{error}`` or ``ready``; then ``test{index, seconds, status, ...}`` per test with
  ``status`` ``ok`` (stdin mode: ``output``; call mode: ``value`` in :func:`encode`'s form, ``json``,
  ``float``, ``text``), ``output_limit``, ``timeout`` or ``error`` (``error`` = repr, ``traceback``); a
  non-``ok`` test ends the run; ``done`` after the last test.
- :func:`reliability_guard` reproduces NeMo Gym's LiveCodeBench guard (``os.kill``, ``os.fork``,
  ``subprocess.Popen`` … set to ``None``) for parity of rewards; it is not what confines the code.
"""

from __future__ import annotations

import ast
import builtins
import io
import json
import os
import signal
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import suppress
from types import FrameType, ModuleType
from typing import Any, TextIO, cast

_PRELUDE_FROM = [
    "string",
    "re",
    "datetime",
    "collections",
    "heapq",
    "bisect",
    "copy",
    "math",
    "random",
    "statistics",
    "itertools",
    "functools",
    "operator",
    "io",
    "sys",
    "json",
    "builtins",
    "typing",
]
_PRELUDE_IMPORT = _PRELUDE_FROM[:-2]
PRELUDE = (
    "".join(f"from {m} import *\n" for m in _PRELUDE_FROM)
    + "".join(f"import {m}\n" for m in _PRELUDE_IMPORT)
    + "sys.setrecursionlimit(50000)\n"
)
"""LiveCodeBench's import prelude, placed before every solution."""

INT_MAX_STR_DIGITS = 50_000
"""Longest integer (in digits) solutions may print or parse, as in NeMo Gym's grader."""

TRUNCATE_AT = 300

Send = Callable[[dict[str, Any]], None]


class TimeoutException(Exception):
    """Raised by the per-test timer (LiveCodeBench recognises a timeout by this name in ``repr``)."""


def truncate(value: object, length: int = TRUNCATE_AT) -> str:
    """``str(value)`` cut to ``length`` characters: head, ``"...(truncated) ..."``, tail (LiveCodeBench)."""
    text = value if isinstance(value, str) else str(value)
    if len(text) <= length:
        return text
    return text[: length // 2] + "...(truncated) ..." + text[-length // 2 :]


def encode(value: Any, depth: int = 0) -> Any:
    """A JSON form of a prediction that keeps Python equality against JSON values when decoded.

    JSON scalars and lists stay themselves; tuples, dicts, sets and frozensets become ``{"$": kind, "v":
    [...]}``; numpy scalars become Python scalars; anything else (custom ``__eq__``) is ``{"$": "opaque"}``,
    which equals nothing.
    """
    if depth > 100:
        return {"$": "opaque", "v": "too deep"}
    if value is None or type(value) in (bool, int, float, str):
        return value
    # Subclasses (IntEnum, str enums, numpy.float64 ...) compare as their base value.
    if isinstance(value, str):
        return str.__str__(value)
    if isinstance(value, int):
        return int.__int__(value)
    if isinstance(value, float):
        return float.__float__(value)
    if isinstance(value, list):
        return [encode(v, depth + 1) for v in value]
    if isinstance(value, tuple | set | frozenset):
        kind = "tuple" if isinstance(value, tuple) else "set" if isinstance(value, set) else "frozenset"
        return {"$": kind, "v": [encode(v, depth + 1) for v in value]}
    if isinstance(value, dict):
        return {"$": "dict", "v": [[encode(k, depth + 1), encode(v, depth + 1)] for k, v in value.items()]}
    if type(value).__module__ == "numpy" and getattr(value, "ndim", None) == 0 and hasattr(value, "item"):
        return encode(value.item(), depth + 1)
    return {"$": "opaque", "v": type(value).__name__}


def on_alarm(signum: int, frame: FrameType | None) -> None:
    """SIGALRM handler: the running test (or compilation) timed out."""
    raise TimeoutException


def _timer(seconds: float) -> None:
    signal.setitimer(signal.ITIMER_REAL, seconds)


def reliability_guard() -> None:
    """NeMo Gym's LiveCodeBench guard (not a sandbox): the same functions disabled, for reward parity."""
    builtins.quit = None  # type: ignore[assignment]
    os.environ["OMP_NUM_THREADS"] = "1"
    for name in [
        "kill",
        "system",
        "putenv",
        "remove",
        "removedirs",
        "rmdir",
        "fchdir",
        "setuid",
        "fork",
        "forkpty",
        "killpg",
        "rename",
        "renames",
        "truncate",
        "replace",
        "unlink",
        "fchmod",
        "fchown",
        "chmod",
        "chown",
        "chroot",
        "lchflags",
        "lchmod",
        "lchown",
        "getcwd",
        "chdir",
    ]:
        setattr(os, name, None)
    import shutil
    import subprocess

    shutil.rmtree = shutil.move = shutil.chown = None  # type: ignore[assignment]
    subprocess.Popen = None  # type: ignore[assignment,misc]
    builtins.help = None  # type: ignore[assignment]
    for module in ("ipdb", "joblib", "resource", "psutil", "tkinter"):
        sys.modules[module] = None  # type: ignore[assignment]


def clean_if_name(code: str) -> str:
    """Replace a final ``if __name__ == '__main__':`` block by its body (its ``else`` is dropped)."""
    try:
        body = ast.parse(code).body
        last = body[-1]
        if isinstance(last, ast.If) and ast.unparse(last.test).strip() == "__name__ == '__main__'":
            # unparse of a statement list, as LiveCodeBench does (a docstring stays a plain expression)
            return ast.unparse(cast(ast.AST, body[:-1])) + "\n" + ast.unparse(cast(ast.AST, last.body))
    except Exception:
        pass
    return code


def stdio_program(code: str) -> str:
    """The stdin/stdout program: prelude, the code's imports, then every other statement in a function."""
    code = clean_if_name(code)
    try:
        body = ast.parse(code).body
        imports = [s for s in body if isinstance(s, ast.Import | ast.ImportFrom)]
        others = [s for s in body if not isinstance(s, ast.Import | ast.ImportFrom)]
        no_args = ast.arguments(posonlyargs=[], args=[], kwonlyargs=[], kw_defaults=[], defaults=[])
        function = ast.FunctionDef(
            name="wrapped_function", args=no_args, body=others, decorator_list=[], lineno=-1
        )
        return PRELUDE + "\n" + ast.unparse(cast(ast.AST, imports)) + "\n" + ast.unparse(function)
    except Exception:
        return code


def _compile(program: str, timeout: float) -> Any:
    _timer(timeout)
    try:
        module = ModuleType("tmp_sol", "")
        exec(program, module.__dict__)
        return module.Solution() if "class Solution" in program else module
    finally:
        _timer(0)


class _MockStdin:
    """``sys.stdin`` during a test: whole-input ``read``, line ``readline``, iteration, a bytes ``buffer``."""

    def __init__(self, inputs: str) -> None:
        self.inputs = inputs
        self._stream = io.StringIO(inputs)
        self.buffer = _MockBuffer(inputs)

    def read(self, *args: Any) -> str:
        return self.inputs

    def readline(self, *args: Any) -> str:
        return self._stream.readline(*args)

    def readlines(self, *args: Any) -> list[str]:
        return self.inputs.split("\n")

    def __iter__(self) -> Iterator[str]:
        return iter(self._stream)

    def __next__(self) -> str:
        return next(self._stream)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)


class _MockBuffer:
    def __init__(self, inputs: str) -> None:
        self.inputs = inputs.encode("utf-8")

    def read(self, *args: Any) -> bytes:
        return self.inputs

    def readline(self, *args: Any) -> bytes:
        return self.inputs.split(b"\n")[0] + b"\n"


class _FakeFile(io.StringIO):
    """What ``open()`` returns during a test: reads give the test input, writes are discarded."""

    def write(self, text: str) -> int:
        return len(text)


def _run_stdio(method: Callable[[], Any], inputs: str) -> str:
    """Run the wrapped program on ``inputs`` (stdin and ``open`` mocked as in LiveCodeBench); return what it
    printed on ``sys.stdout``."""
    lines = iter(inputs.split("\n"))
    captured = io.StringIO()
    captured.close = lambda x: 1  # type: ignore[assignment,method-assign,misc]
    real_stdout, real_stdin, real_open = sys.stdout, sys.stdin, builtins.open
    # LiveCodeBench patches these three on the *original* stdin object before replacing sys.stdin, so a
    # solution only sees them through sys.__stdin__; replayed for parity.
    overrides: dict[str, Callable[..., Any]] = {
        "read": lambda *a: inputs,
        "readlines": lambda *a: inputs.split("\n"),
        "readline": lambda *a: next(lines),
    }
    patched = []
    for name, function in overrides.items():
        with suppress(AttributeError, TypeError):
            setattr(real_stdin, name, function)
            patched.append(name)
    sys.stdout, sys.stdin = captured, cast(TextIO, _MockStdin(inputs))
    builtins.open = lambda *args, **kwargs: _FakeFile(inputs)  # type: ignore[assignment]
    try:
        method()
    except SystemExit:
        pass
    finally:
        sys.stdout, sys.stdin, builtins.open = real_stdout, real_stdin, real_open
        for name in patched:
            with suppress(AttributeError, TypeError):
                delattr(real_stdin, name)
    return captured.getvalue()


def _describe(prediction: Any, max_chars: int) -> dict[str, Any]:
    """The report of a call-based prediction (what the parent needs to compare it)."""
    if isinstance(prediction, tuple):
        prediction = list(prediction)
    try:
        as_json: str | None = json.dumps(prediction)
    except Exception:
        as_json = None
    try:
        as_float: float | None = float(prediction)
    except Exception:
        as_float = None
    report = {"status": "ok", "value": encode(prediction), "json": as_json, "float": as_float}
    report["text"] = truncate(prediction)
    if len(json.dumps(report)) > max_chars:
        return {"status": "output_limit"}
    return report


def _format_traceback(exc: BaseException) -> str:
    """The traceback text, after freeing the finished frames' locals (a memory hog's data lives there)."""
    tb = exc.__traceback__
    while tb is not None:
        with suppress(RuntimeError):
            tb.tb_frame.clear()
        tb = tb.tb_next
    try:
        import traceback

        return traceback.format_exc()
    except Exception:
        return ""


def run_tests(job: dict[str, Any], send: Send) -> None:
    """Compile the job's code and run its tests, reporting through ``send`` (see the module docstring)."""
    timeout: float = job["timeout"]
    fn_name: str | None = job["fn_name"]
    inputs: list[str] = job["inputs"]
    max_chars: int = job["limits"]["output_chars"]
    call_based = fn_name is not None
    try:
        program = PRELUDE + "\n\n" + job["code"] if call_based else stdio_program(job["code"])
        target = _compile(program, timeout)
        method = getattr(target, fn_name if call_based else "wrapped_function", None)  # type: ignore[arg-type]
        if method is None:
            raise TypeError("cannot unpack non-iterable NoneType object")  # NeMo Gym's message for this case
        arguments = [[json.loads(line) for line in text.split("\n")] for text in inputs] if call_based else []
    except Exception as exc:
        send({"event": "compile_error", "error": str(exc)})
        return
    send({"event": "ready"})
    for index, text in enumerate(inputs):
        _timer(timeout)
        start = time.perf_counter()
        try:
            if call_based:
                prediction = method(*arguments[index])
                seconds = time.perf_counter() - start
                _timer(timeout)
                report = _describe(prediction, max_chars)
            else:
                output = _run_stdio(method, text)
                seconds = time.perf_counter() - start
                report = (
                    {"status": "ok", "output": output}
                    if len(output) <= max_chars
                    else {"status": "output_limit"}
                )
            _timer(0)
        except Exception as exc:
            _timer(0)
            kind = "timeout" if "timeoutexception" in repr(exc).lower() else "error"
            report = {"status": kind, "error": repr(exc), "traceback": _format_traceback(exc)}
            seconds = time.perf_counter() - start
        send({"event": "test", "index": index, "seconds": seconds} | report)
        if report["status"] != "ok":
            return
    send({"event": "done"})
