"""The ``trust`` sections of ``run_all.py``: one section per class of issue 22 ("Trust, second round").

Each class's cases are kept as data in the bad-input catalogue (``tests/reliability/bad_input/cases/``,
the file named below) and run here as they are in CI — a real ``gym`` process per case against the
in-process stack on 127.0.0.1 — each printed as one figure: refused with one line, the exit code it
must have, nothing written, every earlier file unchanged, no traceback. A class with no catalogue file
yet prints its section with the one figure "no cases" marked failed, so the table shows what is open.
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path

from tests.reliability.bad_input.catalogue import Case, gym, load_cases, prepare_folder, run_cli_case
from tests.stubs.inprocess_stack import AGENT, start_stack

ROOT = Path(__file__).resolve().parents[2]
MCQA = ROOT / "src/rewardgym/environments/mcqa/data/example.jsonl"

CLASSES: tuple[tuple[str, str, tuple[str, ...]], ...] = (
    ("T1", "sandbox memory per run", ("sandbox:",)),
    ("T2", "outputs that are inputs", ("outputs-",)),
    ("T3", "secrets, wider", ()),
    ("T4", "unbounded work from flags or files", ("bounds-",)),
    ("T5", "data select --check on a hostile manifest", ("manifest-",)),
    ("T6", "env stop verifies the head and each pid", ()),
    ("T7", "--no-serve: the head proves itself first", ()),
    ("T8", "Ray local cluster on loopback", ()),
    ("T9", "smaller items", ("small-",)),
)
"""(section, title, id prefixes of its catalogue cases)."""

TESTS: dict[str, tuple[str, ...]] = {
    "T3": (
        "tests/reliability/secrets/test_echoed_key_encodings.py",
        "tests/reliability/secrets/test_no_secret_in_argv.py",
        "tests/config/test_config_show.py::test_every_header_value_is_a_secret_unless_allow_listed",
        "tests/config/test_secrets.py::test_stored_bytes_mask_known_secrets_only",
        "tests/config/test_secrets.py::test_children_get_no_variable_holding_a_secret",
        "tests/launch/test_ray_local.py::test_ray_records_the_command_line_with_secrets_masked",
    ),
    "T6": tuple(
        f"tests/launch/test_head_identity.py::{name}"
        for name in (
            "test_stop_signals_nothing_when_no_stack_of_ours_is_recorded",
            "test_stop_signals_nothing_when_the_head_cannot_prove_the_stack_secret",
            "test_stop_signals_nothing_when_the_pid_is_not_the_one_recorded",
        )
    ),
    "T7": (
        "tests/launch/test_head_identity.py::test_no_serve_never_sends_the_token_to_a_head_that_cannot_prove_it",
    ),
    "T8": ("tests/launch/test_ray_local.py::test_a_local_cluster_listens_on_loopback_only",),
    "T9": (
        "tests/servers/test_env_status_starting.py",
        "tests/servers/test_deadline.py",
        "tests/cli/test_early_interrupt.py",
        "tests/export/test_csv_formulas.py",
        "tests/analysis/test_report_browser.py::test_only_the_pages_own_script_runs",
    ),
}
"""Classes whose guarantees are checked by real-process tests rather than catalogue cases: each test
is run here and printed as one figure."""


def run_tests(add: Add, section: str, tests: tuple[str, ...]) -> None:
    """Each of ``tests`` run by pytest in a fresh interpreter: one figure per test."""
    import subprocess
    import sys

    for test in tests:
        done = subprocess.run(
            [sys.executable, "-m", "pytest", "-q", "-p", "no:randomly", "-p", "no:cacheprovider", test],
            cwd=ROOT, capture_output=True, text=True, timeout=900, check=False,
        )  # fmt: skip
        last = (done.stdout.strip().splitlines() or ["no output"])[-1]
        add(section, test.rsplit("/", 1)[-1], last[:120], "passes", done.returncode == 0)


Add = Callable[..., None]


def _previous_run(head: str, work: Path) -> Path:
    """in.jsonl and out/ of a finished run (3 tasks x 2 repeats), profiled: as the catalogue's fixture."""
    folder = work / "previous-run"
    folder.mkdir(parents=True)
    (folder / "in.jsonl").write_text("".join(MCQA.read_text("utf-8").splitlines(keepends=True)[:3]), "utf-8")
    run = ["eval", "run", "--no-serve", "--head-url", head, "--input", "in.jsonl", "--agent", AGENT,
           "--num-repeats", "2", "-o", "out/rollouts.jsonl"]  # fmt: skip
    profile = ["eval", "profile", "--inputs", "out/rollouts_materialized_inputs.jsonl", "--rollouts",
               "out/rollouts.jsonl"]  # fmt: skip
    for args in (run, profile):
        done = gym(args, folder)
        if done.returncode:
            raise RuntimeError(f"gym {' '.join(args[:2])} failed: {done.stderr[-500:]}")
    return folder


