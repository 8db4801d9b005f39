"""A run's rollouts as an inspect_ai evaluation log, for ``inspect view`` (imports ``inspect_ai``: only used
through :func:`rewardgym.export.trackers.export_run`).

Contract of :func:`write_inspect_log(rollouts, out)`:

- writes ``<stem>_inspect.json`` beside the rollouts (or into ``out``, created when missing), whole or
  not at all (a temp folder, then a rename); an existing output that is not a regular file is refused.
  JSON, not inspect's zipped ``.eval``: inspect_ai 0.3.285 writes an ``.eval`` log in time quadratic in
  its samples (4,000 rollouts: 29 s against 2.5 s; ``fmt="eval"`` still writes one);
- one sample per rollout: ``id`` = the task index, ``epoch`` = rollout index + 1 (so ``inspect view``
  shows the repeats of a task together), ``input`` = the request's messages (``responses_create_params
  .input`` of the rollout, else of its line in ``<stem>_materialized_inputs.jsonl``; ``developer`` as
  system, a non-message item as a user message holding its JSON), ``target``
  = ``expected_answer`` (its JSON text when not a string; empty when absent), ``output`` = the visible
  text of the response (reasoning as a reasoning block; ``max_tokens`` when the response is incomplete),
  ``scores["reward"]`` = the reward (with ``extracted_answer`` as the answer), ``metadata`` =
  ``_ng_task_index``, ``_ng_rollout_index``, ``agent``;
- each failure of ``<stem>_failures.jsonl`` whose key has no rollout adds a sample with ``error`` =
  ``<class>: <reason>`` and no score (its input from the materialized inputs when they are beside);
- the log's results: the mean reward over the scored samples; the model is the first response's
  ``model``. All samples are held in memory (inspect_ai writes a log whole).
- a line that cannot be read is a :class:`~rewardgym.errors.DataError` naming ``file:line``.
"""

from __future__ import annotations

import datetime
import shutil
from pathlib import Path
from typing import Any

import orjson
from inspect_ai.log import (
    EvalConfig,
    EvalDataset,
    EvalError,
    EvalLog,
    EvalMetric,
    EvalResults,
    EvalSample,
    EvalScore,
    EvalSpec,
    write_eval_log,
)
from inspect_ai.model import (
    ChatMessage,
    ChatMessageAssistant,
    ChatMessageSystem,
    ChatMessageUser,
    Content,
    ContentReasoning,
    ContentText,
    ModelOutput,
)
from inspect_ai.scorer import Score

from rewardgym.analysis.extract import response_text
from rewardgym.errors import DataError
from rewardgym.export.record import sibling
from rewardgym.io.jsonl import iter_jsonl
from rewardgym.io.outputs import atomic_writer, guard_outputs, make_temp_dir
from rewardgym.protocol.keys import FAILURE_CLASS, ROLLOUT_INDEX, TASK_INDEX


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = [p.get("text") for p in content if isinstance(p, dict)]
        return "".join(p for p in parts if isinstance(p, str))
    return "" if content is None else orjson.dumps(content).decode()


def messages_of(request: Any) -> list[ChatMessage]:
    """The request's input as chat messages (see module doc)."""
    items = request.get("input") if isinstance(request, dict) else None
    if isinstance(items, str):
        return [ChatMessageUser(content=items)]
    out: list[ChatMessage] = []
    for item in items if isinstance(items, list) else []:
        role = item.get("role") if isinstance(item, dict) else None
        if role in ("system", "developer"):
            out.append(ChatMessageSystem(content=_text(item.get("content"))))
        elif role == "assistant":
            out.append(ChatMessageAssistant(content=_text(item.get("content"))))
        elif role == "user":
            out.append(ChatMessageUser(content=_text(item.get("content"))))
        else:
            out.append(ChatMessageUser(content=orjson.dumps(item).decode()))
    return out


def _target(row: dict[str, Any]) -> str:
    value = row.get("expected_answer")
    return value if isinstance(value, str) else "" if value is None else orjson.dumps(value).decode()


def _key(row: dict[str, Any], path: Path, line: int) -> tuple[int, int]:
    task, rollout = row.get(TASK_INDEX), row.get(ROLLOUT_INDEX)
    if type(task) is not int or type(rollout) is not int:
        raise DataError(f"{path}:{line}: '{TASK_INDEX}' and '{ROLLOUT_INDEX}' must be integers")
    return task, rollout


def _agent(row: dict[str, Any]) -> str | None:
    ref = row.get("agent_ref")
    name = ref.get("name") if isinstance(ref, dict) else None
    return name if isinstance(name, str) else None


def _sample(row: dict[str, Any], key: tuple[int, int], model: str) -> EvalSample:
    visible, reasoning = response_text(row)
    response = row.get("response")
    incomplete = isinstance(response, dict) and response.get("status") == "incomplete"
    content: list[Content] = [ContentReasoning(reasoning=reasoning)] if reasoning else []
    content.append(ContentText(text=visible))
    output = ModelOutput.from_content(model, content, stop_reason="max_tokens" if incomplete else "stop")
    reward = row.get("reward")
    answer = row.get("extracted_answer")
    score = (
        Score(value=float(reward), answer=answer if isinstance(answer, str) else None)
        if isinstance(reward, (int, float))
        else None
    )
    inputs = messages_of(row.get("responses_create_params"))
    return EvalSample(
        id=key[0],
        epoch=key[1] + 1,
        input=inputs,
        target=_target(row),
        messages=[*inputs, output.message],
        output=output,
        scores=None if score is None else {"reward": score},
        metadata={TASK_INDEX: key[0], ROLLOUT_INDEX: key[1], "agent": _agent(row)},
    )


