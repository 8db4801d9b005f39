"""A training simulator for curriculum policies: latent skills, learning only from informative groups.

The model (docs/curriculum.md § "The simulator" states it for readers):

- **Tasks.** Each task belongs to one of ``skills`` latent skills and has a difficulty ``d ~ N(0, σ_d)``.
  Its pass probability under the current policy is ``p = sigmoid(θ_k − d)``, ``θ_k`` the policy's ability
  at the task's skill (initially ``N(μ_θ, σ_θ)``). A share ``unsolvable`` of the tasks has ``p = 0``
  forever (a wrong reference answer, an impossible constraint: no training helps).
- **Rollouts.** A group of ``G`` rollouts of task i has Binomial(G, p_i) passes (reward 1, else 0).
- **Learning.** After each training step, every *informative* group (passes and fails both present) of
  the step teaches: its skill's ability rises by ``lr_skill`` (transfer to the related tasks — the whole
  skill, held-out tasks included) and its own difficulty falls by ``lr_task`` (what the policy learns of
  that very prompt). All-equal groups teach nothing: GRPO's advantage of such a group is zero. Each
  informative group teaches the same amount, as GRPO's advantage is normalised by the group's std.
- **Prompt value consistent over steps.** p moves only by these small steps, so a task that was all-pass
  or all-fail stays so for a while — the temporal consistency GRESO measured; :func:`consistency`
  reports it (P(all-equal at a task's next serve | all-equal at this one) under ``uniform``).
- **The trainer.** Every policy gets the same rollout budget. A step wants ``batch`` informative groups:
  the trainer asks the curriculum for ``batch − have`` tasks, rolls out, reports, drops the all-equal
  groups and asks again until the batch is full (DAPO's dynamic sampling; at most ``max_rounds``
  rounds). ``uniform`` alone trains on whatever one batch gave (plain GRPO).
- **Held-out pass rate:** the mean p over ``heldout`` tasks drawn like the training ones, never served.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from rewardgym.curriculum import Curriculum


@dataclass(frozen=True)
class World:
    """The simulator's settings (module doc)."""

    skills: int = 16
    tasks: int = 4000
    heldout: int = 1000
    unsolvable: float = 0.25
    ability_mean: float = 1.0
    ability_sd: float = 1.0
    difficulty_sd: float = 3.5
    lr_skill: float = 0.002
    lr_task: float = 0.03
    group: int = 8
    batch: int = 64
    max_rounds: int = 8
    budget: int = 200_000
    target: float = 0.5


@dataclass
class Run:
    """One policy's training in one world (seed)."""

    policy: str
    seed: int
    rollouts: int = 0
    groups: int = 0
    informative: int = 0
    steps: int = 0
    heldout_start: float = math.nan
    heldout_end: float = math.nan
    rollouts_to_target: int | None = None
    steps_to_target: int | None = None
    distinct: int = 0
    """Tasks served at least once (how diverse the training data was)."""
    curve: list[tuple[int, float]] = field(default_factory=list)

    @property
    def informative_share(self) -> float:
        return self.informative / self.groups if self.groups else math.nan

    @property
    def rollouts_per_informative(self) -> float:
        return self.rollouts / self.informative if self.informative else math.inf


class Policy_:
    """The latent state of one simulated policy in one world."""

    def __init__(self, world: World, seed: int) -> None:
        rng = np.random.default_rng([seed, 1])
        total = world.tasks + world.heldout
        self.world = world
        self.ability = rng.normal(world.ability_mean, world.ability_sd, world.skills)
        self.skill = rng.integers(world.skills, size=total)
        self.difficulty = rng.normal(0.0, world.difficulty_sd, total)
        self.solvable = rng.random(total) >= world.unsolvable

    def p(self, tasks: np.ndarray) -> np.ndarray:
        logit = self.ability[self.skill[tasks]] - self.difficulty[tasks]
        return np.where(self.solvable[tasks], 1.0 / (1.0 + np.exp(-logit)), 0.0)

    def heldout_rate(self) -> float:
        return float(self.p(np.arange(self.world.tasks, self.world.tasks + self.world.heldout)).mean())

    def learn(self, tasks: list[int]) -> None:
        if not tasks:
            return
        index = np.asarray(tasks, dtype=np.int64)
        np.add.at(self.ability, self.skill[index], self.world.lr_skill)
        np.subtract.at(self.difficulty, index, self.world.lr_task)


def train(
    world: World,
    policy: str,
    seed: int,
    *,
    half_life: float | None = None,
    carry: float | None = None,
    options: dict[str, Any] | None = None,
    record_consistency: bool = False,
) -> tuple[Run, float]:
    """Train one policy in the world of ``seed``; returns the run and (optionally) the consistency."""
    sim = Policy_(world, seed)
    rng = np.random.default_rng([seed, 2])
    extra: dict[str, Any] = {} if half_life is None else {"half_life": half_life}
    if carry is not None:
        extra["carry"] = carry
    cur = Curriculum(
        world.tasks, policy=policy, group_size=world.group, seed=seed, policy_options=options, **extra
    )
    run = Run(policy, seed, heldout_start=sim.heldout_rate())
    fill = policy != "uniform"
    group = world.group
    rewards = [[1.0] * k + [0.0] * (group - k) for k in range(group + 1)]
    last_equal: dict[int, bool] = {}
    same = pairs = 0
    while run.rollouts < world.budget:
        collected: list[int] = []
        for _ in range(world.max_rounds if fill else 1):
            want = world.batch - len(collected)
            left = (world.budget - run.rollouts) // group
            served = cur.next_indices(max(1, min(want, left)))[:left]  # over-sampling stops at the budget
            passes = rng.binomial(group, sim.p(served))
            for task, k in zip(served.tolist(), passes.tolist(), strict=True):
                informative = cur.report(task, rewards[k])
                run.groups += 1
                run.informative += informative
                if informative and len(collected) < world.batch:
                    collected.append(task)
                if record_consistency:
                    if task in last_equal:
                        pairs += last_equal[task]
                        same += last_equal[task] and not informative
                    last_equal[task] = not informative
            run.rollouts += group * served.shape[0]
            if len(collected) >= world.batch or run.rollouts >= world.budget:
                break
        sim.learn(collected)
        run.steps += 1
        rate = sim.heldout_rate()
        run.curve.append((run.rollouts, rate))
        if run.rollouts_to_target is None and rate >= world.target:
            run.rollouts_to_target, run.steps_to_target = run.rollouts, run.steps
    run.heldout_end = sim.heldout_rate()
    run.distinct = int(np.count_nonzero(cur.arrays.served))
    return run, (same / pairs if pairs else math.nan)


def small(world: World | None = None) -> World:
    """A configuration small enough for CI (a few CPU seconds for every policy)."""
    return replace(world or World(), tasks=1200, heldout=300, budget=48_000, batch=32, lr_skill=0.006)
