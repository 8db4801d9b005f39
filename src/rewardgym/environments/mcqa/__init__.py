"""``mcqa``: multiple-choice question answering (GPQA / MMLU style).

Measures whether the policy's final answer letter equals the gold letter. The answer is read from the last
``\\boxed{}``, an ``Answer:`` line or a row-supplied template regex, depending on the grading mode. Pure logic
lives in :mod:`.verifier` (models + ``verify``), :mod:`.extraction` (letter extraction) and :mod:`.metrics`
(which score fields the aggregate metrics use); :mod:`.app` serves them (imported here so that the registry
finds ``resources_servers/mcqa``).
"""

from rewardgym.environments.mcqa.app import MCQAServer

__all__ = ["MCQAServer"]
