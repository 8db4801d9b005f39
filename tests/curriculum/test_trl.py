"""TRL's GRPOTrainer trains a tiny local model for a few steps on the CPU with prompts from the curriculum.

The model is a randomly initialised two-layer Llama over a six-token vocabulary (tests/curriculum/tiny_lm.py;
no hub access: HF_HUB_OFFLINE=1); each completion is one token and is graded by the ``string_match``
environment's verifier. Half the tasks expect ``a`` (the untrained model writes it about one time in six),
half expect ``c``, a character it cannot write: their groups are never informative.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from rewardgym.curriculum import Curriculum
from rewardgym.environments.string_match.verifier import StringMatchConfig, StringMatchVerifyRequest, verify
from rewardgym.testing.items import message, response
from tests.curriculum import tiny_lm

TASKS = 8
SOLVABLE = range(4)
GROUP = 4
STEPS = 8
SEED = 5


def _rows() -> list[dict[str, Any]]:
    return [
        {
            "prompt": f"{'ab'[i % 2]}{'ab'[i // 2 % 2]}{'ab'[i // 4 % 2]}?",
            "expected_answer": "a" if i in SOLVABLE else "c",
            "extraction_mode": "full_response",
            "responses_create_params": {"input": [{"role": "user", "content": "?"}]},
        }
        for i in range(TASKS)
    ]


def string_match(*, prompts: list[str], completions: list[str], **columns: Any) -> list[float]:
    """The rewards of the ``string_match`` verifier, one per completion."""
    del prompts
    rewards = []
    for k, text in enumerate(completions):
        row = {
            key: columns[key][k] for key in ("expected_answer", "extraction_mode", "responses_create_params")
        }
        body = StringMatchVerifyRequest.model_validate({**row, "response": response([message(text)])})
        rewards.append(verify(body, StringMatchConfig()).reward)
    return rewards


def test_grpo_trains_on_the_curriculum_and_its_rewards_change_what_it_serves(tmp_path: Path) -> None:
    import torch
    from datasets import Dataset
    from trl.trainer.grpo_config import GRPOConfig

    from rewardgym.curriculum.adapters.trl import CurriculumGRPOTrainer, reporting

    torch.set_num_threads(1)
    tokenizer = tiny_lm.tokenizer("ab?")
    model = tiny_lm.model(len(tokenizer), seed=SEED)
    before = {name: p.detach().clone() for name, p in model.named_parameters()}
    rows = _rows()
    curriculum = Curriculum(rows, group_size=GROUP, seed=SEED)
    args = GRPOConfig(
        output_dir=str(tmp_path),
        per_device_train_batch_size=2 * GROUP,
        per_device_eval_batch_size=2 * GROUP,
        num_generations=GROUP,
        max_completion_length=1,
        max_steps=STEPS,
        learning_rate=0.05,
        use_cpu=True,
        report_to="none",
        save_strategy="no",
        logging_strategy="no",
        disable_tqdm=True,
        dataloader_num_workers=0,
        seed=SEED,
    )
    trainer = CurriculumGRPOTrainer(
        model=model,
        args=args,
        processing_class=tokenizer,
        train_dataset=Dataset.from_list([curriculum.row(i) for i in range(TASKS)]),
        reward_funcs=[reporting(string_match, curriculum, GROUP)],
        curriculum=curriculum,
    )
    trainer.train()

    sampler = trainer.curriculum_sampler
    assert sampler is not None
    served = sampler.served
    state = curriculum.state()
    assert state.reports == STEPS * 2  # every group of every step reached the curriculum
    assert STEPS <= len(served) <= STEPS + 1  # (the loader draws at most one batch ahead)
    solvable = [task in SOLVABLE for task in range(TASKS)]
    assert all(n == 0 for n, ok in zip(state.informative, solvable, strict=True) if not ok)
    assert sum(n for n, ok in zip(state.informative, solvable, strict=True) if ok) > 0
    twin = Curriculum(rows, group_size=GROUP, seed=SEED)  # the same curriculum, never told a reward
    twin_served = [[int(t) for t in twin.next_indices(2)] for _ in served]
    assert served[0] == twin_served[0] and served != twin_served  # the rewards changed what it served …
    later = [task for batch in served[STEPS // 2 :] for task in batch]
    assert sum(task in SOLVABLE for task in later) > len(later) / 2  # … towards the tasks that teach
    assert any(not torch.equal(p, before[name]) for name, p in model.named_parameters())  # it trained
    trainer.evaluate(eval_dataset=Dataset.from_list([curriculum.row(i) for i in (0, 7)]))
    assert curriculum.state().reports == STEPS * 2  # evaluation groups are scored, never reported
    assert os.environ["HF_HUB_OFFLINE"] == "1"  # set by tiny_lm: nothing was fetched from the hub
