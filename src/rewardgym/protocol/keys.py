"""Names of the row keys of the NeMo Gym data contract (materialized inputs, rollouts, profiles)."""

from __future__ import annotations

from typing import Final

TASK_INDEX: Final = "_ng_task_index"
"""Identity of an original task (input line). Kept when present in a row, else assigned per distinct line."""

ROLLOUT_INDEX: Final = "_ng_rollout_index"
"""Repeat number of a rollout within its task, counting from 0."""

ATTEMPT_INDEX: Final = "_ng_attempt_index"
"""How many earlier attempts a re-dispatched rollout had (present only when > 0)."""

ROLLOUT_ID: Final = "_ng_rollout_id"
AGENT_REF: Final = "agent_ref"
SKILLS_REF: Final = "skills_ref"
RESPONSES_CREATE_PARAMS: Final = "responses_create_params"
RESPONSE: Final = "response"
REWARD: Final = "reward"
MASK_SAMPLE: Final = "mask_sample"
ENVIRONMENT_SERVER: Final = "_ng_environment_server"
"""The environment server that ran a rollout (for rewardgym: its agent's NeMo Gym ``legacy_agent`` relay)."""
RESULT_TYPE: Final = "_ng_result_type"
"""That environment server's type (``legacy_agent``)."""
NG_PERF: Final = "ng_perf"
"""Per-rollout turn, tool-call, token and latency figures (docs/reference/contract.md §4.9)."""
FAILURE_CLASS: Final = "_ng_failure_class"
NO_PERSIST: Final = "_ng_no_persist"

ROW_KEYS: Final = (
    TASK_INDEX,
    ROLLOUT_INDEX,
    ATTEMPT_INDEX,
    ROLLOUT_ID,
    RESPONSES_CREATE_PARAMS,
    RESPONSE,
    AGENT_REF,
    SKILLS_REF,
)
"""Data-row keys the config layer never treats as server instances."""
