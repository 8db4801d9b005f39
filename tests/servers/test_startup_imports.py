"""Start-up cost guards: what each kind of process imports (checked in fresh interpreters)."""

from __future__ import annotations

import os
import subprocess
import sys

import orjson

from tests.conftest import REPO_ROOT

HEAVY_FOR_SUPERVISOR = ["fastapi", "aiohttp", "rewardgym.servers.base", "rewardgym.environments.mcqa"]
HEAVY_FOR_CHILD = ["omegaconf", "aiohttp", "rewardgym.config.loader", "rewardgym.cli", "typer"]


def loaded(code: str, modules: list[str], *, env: dict[str, str] | None = None) -> dict[str, bool]:
    """Run ``code`` in a fresh interpreter; which of ``modules`` it imported."""
    report = f"print(orjson.dumps({{m: m in sys.modules for m in {modules!r}}}).decode())"
    probe = f"{code}\nimport sys, orjson\n{report}"
    out = subprocess.run(
        [sys.executable, "-c", probe],
        cwd=REPO_ROOT,
        env={**os.environ, "PYTHONPATH": str(REPO_ROOT), **(env or {})},
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    result: dict[str, bool] = orjson.loads(out.stdout.strip().splitlines()[-1])
    return result


def test_supervisor_side_stays_light() -> None:
    code = (
        "import rewardgym.launch.supervisor, rewardgym.launch.registry_server, rewardgym.launch.serve\n"
        "import rewardgym.launch.from_config, rewardgym.launch.probe"
    )
    assert loaded(code, HEAVY_FOR_SUPERVISOR) == dict.fromkeys(HEAVY_FOR_SUPERVISOR, False)


def test_server_processes_do_not_load_the_config_stack_or_the_client() -> None:
    code = (
        "import rewardgym.launch.child, rewardgym.launch.serve\n"
        "from rewardgym.launch.child_spec import server_class\n"
        "server_class('responses_api_agents', 'simple_agent')\n"
        "server_class('responses_api_models', 'openai_model')\n"
        "server_class('resources_servers', 'tests.stubs.environments:ExactMatchServer')"
    )
    found = loaded(code, HEAVY_FOR_CHILD)
    assert found == dict.fromkeys(HEAVY_FOR_CHILD, False)


LAZY_ATTRIBUTES = """
import sys
import rewardgym, rewardgym.config.secrets
assert "importlib.metadata" not in sys.modules and "omegaconf" not in sys.modules
assert rewardgym.__version__ == rewardgym.__version__ != ""
import rewardgym.config as config
from rewardgym.config import GymConfig, load_config, redact_text
assert set(config.__all__) <= set(dir(config)) and config.GymConfig is GymConfig
try:
    config.no_such_name
except AttributeError:
    pass
else:
    raise SystemExit("no AttributeError")
"""


def test_lazy_package_attributes() -> None:
    found = loaded(LAZY_ATTRIBUTES, ["omegaconf", "importlib.metadata"])
    assert found == {"omegaconf": True, "importlib.metadata": True}  # loaded on use, not on import


CLI_MODULES = [
    "rewardgym.cli.env_cmd",
    "rewardgym.cli.envlist_cmd",
    "rewardgym.cli.run_cmd",
    "rewardgym.cli.profile_cmd",
    "rewardgym.cli.model_cmd",
]


def cli_imports(args: list[str]) -> dict[str, bool]:
    return loaded(f"from rewardgym.cli.main import _load_commands\n_load_commands({args!r})", CLI_MODULES)


def test_cli_imports_only_what_the_command_needs() -> None:
    assert cli_imports(["env", "start"]) == {m: m.endswith(".env_cmd") for m in CLI_MODULES}
    assert cli_imports(["eval", "profile"]) == {m: m.endswith(".profile_cmd") for m in CLI_MODULES}
    assert cli_imports(["env", "--help"]) == {m: m.endswith(("env_cmd", "envlist_cmd")) for m in CLI_MODULES}
    for args in ([], ["--help"], ["--debug", "--help", "env"], ["evn", "start"]):
        assert cli_imports(args) == dict.fromkeys(CLI_MODULES, True), args


def test_gym_help_lists_every_group() -> None:
    out = subprocess.run(
        [sys.executable, "-m", "rewardgym", "--help"],
        cwd=REPO_ROOT,
        env={**os.environ, "PYTHONPATH": str(REPO_ROOT), "COLUMNS": "100"},
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    commands = {
        line.split()[1] for line in out.stdout.splitlines() if line.startswith("│ ") and len(line.split()) > 2
    }
    assert {"env", "eval", "config", "model"} <= commands


def test_commands_that_launch_servers_prestart_the_fork_server() -> None:
    from rewardgym.cli.main import _starts_servers

    assert _starts_servers(["env", "start", "--config", "env.yaml"])
    assert _starts_servers(["--debug", "eval", "run", "--input", "rows.jsonl"])
    assert not _starts_servers(["eval", "run", "--no-serve"])
    assert not _starts_servers(["env", "start", "--help"])
    assert not _starts_servers(["env", "status"])
    assert not _starts_servers(["env"])


def test_the_run_command_loads_numpy_only_for_an_adaptive_run() -> None:
    """numpy is ≈ 80 ms of a start-up that every collection pays; only the adaptive rounds need it."""
    found = loaded(
        "from rewardgym.cli.main import _load_commands\n_load_commands(['eval', 'run'])", ["numpy"]
    )
    assert found == {"numpy": False}
    adaptive = loaded("import rewardgym.collect.adaptive", ["numpy"])
    assert adaptive == {"numpy": True}  # the probe itself sees numpy once the rounds are imported
