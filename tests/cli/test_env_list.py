"""``gym env list``: one line per environment, JSON output, and the static reading pinned to the classes."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from rewardgym.cli.envlist_cmd import describe, environment_entries
from rewardgym.cli.main import main
from rewardgym.environments import EnvironmentInfo, catalogue
from rewardgym.registry import lookup
from rewardgym.servers.resources import ResourcesServer
from rewardgym.servers.tools import collect_tools

DECIDED_MODES = {
    "mcqa": "stateless",
    "string_match": "stateless",
    "equivalence_rule": "stateless",
    "instruction_following": "stateless",
    "structured_outputs": "stateless",
    "xlam_fc": "stateless",
    "math_with_judge": "unknown",
}
"""Reverify modes decided for these environments (docs/environments.md)."""


def _run(capsys: pytest.CaptureFixture[str], *args: str) -> str:
    assert main(["env", "list", *args]) == 0
    return capsys.readouterr().out


def test_json_lists_every_environment_with_its_server_facts(capsys: pytest.CaptureFixture[str]) -> None:
    entries = json.loads(_run(capsys, "--json"))
    names = [entry["name"] for entry in entries]
    assert names == sorted(info.name for info in catalogue())
    assert len(names) == 12
    by_name = {entry["name"]: entry for entry in entries}
    for name, mode in DECIDED_MODES.items():
        assert by_name[name]["server"] is True
        assert (by_name[name]["tools"], by_name[name]["reverify_mode"]) == ([], mode)
    assert by_name["mcqa"]["summary"] == "multiple-choice question answering (GPQA / MMLU style)."
    assert all("``" not in entry["summary"] for entry in entries)


def test_text_is_one_aligned_line_per_environment(capsys: pytest.CaptureFixture[str]) -> None:
    lines = _run(
        capsys,
    ).splitlines()
    assert lines[0].split() == ["NAME", "TOOLS", "REVERIFY", "SUMMARY"]
    names = [info.name for info in catalogue()]
    assert [line.split()[0] for line in lines[1:]] == names
    summary_column = lines[0].index("SUMMARY")
    mcqa = next(line for line in lines if line.startswith("mcqa "))
    assert mcqa.split()[1:3] == ["-", "stateless"]
    assert mcqa[summary_column:] == "multiple-choice question answering (GPQA / MMLU style)."


def test_static_reading_equals_the_imported_server_classes() -> None:
    for entry in environment_entries():
        cls = lookup("resources_servers", entry["name"], ResourcesServer)
        assert entry["server"] is True, entry["name"]
        assert entry["tools"] == [spec.name for spec in collect_tools(cls)], entry["name"]
        assert entry["reverify_mode"] == cls.reverify_mode.value, entry["name"]


def _info(folder: Path) -> EnvironmentInfo:
    return EnvironmentInfo("demo", "a ``demo`` environment.", folder)


APP = """
from rewardgym.registry import register
from .verifier import DemoConfig

@register("resources_servers", "demo")
class Demo(ResourcesServer[Any]):
    reverify_mode = DemoConfig.REVERIFY_MODE

    @tool
    async def first(self, args: A) -> None: ...

    @tool(name="renamed", description="")
    async def second(self, args: A) -> None: ...

    async def helper(self) -> None: ...
"""
VERIFIER = """
class DemoConfig(BaseModel):
    REVERIFY_MODE: ClassVar[ReverifyMode] = ReverifyMode.UNSUPPORTED
"""


def test_describe_reads_tools_and_a_mode_defined_in_another_module(tmp_path: Path) -> None:
    (tmp_path / "app.py").write_text(APP, encoding="utf-8")
    (tmp_path / "verifier.py").write_text(VERIFIER, encoding="utf-8")
    entry: dict[str, Any] = describe(_info(tmp_path))
    assert entry == {
        "name": "demo",
        "summary": "a demo environment.",
        "server": True,
        "tools": ["first", "renamed"],
        "reverify_mode": "unsupported",
    }


def test_describe_without_server_or_with_broken_source(tmp_path: Path) -> None:
    entry = describe(_info(tmp_path))
    assert (entry["server"], entry["tools"], entry["reverify_mode"]) == (False, [], None)
    (tmp_path / "app.py").write_text(APP.replace('"demo"', '"other"'), encoding="utf-8")
    assert describe(_info(tmp_path))["server"] is False
    (tmp_path / "app.py").write_text("class Broken(:\n", encoding="utf-8")
    broken = describe(_info(tmp_path))
    assert broken["server"] is False and broken["error"].startswith("SyntaxError")
