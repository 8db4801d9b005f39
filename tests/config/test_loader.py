"""load_config: precedence, include trees, env.yaml, interpolation, directives and file errors."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from rewardgym.config import load_config
from rewardgym.errors import ConfigError
from tests.config.conftest import WriteFile


def test_precedence_cli_env_later_earlier_included(tmp_path: Path, write: WriteFile) -> None:
    write("inc.yaml", "p1: inc\np2: inc\np3: inc\np4: inc\np5: inc\n")
    write("early.yaml", "config_paths: [inc.yaml]\np2: early\np3: early\np4: early\np5: early\n")
    write("late.yaml", "p3: late\np4: late\np5: late\n")
    write("env.yaml", "p4: env\np5: env\n")
    cfg = load_config(["early.yaml", "late.yaml"], ["++p5=cli"], cwd=tmp_path)
    assert [cfg.get(f"p{i}") for i in range(1, 6)] == ["inc", "early", "late", "env", "cli"]
    assert cfg.config_files == tuple(tmp_path / n for n in ("inc.yaml", "early.yaml", "late.yaml"))
    assert cfg.get("config_paths") == [str(tmp_path / n) for n in ("inc.yaml", "early.yaml", "late.yaml")]


def test_includer_wins_over_included_even_when_listed_last(tmp_path: Path, write: WriteFile) -> None:
    write("inc.yaml", "k: included\nonly_inc: 1\n")
    write("top.yaml", "k: top\nconfig_paths: [inc.yaml]\n")
    cfg = load_config(["top.yaml"], cwd=tmp_path)
    assert cfg.get("k") == "top"
    assert cfg.get("only_inc") == 1


def test_recursive_includes_duplicate_loaded_once_with_warning(
    tmp_path: Path, write: WriteFile, caplog: pytest.LogCaptureFixture
) -> None:
    write("c.yaml", "who: c\nc_only: true\n")
    write("b.yaml", "config_paths: [c.yaml]\nwho: b\n")
    write("a.yaml", "config_paths: [b.yaml, c.yaml]\n")
    with caplog.at_level(logging.WARNING, logger="rewardgym.config"):
        cfg = load_config(["a.yaml"], cwd=tmp_path)
    assert cfg.config_files == (tmp_path / "c.yaml", tmp_path / "b.yaml", tmp_path / "a.yaml")
    # c.yaml is merged once, at its first (deepest) position, so b.yaml still wins over it.
    assert cfg.get("who") == "b"
    assert len(cfg.warnings) == 1
    assert "c.yaml" in cfg.warnings[0]
    assert "more than once" in cfg.warnings[0]
    assert any("c.yaml" in r.getMessage() for r in caplog.records)


def test_include_cycle_terminates(tmp_path: Path, write: WriteFile) -> None:
    write("a.yaml", "config_paths: [b.yaml]\nx: a\n")
    write("b.yaml", "config_paths: [a.yaml]\nx: b\n")
    cfg = load_config(["a.yaml"], cwd=tmp_path)
    assert cfg.config_files == (tmp_path / "b.yaml", tmp_path / "a.yaml")
    assert cfg.get("x") == "a"
    assert len(cfg.warnings) == 1


def test_relative_include_resolves_next_to_the_file_first(tmp_path: Path, write: WriteFile) -> None:
    write("shared.yaml", "from: cwd\n")
    write("sub/shared.yaml", "from: sub\n")
    write("sub/only_cwd_user.yaml", "config_paths: [root_only.yaml]\n")
    write("root_only.yaml", "root_only: true\n")
    write("sub/top.yaml", "config_paths: [shared.yaml, only_cwd_user.yaml]\n")
    cfg = load_config(["sub/top.yaml"], cwd=tmp_path)
    assert cfg.get("from") == "sub"
    assert cfg.get("root_only") is True


def test_search_dirs_are_roots_after_cwd(tmp_path: Path, write: WriteFile) -> None:
    write("extra/x.yaml", "where: extra\n")
    cfg = load_config(["x.yaml"], cwd=tmp_path, search_dirs=[Path("extra")])
    assert cfg.get("where") == "extra"
    write("x.yaml", "where: cwd\n")
    assert load_config(["x.yaml"], cwd=tmp_path, search_dirs=[Path("extra")]).get("where") == "cwd"


def test_env_yaml_config_paths_and_cli_config_paths(tmp_path: Path, write: WriteFile) -> None:
    write("from_env.yaml", "a: env_listed\nb: env_listed\n")
    write("from_flag.yaml", "b: flag\nc: flag\n")
    write("from_override.yaml", "c: override\n")
    write("env.yaml", "config_paths: [from_env.yaml]\n")
    cfg = load_config(["from_flag.yaml"], ["+config_paths=[from_override.yaml]"], cwd=tmp_path)
    assert (cfg.get("a"), cfg.get("b"), cfg.get("c")) == ("env_listed", "flag", "override")


def test_env_yaml_can_be_disabled(tmp_path: Path, write: WriteFile) -> None:
    write("env.yaml", "k: env\n")
    assert load_config([], cwd=tmp_path).get("k") == "env"
    assert load_config([], cwd=tmp_path, env_yaml=False).get("k") is None


def test_interpolation_across_files_and_oc_env(
    tmp_path: Path, write: WriteFile, monkeypatch: pytest.MonkeyPatch
) -> None:
    write("env.yaml", "policy_model_name: qwen\n")
    write(
        "m.yaml",
        """
        name: ${policy_model_name}
        from_env: ${oc.env:RG_CONFIG_TEST_VAR,fallback}
        nested: {url: "http://${host}:${port}/v1"}
        host: localhost
        port: 8000
        """,
    )
    monkeypatch.delenv("RG_CONFIG_TEST_VAR", raising=False)
    cfg = load_config(["m.yaml"], cwd=tmp_path)
    assert cfg.get("name") == "qwen"
    assert cfg.get("from_env") == "fallback"
    assert cfg.get("nested.url") == "http://localhost:8000/v1"
    monkeypatch.setenv("RG_CONFIG_TEST_VAR", "from-environment")
    assert load_config(["m.yaml"], cwd=tmp_path).get("from_env") == "from-environment"


def test_to_dict_resolved_and_unresolved(tmp_path: Path, write: WriteFile) -> None:
    write("m.yaml", "a: 1\nb: ${a}\n")
    cfg = load_config(["m.yaml"], cwd=tmp_path)
    assert cfg.to_dict()["b"] == 1
    assert cfg.to_dict(resolve=False)["b"] == "${a}"
    cfg.to_dict()["a"] = 99  # a copy: the config itself is unchanged
    assert cfg.get("a") == 1


def test_get_dotted_list_and_default(tmp_path: Path, write: WriteFile) -> None:
    write("m.yaml", "a: {b: [10, {c: 3}]}\n")
    cfg = load_config(["m.yaml"], cwd=tmp_path)
    assert cfg.get("a.b.1.c") == 3
    assert cfg.get("a.b.0") == 10
    assert cfg.get("a.x", "dflt") == "dflt"
    assert cfg.get("head_server.port") == 11000


def test_missing_values_allowed_when_not_required(tmp_path: Path, write: WriteFile) -> None:
    write("m.yaml", "a: ???\nb: ${a}\nc: {d: '???'}\n")
    cfg = load_config(["m.yaml"], cwd=tmp_path, require_complete=False)
    assert cfg.missing == ("a", "c.d")
    assert cfg.get("a") == "???"
    assert cfg.get("b") == "${a}"


def test_all_missing_values_in_one_error(tmp_path: Path, write: WriteFile) -> None:
    write("m.yaml", "a: ???\nb: ${a}\nc: {d: '???'}\nl: [1, '???']\n")
    with pytest.raises(ConfigError) as err:
        load_config(["m.yaml"], cwd=tmp_path)
    message = str(err.value)
    assert "3 required config values are missing" in message
    for hint in ("++a=<value>", "++c.d=<value>", "++l.1=<value>"):
        assert hint in message
    assert "++b=" not in message


def test_unresolved_interpolation_names_key_and_hint(tmp_path: Path, write: WriteFile) -> None:
    write("m.yaml", "outer:\n  url: ${policy_base_url}\n")
    with pytest.raises(ConfigError) as err:
        load_config(["m.yaml"], cwd=tmp_path)
    message = str(err.value)
    assert message.startswith("outer.url:")
    assert "'policy_base_url' is not set" in message
    assert "++policy_base_url=<value>" in message


def test_unset_environment_variable_without_default(
    tmp_path: Path, write: WriteFile, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("RG_CONFIG_UNSET_VAR", raising=False)
    write("m.yaml", "k: ${oc.env:RG_CONFIG_UNSET_VAR}\n")
    with pytest.raises(ConfigError, match="environment variable RG_CONFIG_UNSET_VAR is not set"):
        load_config(["m.yaml"], cwd=tmp_path)


def test_malformed_yaml_names_file_line_and_column(tmp_path: Path, write: WriteFile) -> None:
    path = write("bad.yaml", "ok: 1\nlist: [1, 2\nnext: 3\n")
    with pytest.raises(ConfigError) as err:
        load_config(["bad.yaml"], cwd=tmp_path)
    message = str(err.value)
    assert message.startswith(f"{path}:3:5: malformed YAML")
    assert "\n" not in message


def test_duplicate_yaml_key_is_an_error(tmp_path: Path, write: WriteFile) -> None:
    path = write("dup.yaml", "a: 1\na: 2\n")
    with pytest.raises(ConfigError, match=rf"^{path}:2:1: malformed YAML: found duplicate key"):
        load_config(["dup.yaml"], cwd=tmp_path)


def test_top_level_list_is_an_error(tmp_path: Path, write: WriteFile) -> None:
    write("list.yaml", "- 1\n- 2\n")
    with pytest.raises(ConfigError, match="must be a YAML mapping"):
        load_config(["list.yaml"], cwd=tmp_path)


def test_missing_config_file_names_path_and_search(tmp_path: Path, write: WriteFile) -> None:
    with pytest.raises(ConfigError) as err:
        load_config(["nope.yaml"], cwd=tmp_path, search_dirs=[tmp_path / "extra"])
    message = str(err.value)
    assert "config file not found: 'nope.yaml'" in message
    assert str(tmp_path / "nope.yaml") in message
    assert str(tmp_path / "extra" / "nope.yaml") in message


def test_missing_included_file_names_the_including_file(tmp_path: Path, write: WriteFile) -> None:
    top = write("sub/top.yaml", "config_paths: [gone.yaml]\n")
    with pytest.raises(ConfigError) as err:
        load_config(["sub/top.yaml"], cwd=tmp_path)
    assert f"listed in {top}" in str(err.value)
    assert str(tmp_path / "sub" / "gone.yaml") in str(err.value)


def test_malformed_config_paths_value(tmp_path: Path, write: WriteFile) -> None:
    write("top.yaml", "config_paths: {a: 1}\n")
    with pytest.raises(ConfigError, match="config_paths must be a list of file paths"):
        load_config(["top.yaml"], cwd=tmp_path)


def test_inherit_copy_and_delete_directives(tmp_path: Path, write: WriteFile) -> None:
    write(
        "m.yaml",
        """
        base: {a: 1, b: 2, c: 3}
        template: {x: 1, y: 2}
        child:
          _inherit_from: base
          b: 20
          _delete_key: c
        copied:
          _copy: template
          y: 5
        as_value: ${copy:template}
        """,
    )
    cfg = load_config(["m.yaml"], cwd=tmp_path)
    assert cfg.get("child") == {"a": 1, "b": 20}
    assert cfg.get("base") is None  # _inherit_from moves the source
    assert cfg.get("copied") == {"x": 1, "y": 5}
    assert cfg.get("template") == {"x": 1, "y": 2}  # _copy keeps it
    assert cfg.get("as_value") == {"x": 1, "y": 2}


def test_inherit_from_unknown_key_is_an_error(tmp_path: Path, write: WriteFile) -> None:
    write("m.yaml", "child: {_inherit_from: nowhere, a: 1}\n")
    with pytest.raises(ConfigError, match="child: _inherit_from 'nowhere': no such key"):
        load_config(["m.yaml"], cwd=tmp_path)
