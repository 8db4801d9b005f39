"""`gym dataset render` / `gym dataset collate`: NeMo Gym's local dataset commands, offline."""

from __future__ import annotations

from pathlib import Path

import orjson

from rewardgym.cli.run_settings import load_prompt_config
from rewardgym.collect.materialize import MaterializeOptions, iter_materialized
from tests.conftest import EXAMPLES
from tests.profile.helpers import cli

_INDEX_KEYS = ("agent_ref", "_ng_task_index", "_ng_rollout_index")


def test_render_is_what_a_run_would_send(tmp_path: Path) -> None:
    rows = [
        {"responses_create_params": {"temperature": 0.5}, "q": "2+2?"},
        {"responses_create_params": {}, "q": "é"},
    ]
    (tmp_path / "in.jsonl").write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in rows))
    (tmp_path / "p.yaml").write_text('user: "Answer: {q}"\nsystem: be brief\n')
    args = ("dataset", "render", "-i", "in.jsonl", "--prompt-config", "p.yaml", "-o", "out.jsonl")
    run = cli(*args, cwd=tmp_path)
    assert run.returncode == 0, run.stderr
    rendered = [orjson.loads(line) for line in (tmp_path / "out.jsonl").read_bytes().splitlines()]
    options = MaterializeOptions(agent_name="a", prompt_config=load_prompt_config(tmp_path / "p.yaml"))
    expected = [
        {k: v for k, v in row.items() if k not in _INDEX_KEYS}
        for row in iter_materialized(tmp_path / "in.jsonl", options)
    ]
    assert rendered == expected
    assert rendered[0]["responses_create_params"]["input"][1] == {"role": "user", "content": "Answer: 2+2?"}


def test_render_refuses_a_row_with_an_input_and_writes_nothing(tmp_path: Path) -> None:
    (tmp_path / "in.jsonl").write_text('{"responses_create_params": {"input": "hi"}, "q": 1}\n')
    (tmp_path / "p.yaml").write_text('user: "{q}"\n')
    args = ("dataset", "render", "-i", "in.jsonl", "--prompt-config", "p.yaml", "-o", "out.jsonl")
    run = cli(*args, cwd=tmp_path)
    assert run.returncode == 1 and "in.jsonl:1: row already has responses_create_params.input" in run.stderr
    assert not (tmp_path / "out.jsonl").exists()


def test_collate_writes_one_file_per_split(tmp_path: Path) -> None:
    common = ("dataset", "collate", "--resources-server", "mcqa")
    run = cli(*common, "--mode", "example_validation", "--output-dir", "prep", cwd=tmp_path)
    assert run.returncode == 0, run.stderr
    rows = [orjson.loads(line) for line in (tmp_path / "prep" / "example.jsonl").read_bytes().splitlines()]
    source = [orjson.loads(line) for line in (EXAMPLES / "mcqa" / "example.jsonl").read_bytes().splitlines()]
    assert len(rows) == len(source)
    assert rows[0]["agent_ref"] == {"type": "responses_api_agents", "name": "mcqa_simple_agent"}
    assert {k: v for k, v in rows[0].items() if k != "agent_ref"} == {
        k: v for k, v in source[0].items() if k != "agent_ref"
    }
    none = cli(*common, "--split", "train", "--output-dir", "p2", cwd=tmp_path)
    assert none.returncode == 2 and "no dataset of split 'train'" in none.stderr
    both = cli(*common, "--split", "train", "--mode", "example_validation", "--output-dir", "x", cwd=tmp_path)
    assert both.returncode == 2 and "one of --split and --mode" in both.stderr