def _requests(rollouts: Path, keys: set[tuple[int, int]]) -> dict[tuple[int, int], Any]:
    """The materialized request of each of ``keys`` (when the inputs file is beside the rollouts)."""
    inputs = sibling(rollouts, "_materialized_inputs.jsonl")
    found: dict[tuple[int, int], Any] = {}
    if keys and inputs.is_file():
        for line, row in iter_jsonl(inputs, what="Inputs file"):
            key = _key(row, inputs, line)
            if key in keys:
                found[key] = row.get("responses_create_params")
    return found


def _failed(rollouts: Path, done: set[tuple[int, int]]) -> list[EvalSample]:
    failures = sibling(rollouts, "_failures.jsonl")
    if not failures.exists():
        return []
    rows = {}
    for line, row in iter_jsonl(failures, what="Failures file"):
        key = _key(row, failures, line)
        if key not in done:
            rows[key] = row
    requests = _requests(rollouts, {k for k, row in rows.items() if "responses_create_params" not in row})
    out = []
    for key, row in rows.items():
        kind, reason = row.get(FAILURE_CLASS), row.get("_ng_failure_reason")
        message = (
            f"{kind if isinstance(kind, str) else 'unknown'}: {reason if isinstance(reason, str) else ''}"
        )
        request = row.get("responses_create_params", requests.get(key))
        out.append(
            EvalSample(
                id=key[0],
                epoch=key[1] + 1,
                input=messages_of(request) or "(input not recorded)",
                target=_target(row),
                metadata={TASK_INDEX: key[0], ROLLOUT_INDEX: key[1], "agent": _agent(row)},
                error=EvalError(message=message, traceback="", traceback_ansi=""),
            )
        )
    return out


def _fill_inputs(rollouts: Path, samples: list[EvalSample]) -> None:
    """Inputs from the materialized inputs for rollouts whose row does not carry its request."""
    bare = {(int(s.id), s.epoch - 1): s for s in samples if not s.input}
    for key, request in _requests(rollouts, set(bare)).items():
        sample = bare[key]
        sample.input = messages_of(request) or "(input not recorded)"
        sample.messages = [*messages_of(request), *sample.messages]


def build_log(rollouts: Path) -> EvalLog:
    """The evaluation log of the run at ``rollouts`` (see module doc), in memory."""
    samples: list[EvalSample] = []
    model = "unknown"
    for line, row in iter_jsonl(rollouts, what="Rollouts file"):
        response = row.get("response")
        if model == "unknown" and isinstance(response, dict) and isinstance(response.get("model"), str):
            model = response["model"]
        samples.append(_sample(row, _key(row, rollouts, line), model))
    _fill_inputs(rollouts, samples)
    scored = [s.scores["reward"].value for s in samples if s.scores]
    samples += _failed(rollouts, {(int(s.id), s.epoch - 1) for s in samples})
    samples.sort(key=lambda s: (int(s.id), s.epoch))
    mean = sum(float(v) for v in scored if isinstance(v, (int, float))) / len(scored) if scored else 0.0
    return EvalLog(
        status="success",
        eval=EvalSpec(
            created=datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
            task=rollouts.name.removesuffix(".jsonl"),
            dataset=EvalDataset(
                name=rollouts.name, location=str(rollouts), samples=len({s.id for s in samples})
            ),
            model=model,
            config=EvalConfig(epochs=max((s.epoch for s in samples), default=1)),
        ),
        results=EvalResults(
            total_samples=len(samples),
            completed_samples=len(scored),
            scores=[
                EvalScore(
                    name="reward", scorer="reward", metrics={"mean": EvalMetric(name="mean", value=mean)}
                )
            ],
        ),
        samples=samples,
    )


def write_inspect_log(rollouts: Path, out: Path | None = None, fmt: str = "json") -> tuple[Path, int]:
    """Write the log (see module doc); returns ``(path, samples)``."""
    if not rollouts.is_file():
        raise DataError(f"Input file not found: '{rollouts}' (--rollouts)")
    folder = rollouts.parent if out is None else out
    target = folder / f"{rollouts.name.removesuffix('.jsonl')}_inspect.{fmt}"
    beside = "read beside --rollouts"
    guard_outputs(
        [(target, "inspect log")],
        [
            (rollouts, "--rollouts"),
            (sibling(rollouts, "_materialized_inputs.jsonl"), f"materialized inputs ({beside})"),
            (sibling(rollouts, "_failures.jsonl"), f"failures ({beside})"),
        ],
    )
    log = build_log(rollouts)
    if out is not None:
        out.mkdir(parents=True, exist_ok=True)
    spool = make_temp_dir(folder, ".inspect")
    try:
        written = spool / target.name
        write_eval_log(log, written, format="json" if fmt == "json" else "eval")
        with atomic_writer(target) as handle, open(written, "rb") as source:
            shutil.copyfileobj(source, handle)
    finally:
        shutil.rmtree(spool, ignore_errors=True)
    return target, len(log.samples or [])
