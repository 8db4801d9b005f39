"""``simple_agent``: one rollout = seed the session, loop model ↔ tools, verify
(docs/reference/environments.md §1).

Endpoints:
- ``POST /run`` (body: a materialized input row; extra fields kept):
  1. ``POST <resources>/seed_session`` with the row exactly as received and the request's cookies;
  2. the episode loop below, **in-process** (no HTTP self-call), with the seed reply's cookies;
  3. unless ``skip_verification``: ``POST <resources>/verify`` with ``row + {"response": <episode response>}``
     and the cookies the tools ended with; the verify reply is returned verbatim, plus NeMo Gym 0.7.0's
     ``mask_sample: false``, ``failure_kind: null``, ``failure_reason: null`` where it does not say them
     (appended to its bytes). With ``skip_verification`` the answer is ``row + {response, reward:
     skip_verification_reward, verification_skipped: true}`` and the same three keys.
  A non-2xx seed/model/verify reply, or a verify reply without a numeric ``reward``, is an error (502): a
  reward is never made up. A failed verify (5xx, unreachable, timed out, no numeric ``reward``) is answered
  with error type ``verifier_error``, which the collector classifies by (never by the body's wording).
- ``POST /v1/responses``: the episode loop alone; the request's cookies seed both the resources-server and
  model cookies, and the cookies the loop ended with are set on the answer.
- ``POST /aggregate_metrics``: forwarded to the resources server (an empty result with
  ``skip_verification``); its ``agent_metrics`` gain ``per_sample_aggregate`` and ``num_repeats``
  (:mod:`rewardgym.agents._run_metrics`).

Episode loop (one model call per step; ``input`` as a string becomes one user message):
- call ``<model>/v1/responses`` with the original params and ``input = original + outputs so far``;
  append all its output items; sum usage (:mod:`rewardgym.agents.usage`);
- stop if ``incomplete_details`` is set, or if there is no function call and an assistant message exists;
- run each function call **sequentially**: arguments that are not JSON give the tool output
  ``{"error": "Invalid tool call arguments: <repr>"}`` without a call; otherwise ``POST <resources>/<name>``
  with the parsed arguments and the session cookies, and the reply body text — whatever its status — is the
  output. Append ``{"type": "function_call_output", "call_id", "output"}`` per call;
- stop when ``max_steps`` is set and reached (checked after the step's tools), or at ``step_limit``.
The result is the last model response with ``output`` = every item of every step and ``usage`` = the sum.

Observability (``observability_enabled``, NeMo Gym 0.7.0): ``/run`` sends its model calls to
``<model>/ng-rollout/<rollout id>/v1/responses`` (the model server captures them, :mod:`rewardgym.observe`)
and records the episode's trajectory (:class:`~rewardgym.observe.trajectory.TrajectoryRecorder`), returned as
``ng_trajectory`` in the answer. A row whose ``_ng_rollout_id`` is not a valid id is refused (422).
"""

from __future__ import annotations

import math
import re
import time
from dataclasses import dataclass, field
from typing import Any

import orjson
from fastapi import FastAPI, Request
from pydantic import Field, field_validator
from starlette.responses import Response as HttpResponse

from rewardgym.agents._run_metrics import RUN_OUTCOME, with_run_metrics, with_run_outcome
from rewardgym.agents.usage import accumulate_usage
from rewardgym.http.client import HttpReply
from rewardgym.http.errors import (
    UPSTREAM_AUTH_KIND,
    UPSTREAM_REJECTED_KIND,
    VERIFIER_ERROR_KIND,
    UpstreamError,
    UpstreamHTTPError,
    UpstreamProtocolError,
    error_kind,
    error_message,
)
from rewardgym.observe.capture import ROLLOUT_PREFIX, rollout_id_of
from rewardgym.observe.trajectory import TrajectoryRecorder
from rewardgym.protocol import AggregateMetrics, FunctionCall, Message, Response, ResponseCreateParams, keys
from rewardgym.registry import register
from rewardgym.servers.base import BaseServer
from rewardgym.servers.config import ServerConfig, ServerRef
from rewardgym.servers.errors import ApiError
from rewardgym.servers.sse import response_events
from rewardgym.servers.wire import (
    load_row,
    model_response,
    parse_body,
    parse_value,
    raw_json_response,
)

