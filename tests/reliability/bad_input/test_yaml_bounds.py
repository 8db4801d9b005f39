"""Every YAML document goes through the bounded loader (:mod:`rewardgym.io.yaml_bounds`).

The CLI cases (config files, included files, env.yaml, overrides, --prompt-config) are in
``cases/yaml_bounds.yaml``; here: the loader itself — same result as PyYAML / OmegaConf on ordinary
documents, refusal of bombs in linear time — the size cap on files, and model output (structured_outputs).
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest
import yaml
from omegaconf import OmegaConf

from rewardgym.config.files import load_yaml_file
from rewardgym.environments.structured_outputs.parsing import parse_text
from rewardgym.errors import ConfigError
from rewardgym.io.yaml_bounds import MAX_DOCUMENT_BYTES, YamlLimitError, load_bounded, load_bounded_file
from tests.conftest import REPO_ROOT


def bomb(levels: int, width: int = 9) -> str:
    lines = [f"l0: &l0 [{', '.join(['x'] * width)}]"]
    for level in range(1, levels):
        lines.append(f"l{level}: &l{level} [{', '.join([f'*l{level - 1}'] * width)}]")
    return "\n".join(lines) + "\n"


def test_ordinary_documents_load_exactly_as_pyyaml_and_omegaconf_load_them() -> None:
    configs = sorted((REPO_ROOT / "src/rewardgym").rglob("configs/*.yaml"))
    assert len(configs) >= 12
    for path in configs:
        assert OmegaConf.to_container(load_yaml_file(path)) == OmegaConf.to_container(OmegaConf.load(path))
    anchors = "base: &b {x: 1, y: [1, 2]}\nmerged:\n  <<: *b\n  y: 3\nlist: [*b, *b]\nwhen: 2024-01-01\n"
    assert load_bounded(anchors) == yaml.safe_load(anchors)
    assert load_bounded("") is None
    assert load_bounded(bomb(4)) == yaml.safe_load(bomb(4))  # 9^4 = 6,561 leaves: under 100,000


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        (bomb(9), "over the limit of 100,000 (an alias bomb?)"),
        (bomb(30, width=2), "over the limit of 100,000"),  # 2^30 through 30 short lines
        ("a: &a [1, *a]\n", "recursive structure"),
        ("a: &a {k: *a}\n", "recursive structure"),
        ("[" * 150 + "]" * 150, "nested more than 100 levels deep"),
        ("[" * 5000 + "]" * 5000, "nested more than 100 levels deep"),  # would be a RecursionError
    ],
)
def test_bombs_are_refused_at_once_with_the_limit_named(text: str, problem: str) -> None:
    start = time.process_time()
    with pytest.raises(YamlLimitError) as caught:
        load_bounded(text)
    assert problem in str(caught.value)
    # Linear in the distinct nodes; the 9-level bomb is 9^9 nodes (minutes if expanded). CPU time of this
    # process, not wall time: a loaded machine stretches the latter (2.2 s was seen), never the former.
    assert time.process_time() - start < 2.0


def test_the_refusal_names_the_line_of_the_node_over_the_limit() -> None:
    with pytest.raises(YamlLimitError) as caught:
        load_bounded(bomb(9))
    assert caught.value.problem_mark is not None
    assert caught.value.problem_mark.line + 1 == 6  # l5 = 9^6 = 531,441 leaves, the first over 100,000
    assert str(caught.value).startswith("line 6, column 5: this node expands to ")


def test_a_file_over_the_size_cap_is_refused_without_reading_it_whole(tmp_path: Path) -> None:
    big = tmp_path / "big.yaml"
    with big.open("wb") as handle:
        handle.write(b"k: '")
        handle.write(b"x" * MAX_DOCUMENT_BYTES)
        handle.write(b"'\n")
    with pytest.raises(YamlLimitError, match="larger than 16,777,216 bytes"):
        load_bounded_file(big)
    with pytest.raises(ConfigError, match=rf"^{big}: YAML over a limit: the file is larger than"):
        load_yaml_file(big)


def test_a_config_file_holding_a_bomb_is_one_config_error_naming_file_line(tmp_path: Path) -> None:
    path = tmp_path / "bomb.yaml"
    path.write_text(bomb(5), encoding="utf-8")
    start = time.process_time()
    with pytest.raises(ConfigError) as caught:
        load_yaml_file(path)
    assert str(caught.value).startswith(f"{path}:5:5: YAML over a limit: this node expands to 66,430 nodes")
    # The same 5 lines took 41 s through `gym config show` before the bound (OmegaConf walked 66k nodes).
    assert time.process_time() - start < 1.0  # CPU time: holds on a loaded machine


def test_a_model_answer_that_is_a_yaml_bomb_is_refused_by_structured_outputs() -> None:
    with pytest.raises(YamlLimitError):
        parse_text(bomb(9), "yaml")
    assert parse_text("a: [1, 2]\nb: yes\n", "yaml") == {"a": [1, 2], "b": True}
