"""``gym config show --agent``: the same agent selector as ``gym env start``, so the pre-flight check shows
what that command would start."""

from __future__ import annotations

from pathlib import Path

import orjson

from tests.profile.helpers import cli


def test_config_show_takes_the_agent_selector(tmp_path: Path) -> None:
    shown = cli("config", "show", "--resources-server", "mcqa", "--agent", "simple_agent", "--allow-missing",
                "--json", cwd=tmp_path)  # fmt: skip
    assert shown.returncode == 0, shown.stderr
    assert {"mcqa_simple_agent", "simple_agent"} <= set(orjson.loads(shown.stdout))
    missing = cli("config", "show", "--resources-server", "mcqa", "--agent", "no_such_agent", cwd=tmp_path)
    assert missing.returncode == 1
    assert "no agent config named 'no_such_agent'" in missing.stderr and "simple_agent" in missing.stderr