TOOL_NAME = re.compile(r"^[A-Za-z0-9_.\-]{1,128}$")


class SimpleAgentConfig(ServerConfig):
    """Settings of ``simple_agent``."""

    resources_server: ServerRef
    """The environment this agent plays: ``{type: resources_servers, name: <instance>}``."""

    model_server: ServerRef
    """The policy model: ``{type: responses_api_models, name: policy_model}``."""

    max_steps: int | None = Field(None, ge=1)
    """Model calls per episode at most; ``null`` means until the model stops (bounded by ``step_limit``)."""

    step_limit: int = Field(1000, ge=1)
    """Safety bound on model calls when ``max_steps`` is null (a model that never stops ends here)."""

    skip_verification: bool = False
    """Return the episode without calling ``/verify`` (reward = ``skip_verification_reward``)."""

    skip_verification_reward: float = 0.0
    """The reward reported when verification is skipped."""

    token_id_capture: bool = False
    """Accepted for NeMo Gym compatibility; no effect."""

    @field_validator("resources_server")
    @classmethod
    def _is_resources(cls, ref: ServerRef) -> ServerRef:
        if ref.type != "resources_servers":
            raise ValueError("must reference a resources server (type: resources_servers)")
        return ref

    @field_validator("model_server")
    @classmethod
    def _is_model(cls, ref: ServerRef) -> ServerRef:
        if ref.type != "responses_api_models":
            raise ValueError("must reference a model server (type: responses_api_models)")
        return ref


@dataclass(slots=True)
class Episode:
    """The result of the episode loop and the cookies it ended with."""

    response: dict[str, Any]
    resources_cookies: dict[str, str]
    model_cookies: dict[str, str]
    conversation: list[Any] = field(default_factory=list)
    """The input (a string as one user message) plus every output item."""


def invalid_arguments_output(exc: Exception) -> str:
    return orjson.dumps({"error": f"Invalid tool call arguments: {exc!r}"}).decode()


