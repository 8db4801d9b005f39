"""Registry of verifiable instructions (IFEval + open-instruct IFEvalG ids), keyed by instruction id.

Use :func:`evaluate` to check one ``(instruction_id, kwargs)`` pair against a text; :data:`REGISTRY`
lists every supported id. Importing this package registers all checks.
"""

from rewardgym.environments.instruction_following.instructions import (
    checks_ifeval,
    checks_open_instruct,
)
from rewardgym.environments.instruction_following.instructions.base import REGISTRY, Instruction, evaluate

__all__ = ["REGISTRY", "Instruction", "checks_ifeval", "checks_open_instruct", "evaluate"]
