"""Verifier of ``instruction_following``: does the answer follow every verifiable instruction of its row?

Contract (NeMo Gym semantics):
- The checked text is the **last** output item's ``content[0].text`` when that item has content, else
  ``""`` (a function call, a call output, or a reasoning item without content).
- Each ``(instruction_id, kwargs)`` pair of ``verifier_metadata`` (zipped, so the shorter list wins) is
  checked by :func:`~rewardgym.environments.instruction_following.instructions.evaluate`; anything that
  goes wrong counts as not followed.
- ``binary`` (default): reward 1.0 iff all are followed (an empty list gives 1.0).
  ``fraction``: reward = followed / total (an empty list gives 0.0).
- Legacy rows keep ``instruction_id_list``, ``prompt``, ``kwargs`` and ``grading_mode`` at the top level;
  they are copied into ``verifier_metadata`` when missing there (its own keys win).
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, model_validator

from rewardgym.environments.instruction_following.instructions import evaluate
from rewardgym.protocol import Reasoning, Response, VerifyRequest, VerifyResponse

LEGACY_KEYS = ("instruction_id_list", "prompt", "kwargs", "grading_mode")
"""Top-level row keys that legacy rows carry instead of ``verifier_metadata``."""


class InstructionFollowingConfig(BaseModel):
    """Environment config: NeMo Gym's ``instruction_following`` server reads no fields of its own."""


class VerifierMetadata(BaseModel):  # type: ignore[no-redef]  # a field named ``kwargs`` (pydantic plugin)
    """The instructions of one row."""

    instruction_id_list: list[str]
    """Instruction ids, e.g. ``detectable_format:title``."""
    prompt: str
    """The prompt the instructions were written into (not used for scoring)."""
    kwargs: list[dict[str, Any] | None]
    """Arguments of each instruction, parallel to ``instruction_id_list`` (``null`` means none)."""
    grading_mode: Literal["binary", "fraction"] = "binary"
    """``binary``: 1.0 iff all instructions are followed; ``fraction``: the share followed."""


class InstructionFollowingVerifyRequest(VerifyRequest):
    """A row of ``instruction_following`` plus the episode's final response."""

    id: int
    """Row id (required, not used for scoring and not echoed)."""
    verifier_metadata: VerifierMetadata
    """The instructions; filled from legacy top-level fields when those are present."""

    @model_validator(mode="before")
    @classmethod
    def _migrate_legacy_row(cls, data: Any) -> Any:
        if not isinstance(data, dict):
            return data
        legacy = {key: data[key] for key in LEGACY_KEYS if key in data}
        if not legacy:
            return data
        metadata = data.get("verifier_metadata")
        if metadata is None:
            metadata = {}
        if isinstance(metadata, BaseModel):
            metadata = metadata.model_dump(exclude_unset=True)
        if not isinstance(metadata, dict):
            return data  # leave the type error to field validation
        return {**data, "verifier_metadata": {**legacy, **metadata}}


class InstructionFollowingVerifyResponse(VerifyResponse):
    """Verify result; the extra keys are the rollout columns NeMo Gym writes."""

    follow_all_instructions: bool
    """Whether every instruction was followed."""
    follow_instruction_list: list[bool]
    """Per instruction, whether it was followed (parallel to the zipped ids and kwargs)."""
    verifier_metadata: VerifierMetadata
    """The instructions after legacy migration."""


def checked_text(response: Response) -> str:
    """The text NeMo Gym checks: ``content[0].text`` of the last output item, or ``""``."""
    if not response.output:
        return ""
    item = response.output[-1]
    content: Any
    if isinstance(item, Reasoning):
        content = (item.model_extra or {}).get("content")
    else:
        content = getattr(item, "content", None)
    if not content:
        return ""
    if isinstance(content, str):
        return content
    first = content[0]
    text = first.get("text") if isinstance(first, dict) else getattr(first, "text", None)
    return text if isinstance(text, str) else ""


def verify(
    body: InstructionFollowingVerifyRequest, config: InstructionFollowingConfig
) -> InstructionFollowingVerifyResponse:
    """Score one rollout (pure; no I/O)."""
    metadata = body.verifier_metadata
    text = checked_text(body.response)
    followed = [
        evaluate(instruction_id, kwargs, text)
        for instruction_id, kwargs in zip(metadata.instruction_id_list, metadata.kwargs, strict=False)
    ]
    if metadata.grading_mode == "fraction":
        reward = sum(followed) / len(followed) if followed else 0.0
    else:
        reward = float(all(followed))
    return InstructionFollowingVerifyResponse(
        responses_create_params=body.responses_create_params,
        response=body.response,
        reward=reward,
        follow_all_instructions=all(followed),
        follow_instruction_list=followed,
        verifier_metadata=metadata,
    )