@register("responses_api_agents", "simple_agent")
class SimpleAgent(BaseServer[SimpleAgentConfig]):
    """The reference agent; see the module docstring."""

    def __init__(self, config: Any) -> None:
        super().__init__(config)
        self.resources_url = self.config.peer_url(self.config.resources_server, "resources_server")
        self.model_url = self.config.peer_url(self.config.model_server, "model_server")

    def setup_routes(self, app: FastAPI) -> None:
        app.add_api_route("/run", self._run_route, methods=["POST"])
        app.add_api_route("/v1/responses", self._responses_route, methods=["POST"])
        app.add_api_route("/aggregate_metrics", self._aggregate_route, methods=["POST"])

    # ----------------------------------------------------------------- the loop
    async def _post(self, url: str, **kwargs: Any) -> HttpReply:
        """POST to a peer; a 4xx answer (the caller's row or body was rejected) is passed on as that 4xx
        rather than a 502, so the collector classifies it as a request no retry can fix."""
        try:
            return await self.http.post(url, headers=self.peer_headers, **kwargs)
        except UpstreamHTTPError as exc:
            if 400 <= exc.status < 500:
                wait = (
                    {"Retry-After": str(math.ceil(exc.retry_after))} if exc.retry_after is not None else None
                )
                kind = "rate_limited" if exc.status == 429 else "rejected_by_peer"
                if error_kind(exc.body) == UPSTREAM_REJECTED_KIND:  # the model's upstream refused the request
                    kind = UPSTREAM_REJECTED_KIND
                message = error_message(exc.body) or str(exc)  # the peer's words, not its JSON re-escaped
                raise ApiError(exc.status, message, kind=kind, headers=wait) from None
            if error_kind(exc.body) == UPSTREAM_AUTH_KIND:  # the model's upstream refused its key: say so
                raise ApiError(
                    exc.status, error_message(exc.body) or str(exc), kind=UPSTREAM_AUTH_KIND
                ) from None
            raise

    async def call_model(
        self, params: dict[str, Any], cookies: dict[str, str], path: str = "/v1/responses"
    ) -> tuple[dict[str, Any], Response]:
        reply = await self._post(f"{self.model_url}{path}", json=params, cookies=cookies)
        cookies.update(reply.cookies)
        raw = reply.json()
        return raw, reply.parse(Response, raw)

    async def call_tool(self, call: FunctionCall, cookies: dict[str, str]) -> str:
        return (await self.run_tool(call, cookies))[0]

    async def run_tool(self, call: FunctionCall, cookies: dict[str, str]) -> tuple[str, str | None]:
        """The tool's output and, when it failed, its error type (NeMo Gym's trajectory wording)."""
        try:
            args = orjson.loads(call.arguments)
        except (orjson.JSONDecodeError, TypeError) as exc:
            return invalid_arguments_output(exc), "JSONDecodeError"
        if not TOOL_NAME.match(call.name):
            return orjson.dumps({"error": f"Invalid tool name: {call.name[:200]!r}"}).decode(), "ValueError"
        reply = await self.http.post(
            f"{self.resources_url}/{call.name}",
            json=args,
            cookies=cookies,
            headers=self.peer_headers,
            raise_for_status=False,
        )
        cookies.update(reply.cookies)
        return reply.text(), None if 200 <= reply.status < 400 else f"http_{reply.status}"

    async def episode(
        self,
        params: dict[str, Any],
        resources_cookies: dict[str, str],
        model_cookies: dict[str, str],
        *,
        model_path: str = "/v1/responses",
        recorder: TrajectoryRecorder | None = None,
    ) -> Episode:
        """Run the loop for ``params`` (a JSON dict of ResponseCreateParams with the fields as given)."""
        # The loop needs whole responses: streaming is the caller's choice for the episode, not the model's.
        params = {key: value for key, value in params.items() if key != "stream"}
        original = params.get("input")
        if isinstance(original, str):
            original = [{"role": "user", "content": original}]
        rs_cookies, m_cookies = dict(resources_cookies), dict(model_cookies)
        outputs: list[Any] = []
        usage: dict[str, Any] | None = None
        last: dict[str, Any] = {}
        limit = self.config.max_steps or self.config.step_limit
        for step in range(1, limit + 1):
            question = [*(original or []), *outputs]
            asked = time.time()
            raw, response = await self.call_model({**params, "input": question}, m_cookies, model_path)
            if recorder is not None:
                recorder.turn(asked, question, raw)
            last = raw
            outputs.extend(raw.get("output") or [])
            usage = accumulate_usage(usage, raw.get("usage"))
            if response.incomplete_details is not None:
                if recorder is not None:
                    recorder.status = "incomplete"
                break
            calls = [item for item in response.output if isinstance(item, FunctionCall)]
            if not calls and any(isinstance(i, Message) and i.role == "assistant" for i in response.output):
                break
            for call in calls:
                started, clock = time.time(), time.perf_counter()
                output, error = await self.run_tool(call, rs_cookies)
                if recorder is not None:
                    ms = (time.perf_counter() - clock) * 1000.0
                    recorder.tool(call.model_dump(), started, time.time(), ms, error, output)
                outputs.append({"type": "function_call_output", "call_id": call.call_id, "output": output})
            if recorder is not None and self.config.max_steps and step >= self.config.max_steps:
                recorder.status = "incomplete"
        final = {**last, "output": outputs, "usage": usage}
        return Episode(final, rs_cookies, m_cookies, [*(original or []), *outputs])

    async def run(self, row: dict[str, Any], raw_row: bytes, cookies: dict[str, str]) -> bytes:
        """One rollout of ``row``; returns the verify reply body (see the module docstring)."""
        rollout_id = recorder = None
        path = "/v1/responses"
        if self.config.observability_enabled:
            try:
                rollout_id = rollout_id_of(row)
            except ValueError as exc:
                raise ApiError(422, str(exc), kind="validation_error") from None
            if rollout_id is not None:
                recorder = TrajectoryRecorder(self.config.model_server.name)
                path = f"/{ROLLOUT_PREFIX}/{rollout_id}/v1/responses"
        seed = await self._post(f"{self.resources_url}/seed_session", data=raw_row, cookies=cookies)
        rs_cookies = {**cookies, **seed.cookies}
        episode = await self.episode(
            row[keys.RESPONSES_CREATE_PARAMS], rs_cookies, {}, model_path=path, recorder=recorder
        )
        if self.config.skip_verification:
            result = row | {
                keys.RESPONSE: episode.response,
                keys.REWARD: self.config.skip_verification_reward,
                "verification_skipped": True,
            }
            if recorder is not None and rollout_id is not None:
                result["ng_trajectory"] = recorder.record(row, rollout_id, episode.conversation, None)
            return orjson.dumps(result | {k: v for k, v in RUN_OUTCOME.items() if k not in result})
        try:
            reply = await self._post(
                f"{self.resources_url}/verify",
                json=row | {keys.RESPONSE: episode.response},
                cookies=episode.resources_cookies,
            )
            verified = reply.json()
            reward = verified.get(keys.REWARD) if isinstance(verified, dict) else None
            if not isinstance(reward, int | float) or isinstance(reward, bool):
                raise UpstreamProtocolError(reply.url, "verify reply has no numeric 'reward'")
        except UpstreamError as exc:
            # Said by its error type, so the collector classifies it without reading the message.
            raise ApiError(exc.http_status, f"verify failed: {exc}", kind=VERIFIER_ERROR_KIND) from None
        if recorder is not None and rollout_id is not None:
            trajectory = recorder.record(row, rollout_id, episode.conversation, verified.get("resolved"))
            traced = verified | {"ng_trajectory": trajectory}
            return with_run_outcome(orjson.dumps(traced), traced)
        return with_run_outcome(reply.body, verified)

    # ----------------------------------------------------------------- routes
    def _incoming_cookies(self, request: Request) -> dict[str, str]:
        return {k: v for k, v in request.cookies.items() if k != self.server_id}

    async def _run_route(self, request: Request) -> HttpResponse:
        raw = await request.body()
        row = load_row(raw)
        parse_value(
            ResponseCreateParams, row[keys.RESPONSES_CREATE_PARAMS], ("body", keys.RESPONSES_CREATE_PARAMS)
        )
        return raw_json_response(await self.run(row, raw, self._incoming_cookies(request)))

    async def _responses_route(self, request: Request) -> HttpResponse:
        params = parse_body(ResponseCreateParams, await request.body())
        cookies = self._incoming_cookies(request)
        episode = await self.episode(params.model_dump(mode="json", exclude_unset=True), cookies, cookies)
        answer: HttpResponse
        if params.stream:
            answer = HttpResponse(response_events(episode.response), media_type="text/event-stream")
        else:
            answer = raw_json_response(orjson.dumps(episode.response))
        for name, value in {**episode.model_cookies, **episode.resources_cookies}.items():
            answer.headers.append("set-cookie", f"{name}={value}; path=/; httponly; samesite=lax")
        return answer

    async def _aggregate_route(self, request: Request) -> HttpResponse:
        body = await request.body()
        if self.config.skip_verification:
            self.log.warning("aggregate_metrics: verification is skipped, returning empty metrics")
            return model_response(AggregateMetrics())
        reply = await self._post(f"{self.resources_url}/aggregate_metrics", data=body)
        return raw_json_response(with_run_metrics(reply.body, body))
