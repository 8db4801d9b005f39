"""Asset selectors: search order, flavors, package fallback and the not-found message."""

from __future__ import annotations

from pathlib import Path

import pytest

from rewardgym.config import available_assets, load_config_from_flags, resolve_asset
from rewardgym.config.assets import PACKAGE_ROOT
from rewardgym.errors import ConfigError
from tests.config.conftest import WriteFile


def test_search_dir_then_cwd(tmp_path: Path, write: WriteFile) -> None:
    cwd_file = write("resources_servers/mcqa_x/configs/mcqa_x.yaml", "a: 1\n")
    extra_file = write("extra/resources_servers/mcqa_x/configs/mcqa_x.yaml", "a: 2\n")
    assert resolve_asset("resources_server", "mcqa_x", cwd=tmp_path) == cwd_file
    assert resolve_asset("resources_server", "mcqa_x", [Path("extra")], cwd=tmp_path) == extra_file.resolve()


def test_flavors_and_kinds(tmp_path: Path, write: WriteFile) -> None:
    flavor = write("resources_servers/eq_x/configs/lc.yaml", "a: 1\n")
    model = write("responses_api_models/vllm_x/configs/vllm_x.yaml", "a: 1\n")
    model_flavor = write("responses_api_models/vllm_x/configs/training.yaml", "a: 1\n")
    agent = write("responses_api_agents/simple_x/configs/simple_x.yaml", "a: 1\n")
    assert resolve_asset("resources_server", "eq_x/lc", cwd=tmp_path) == flavor
    assert resolve_asset("model_type", "vllm_x", cwd=tmp_path) == model
    assert resolve_asset("model_type", "vllm_x/training", cwd=tmp_path) == model_flavor
    assert resolve_asset("agent", "simple_x", cwd=tmp_path) == agent
    assert {"vllm_x", "vllm_x/training"} <= set(available_assets("model_type", cwd=tmp_path))


def test_package_fallback(tmp_path: Path) -> None:
    shipped = sorted(PACKAGE_ROOT.glob("environments/*/configs/*.yaml"))
    if not shipped:
        pytest.skip("no environment configs shipped in the package yet")
    path = shipped[0]
    base = path.parent.parent.name
    name = base if path.stem == base else f"{base}/{path.stem}"
    assert resolve_asset("resources_server", name, cwd=tmp_path) == path


def test_not_found_lists_searched_available_and_suggestion(tmp_path: Path, write: WriteFile) -> None:
    write("resources_servers/my_env/configs/my_env.yaml", "a: 1\n")
    with pytest.raises(ConfigError) as err:
        resolve_asset("resources_server", "my_evn", [Path("extra")], cwd=tmp_path)
    message = str(err.value)
    assert message.startswith("no resources server config named 'my_evn' (did you mean 'my_env'?)")
    assert str(tmp_path / "extra" / "resources_servers" / "my_evn" / "configs" / "my_evn.yaml") in message
    assert str(tmp_path / "resources_servers" / "my_evn" / "configs" / "my_evn.yaml") in message
    assert str(PACKAGE_ROOT / "environments" / "my_evn" / "configs" / "my_evn.yaml") in message
    assert "available: " in message
    assert "my_env" in message.split("available: ", 1)[1]


@pytest.mark.parametrize("name", ["../etc", "a/b/c", "/abs", "", "a/.."])
def test_names_are_not_paths(tmp_path: Path, name: str) -> None:
    with pytest.raises(ConfigError, match="invalid resources server name"):
        resolve_asset("resources_server", name, cwd=tmp_path)


def test_selectors_feed_load_config_before_config_files(tmp_path: Path, write: WriteFile) -> None:
    write("responses_api_models/m_x/configs/m_x.yaml", "who: model\nmodel_only: 1\n")
    write("resources_servers/r_x/configs/r_x.yaml", "who: resources\n")
    write("mine.yaml", "who: mine\n")
    cfg = load_config_from_flags(resources_servers=["r_x"], model_types=["m_x"], cwd=tmp_path)
    assert cfg.get("who") == "resources"
    assert cfg.get("model_only") == 1
    cfg = load_config_from_flags(
        config_paths=["mine.yaml"], resources_servers=["r_x"], model_types=["m_x"], cwd=tmp_path
    )
    assert cfg.get("who") == "mine"
    assert cfg.get("config_paths") == [
        str(tmp_path / "responses_api_models/m_x/configs/m_x.yaml"),
        str(tmp_path / "resources_servers/r_x/configs/r_x.yaml"),
        str(tmp_path / "mine.yaml"),
    ]
