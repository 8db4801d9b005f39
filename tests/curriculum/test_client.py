"""The adapters against ``gym curriculum serve`` (a real process on 127.0.0.1) through CurriculumClient."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch
from torch.utils.data import DataLoader

from rewardgym.curriculum.adapters.client import CurriculumClient
from rewardgym.curriculum.adapters.sampler import CurriculumSampler
from rewardgym.errors import DataError, ServerError, UsageError
from tests.curriculum.test_server import TOKEN, start
from tests.stubs.processes import free_port

pytestmark = pytest.mark.slow

ROWS = [{"question": f"q{i}"} for i in range(30)]  # the rows test_server.start serves, in its order


def test_a_torch_loader_trains_on_the_service_and_reports_through_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    gym = start(tmp_path, port)
    try:
        client = CurriculumClient(base + "/", token=TOKEN)
        sampler = CurriculumSampler(client, batch_size=5, num_batches=3, group_size=4)
        loader: DataLoader[Any] = DataLoader(ROWS, batch_size=5, sampler=sampler, collate_fn=list)  # type: ignore[arg-type]
        for batch in loader:
            tasks = sampler.served[-1]
            assert [row["question"] for row in batch] == [f"q{t}" for t in tasks]
            assert client.report_groups([(t, [1.0, 0.0, 0.0, 1.0]) for t in tasks]) == [True] * 5
        state = client.state(limit=30)
        assert state["reports"] == 15 and sum(state["tasks"]["reported"]) == 15

        with pytest.raises(DataError, match=r"/report: HTTP 400: .*has no served group waiting") as refused:
            client.report(sampler.served[0][0], [1.0, 1.0, 1.0, 1.0])
        assert TOKEN not in str(refused.value) and TOKEN not in repr(client)
        assert client.state(limit=30)["reports"] == 15  # nothing applied
        with pytest.raises(DataError, match="HTTP 401"):
            CurriculumClient(base, token="wrong").next_batch(1)

        # veRL's sampler on the same service: the token from the environment, never from the config
        from omegaconf import OmegaConf

        from rewardgym.curriculum.adapters.verl import VerlCurriculumSampler
        from tests.curriculum.test_verl import scored

        sampler_config = {
            "url": base,
            "token_env": "CURRICULUM_TEST_TOKEN",
            "group_size": 4,
            "index_key": "row",
        }
        config = OmegaConf.create({"train_batch_size": 5, "sampler": sampler_config})
        with pytest.raises(UsageError, match="CURRICULUM_TEST_TOKEN is not set"):
            VerlCurriculumSampler(ROWS, config)
        monkeypatch.setenv("CURRICULUM_TEST_TOKEN", TOKEN)
        verl_sampler = VerlCurriculumSampler(ROWS, config)
        tasks = list(verl_sampler)[:5]
        prompts = {"row": np.array(tasks, dtype=object), "input_ids": torch.zeros(5, 3, dtype=torch.long)}
        verl_sampler.update(scored(prompts, index_key="row"))
        assert client.state(limit=30)["reports"] == 20
        with pytest.raises(UsageError, match="'policy' is the service's setting"):
            VerlCurriculumSampler(ROWS, OmegaConf.merge(config, {"sampler": {"policy": "uniform"}}))
    finally:
        gym.kill()
    with pytest.raises(ServerError, match="not reachable"):
        CurriculumClient(base, token=TOKEN, timeout_s=5).next_batch(1)
    with pytest.raises(UsageError, match="must start with http"):
        CurriculumClient("127.0.0.1:9")