def _cases(prefixes: tuple[str, ...]) -> list[Case]:
    return [case for case in load_cases() if case.run and case.id.startswith(prefixes)]


def hostile_cases(add: Add, section: str, wanted: Callable[[str], bool] = lambda name: True) -> None:
    """The hostile catalogue's cases ``wanted`` (by name) against a real code_gen server over HTTP (root,
    namespaces): one figure each, after the isolation and the memory plan. Also ``run_all``'s sandbox."""
    import asyncio
    import sys

    from rewardgym.environments.code_gen.app import CodeGenServer
    from rewardgym.environments.code_gen.isolation import probe_isolation
    from rewardgym.environments.code_gen.tests.hostile import (
        CASES,
        RSS_BOUND_MIB,
        SERVER_SETTINGS,
        host_with_secrets,
        run_case,
    )
    from rewardgym.launch.serve import ThreadedServer

    server = CodeGenServer({"name": "code_gen", "max_concurrent_executions": 2, **SERVER_SETTINGS})
    runner = ThreadedServer(server).start()
    try:
        mode = asyncio.run(probe_isolation(server.config.unshare_command, sys.executable)).mode
        add(section, "isolation", mode, "namespaces (root)", mode == "namespaces")
        add(section, "memory plan", server.sandbox.memory.describe(), "processes x size <= run limit", True)
        with host_with_secrets() as host:
            for case in [c for c in CASES if wanted(c.name)]:
                outcome = run_case(runner.url, case, host)
                codes = outcome.result[-1:] if outcome.result else outcome.result
                add(
                    section,
                    case.name,
                    f"{codes} {outcome.reason[:70]!r}, RSS +{outcome.rss_growth_mib:.1f} MiB, "
                    f"{outcome.seconds:.1f} s"
                    + (f"; {'; '.join(outcome.problems)}" if outcome.problems else ""),
                    f"reward 0 + reason, no leak, host unchanged, RSS <= +{RSS_BOUND_MIB} MiB, healthy",
                    not outcome.problems,
                )
    finally:
        runner.stop()


def trust(add: Add, work: Path) -> None:
    """Every class's section (see the module docstring)."""
    stack = start_stack(log_dir=str(work / "stack-logs"))
    try:
        previous = _previous_run(stack.head_url, work)
        for section, title, prefixes in CLASSES:
            print(f"-- {section} {title}")
            if prefixes == ("sandbox:",):
                hostile_cases(add, section, lambda name: "memory hog" in name)
                continue
            if section in TESTS:
                run_tests(add, section, TESTS[section])
            cases = _cases(prefixes) if prefixes else []
            if section in TESTS and not cases:
                continue
            if not cases:
                add(section, title, "no cases yet", "a case per guarantee", False)
                continue
            held = 0
            for case in cases:
                folder = Path(tempfile.mkdtemp(prefix=f"{case.id}-", dir=work))
                prepare_folder(case, folder, previous)
                values = {"head": stack.head_url, "agent": AGENT, "free_port": "9"}
                failures, _ = run_cli_case(case, folder, values)
                held += not failures
                value = f"exit {case.exit}, one line" if not failures else "; ".join(str(f) for f in failures)
                add(section, case.id, value[:160], "refused cleanly, nothing changed", not failures)
                shutil.rmtree(folder, ignore_errors=True)
            add(section, f"{title}: cases held", f"{held} of {len(cases)}", "all", held == len(cases))
    finally:
        stack.stop()
