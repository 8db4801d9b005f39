"""`gym list` / `gym search` over the built-in catalog, `gym --version --json`, and the `ng` alias."""

from __future__ import annotations

from importlib.metadata import entry_points

import orjson

from rewardgym.cli.envlist_cmd import environment_entries
from tests.profile.helpers import cli


def test_list_shows_every_built_in_environment() -> None:
    run = cli("list", "--json")
    assert run.returncode == 0, run.stderr
    assert [e["name"] for e in orjson.loads(run.stdout)] == [e["name"] for e in environment_entries()]
    text = cli("list", "environments")
    assert text.returncode == 0 and text.stdout.splitlines()[0].startswith("code_gen ")
    one = cli("list", "--name", "mcqa", "--json")
    assert orjson.loads(one.stdout)["name"] == "mcqa"
    agents = cli("list", "agents", "--json")
    assert {"name": "simple_agent", "kind": "responses_api_agents"} in orjson.loads(agents.stdout)
    assert cli("list", "benchmarks").stdout.strip() == "No benchmarks are built in."


def test_list_errors_name_the_problem() -> None:
    bad = cli("list", "nope")
    assert bad.returncode == 2 and "unknown kind 'nope'" in bad.stderr
    missing = cli("list", "--name", "mcq")
    assert missing.returncode == 1 and "did you mean 'mcqa'?" in missing.stderr


def test_search_keeps_the_entries_holding_every_term() -> None:
    run = cli("search", "weather", "--json")
    assert run.returncode == 0, run.stderr
    names = [e["name"] for e in orjson.loads(run.stdout)]
    assert "example_single_tool_call" in names and "mcqa" not in names
    both = [e["name"] for e in orjson.loads(cli("search", "WEATHER", "components", "--json").stdout)]
    assert both == ["example_tool_call_multireward"]
    assert cli("search", "no-such-word-anywhere").stdout.strip() == "No environments found."


def test_version_json_and_the_ng_alias() -> None:
    plain = cli("--version")
    assert plain.returncode == 0 and plain.stdout.startswith("rewardgym ")
    info = orjson.loads(cli("--version", "--json").stdout)
    assert info["rewardgym"] == plain.stdout.split()[1]
    assert set(info) == {"rewardgym", "python", "python_path", "installation_path", "dependencies", "system"}
    assert "pydantic" in info["dependencies"] and info["system"]["cpu_count"] >= 1
    scripts = {e.name: e.value for e in entry_points(group="console_scripts")}
    assert scripts["ng"] == scripts["gym"] == "rewardgym.__main__:run"
