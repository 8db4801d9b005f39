"""Unknown config keys are an error with "did you mean", naming where they came from (docs/config.md)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml

from rewardgym.cli.main import main
from rewardgym.config import GymConfig, load_config
from rewardgym.config.known_keys import check_unknown_keys, referenced_keys
from rewardgym.errors import ConfigError
from tests.config.conftest import WriteFile
from tests.conftest import REPO_ROOT

MCQA = """
mcqa:
  resources_servers:
    mcqa: {entrypoint: app.py, domain: knowledge}
"""


def _load(tmp_path: Path, files: list[str], overrides: list[str]) -> GymConfig:
    return load_config(files, overrides, cwd=tmp_path, check_keys=True)


def test_mistyped_override_is_an_error_with_a_suggestion(tmp_path: Path, write: WriteFile) -> None:
    write("mcqa.yaml", MCQA)
    with pytest.raises(ConfigError) as caught:
        _load(tmp_path, ["mcqa.yaml"], ["++num_repeat=3"])
    message = str(caught.value)
    assert message.startswith(
        "unknown top-level key 'num_repeat' (from the override ++num_repeat=…) (did you mean 'num_repeats'?)"
    )
    assert "'Unknown keys'" in message


def test_the_library_default_does_not_check(tmp_path: Path, write: WriteFile) -> None:
    write("mcqa.yaml", MCQA)
    cfg = load_config(["mcqa.yaml"], ["++num_repeat=3"], cwd=tmp_path)
    assert cfg.get("num_repeat") == 3


def test_every_unknown_key_is_named_with_its_file_and_line(tmp_path: Path, write: WriteFile) -> None:
    write("mcqa.yaml", MCQA + "\n# run settings\nlimt: 3\n")
    write("env.yaml", "policy_model_name: m\nfail_fst: true\n")
    with pytest.raises(ConfigError) as caught:
        _load(tmp_path, ["mcqa.yaml"], [])
    message = str(caught.value)
    assert (
        f"unknown top-level key 'limt' (from {tmp_path / 'mcqa.yaml'}:6) (did you mean 'limit'?)" in message
    )
    assert (
        f"unknown top-level key 'fail_fst' (from {tmp_path / 'env.yaml'}:2) (did you mean 'fail_fast'?)"
        in (message)
    )


def test_env_yaml_variables_for_other_configs_are_fine(tmp_path: Path, write: WriteFile) -> None:
    """env.yaml serves every config a user runs: its own keys are free, unless close to a known one."""
    write("mcqa.yaml", MCQA)
    write("env.yaml", "judge_base_url: http://127.0.0.1:9/v1\njudge_api_key: sk-judge-123456\n")
    assert _load(tmp_path, ["mcqa.yaml"], []).get("judge_base_url") == "http://127.0.0.1:9/v1"
    # The same key in a config file, or as an override, is unknown there.
    write("judge.yaml", "judge_base_url: x\n")
    with pytest.raises(ConfigError, match="unknown top-level key 'judge_base_url'"):
        _load(tmp_path, ["mcqa.yaml", "judge.yaml"], [])
    with pytest.raises(ConfigError, match=re.escape("(from the override ++judge_base_url=…)")):
        _load(tmp_path, ["mcqa.yaml"], ["++judge_base_url=y"])


def test_the_last_source_is_named(tmp_path: Path, write: WriteFile) -> None:
    write("a.yaml", "max_atempts: 2\n")
    write("b.yaml", "# b\nmax_atempts: 3\n")
    with pytest.raises(ConfigError, match=re.escape(f"(from {tmp_path / 'b.yaml'}:2)")):
        _load(tmp_path, ["a.yaml", "b.yaml"], [])
    with pytest.raises(ConfigError, match=re.escape("(from the override ++max_atempts=…)")):
        _load(tmp_path, ["a.yaml", "b.yaml"], ["++max_atempts=4"])


def test_misspelt_server_kind_is_named(tmp_path: Path, write: WriteFile) -> None:
    write("x.yaml", "my_env:\n  resource_servers:\n    mcqa: {}\n")
    with pytest.raises(
        ConfigError, match=r"misspelt kind 'resource_servers' \(did you mean 'resources_servers'\?\)"
    ):
        _load(tmp_path, ["x.yaml"], [])


def test_variables_instances_and_known_settings_are_fine(tmp_path: Path, write: WriteFile) -> None:
    write(
        "vars.yaml",
        """
        judge_url: http://127.0.0.1:9/v1
        shared: {domain: knowledge}
        base_env: {entrypoint: app.py}
        mcqa:
          resources_servers:
            mcqa:
              _copy: base_env
              domain: ${shared.domain}
              note: ${oc.env:HOME,x}-${judge_url}
        num_repeats: {a: 2, _default: 1}
        wandb_project: p
        rollout_timeout_s: 60
        """,
    )
    cfg = _load(tmp_path, ["vars.yaml"], ["++interleave_repeats=true", "++agent_fill_missing=true"])
    assert cfg.get("judge_url") == "http://127.0.0.1:9/v1"


def test_referenced_keys() -> None:
    data = {
        "a": "${x.y} ${oc.env:HOME,${z}} ${w[0]}",
        "b": {"_inherit_from": "t.u", "c": ["${copy:v.q}"]},
        "d": "${oc.env:NOT_A_KEY}",
    }
    assert referenced_keys(data) == {"x", "z", "w", "t", "v"}


def test_allow_unknown_keys_turns_the_error_into_a_warning(tmp_path: Path, write: WriteFile) -> None:
    write("mcqa.yaml", MCQA)
    cfg = _load(tmp_path, ["mcqa.yaml"], ["++num_repeat=3", "++allow_unknown_keys=true"])
    assert any("'num_repeat'" in w and "ignored: allow_unknown_keys is set" in w for w in cfg.warnings)


def test_gym_config_show_exits_non_zero_naming_the_key(
    tmp_path: Path, write: WriteFile, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    write("mcqa.yaml", MCQA)
    monkeypatch.chdir(tmp_path)
    code = main(["config", "show", "--config", "mcqa.yaml", "++num_repeat=3"])
    out, err = capsys.readouterr()
    assert code == 1
    assert out == ""
    assert err.startswith("Error: unknown top-level key 'num_repeat' (from the override ++num_repeat=…)")
    assert err.count("\n") == 1


def test_unknown_instance_field_suggests_the_field(
    tmp_path: Path, write: WriteFile, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    write("mcqa.yaml", MCQA)
    monkeypatch.chdir(tmp_path)
    code = main(["config", "show", "--config", "mcqa.yaml", "++mcqa.resources_servers.mcqa.grading_mod=x"])
    err = capsys.readouterr().err
    assert code == 1
    assert (
        "mcqa.grading_mod: unknown field (not a setting of this server; did you mean 'grading_mode'?) "
        "(from the override ++mcqa.resources_servers.mcqa.grading_mod=…)"
    ) in err


def test_unknown_instance_field_in_a_file_names_file_and_line(
    tmp_path: Path, write: WriteFile, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    write(
        "mcqa.yaml",
        MCQA.rstrip() + "\nextra:\n  resources_servers:\n    mcqa:\n      http: {max_attemps: 3}\n",
    )
    monkeypatch.chdir(tmp_path)
    assert main(["config", "show", "--config", "mcqa.yaml"]) == 1
    err = capsys.readouterr().err
    assert (
        "extra.http.max_attemps: unknown field (not a setting of this server; did you mean 'max_attempts'?) "
        f"(from {tmp_path / 'mcqa.yaml'}:7)"
    ) in err


def test_origin_of_values(tmp_path: Path, write: WriteFile) -> None:
    write("mcqa.yaml", MCQA)
    cfg = _load(tmp_path, ["mcqa.yaml"], ["++limit=3"])
    assert cfg.origin(["mcqa", "resources_servers", "mcqa", "domain"]) == f"from {tmp_path / 'mcqa.yaml'}:3"
    assert cfg.origin(["limit"]) == "from the override ++limit=…"
    assert cfg.origin(["nothing", "here"]) is None


def _shipped_configs() -> list[Path]:
    roots = [REPO_ROOT / "src" / "rewardgym", REPO_ROOT / "tests" / "data", REPO_ROOT / "benchmarks"]
    found = [p for root in roots for p in root.rglob("*.yaml") if "configs" in p.parts or "data" in p.parts]
    return sorted(p for p in found if p.name != "prompt.yaml")


def test_every_shipped_config_has_only_known_keys() -> None:
    configs = _shipped_configs()
    assert len(configs) >= 15
    for path in configs:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
        if isinstance(data, dict):
            check_unknown_keys(data)  # raises naming the key


def test_every_config_example_in_the_docs_has_only_known_keys() -> None:
    checked = 0
    for page in [REPO_ROOT / "README.md", *sorted((REPO_ROOT / "docs").rglob("*.md"))]:
        for block in re.findall(r"```ya?ml\n(.*?)```", page.read_text(encoding="utf-8"), re.S):
            try:
                data = yaml.safe_load(block)
            except yaml.YAMLError:
                continue  # a fragment with placeholders, not a config
            if isinstance(data, dict):
                check_unknown_keys(data)
                checked += 1
    assert checked >= 3


def test_every_key_a_command_reads_is_known() -> None:
    # Tracker keys (gym eval run / profile), the ray: block, adaptive and interleave settings: a setting some
    # command reads must never be refused as unknown.
    from rewardgym.cli.run_trackers import TRACKER_KEYS
    from rewardgym.config.known_keys import KNOWN_SETTINGS

    for key in (
        *TRACKER_KEYS,
        "ray",
        "interleave_repeats",
        "agent_fill_missing",
        "num_repeats",
        "auth_token",
    ):
        assert key in KNOWN_SETTINGS, key
