"""The subset of the OpenAI Responses API that the NeMo Gym contract uses.

Contract:
- :class:`ResponseCreateParams` rejects unknown keys (HTTP 422 at every server), like NeMo Gym.
- Every *output-side* model (items, :class:`Response`, :class:`Usage`) keeps unknown fields
  (``extra="allow"``), so a response recorded by any provider validates and re-serialises with
  :func:`dump` to JSON equal to what was read: no field is silently lost.
- Input items may omit ``type`` (the "easy" message form ``{"role", "content"}``); such an item is a message.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Discriminator, Field, Tag

_OPEN = ConfigDict(extra="allow")

Int64 = Annotated[int, Field(ge=-(2**63), le=2**63 - 1)]
"""An integer JSON encoders (orjson) and upstreams accept: larger values are a 422 naming the field."""


class InputText(BaseModel):
    model_config = _OPEN
    type: Literal["input_text"] = "input_text"
    text: str


class OutputText(BaseModel):
    model_config = _OPEN
    type: Literal["output_text"] = "output_text"
    text: str
    annotations: list[Any] = Field(default_factory=list)
    logprobs: list[Any] | None = None


class InputImage(BaseModel):
    model_config = _OPEN
    type: Literal["input_image"] = "input_image"
    image_url: str | None = None
    file_id: str | None = None
    detail: str | None = None


class Refusal(BaseModel):
    model_config = _OPEN
    type: Literal["refusal"] = "refusal"
    refusal: str


ContentPart = Annotated[InputText | OutputText | InputImage | Refusal, Field(discriminator="type")]


class Message(BaseModel):
    """A chat turn: user/system/developer input or an assistant output message."""

    model_config = _OPEN
    type: Literal["message"] = "message"
    role: Literal["user", "system", "developer", "assistant", "tool"]
    content: str | list[ContentPart]
    id: str | None = None
    status: str | None = None

    def text(self) -> str:
        """The message text: the string content, or its text parts concatenated."""
        if isinstance(self.content, str):
            return self.content
        return "".join(p.text for p in self.content if isinstance(p, InputText | OutputText))


class FunctionCall(BaseModel):
    model_config = _OPEN
    type: Literal["function_call"] = "function_call"
    call_id: str
    name: str
    arguments: str
    id: str | None = None
    status: str | None = None


class FunctionCallOutput(BaseModel):
    model_config = _OPEN
    type: Literal["function_call_output"] = "function_call_output"
    call_id: str
    output: str | list[Any]
    id: str | None = None
    status: str | None = None


class SummaryText(BaseModel):
    model_config = _OPEN
    type: Literal["summary_text"] = "summary_text"
    text: str


class Reasoning(BaseModel):
    model_config = _OPEN
    type: Literal["reasoning"] = "reasoning"
    summary: list[SummaryText] = Field(default_factory=list)
    id: str | None = None
    encrypted_content: str | None = None
    status: str | None = None


def _item_kind(value: Any) -> str:
    if isinstance(value, dict):
        kind = value.get("type")
        return kind if isinstance(kind, str) else "message"
    return str(getattr(value, "type", "message"))


Item = Annotated[
    Annotated[Message, Tag("message")]
    | Annotated[FunctionCall, Tag("function_call")]
    | Annotated[FunctionCallOutput, Tag("function_call_output")]
    | Annotated[Reasoning, Tag("reasoning")],
    Discriminator(_item_kind),
]
"""Any input or output item; the ``type`` key selects the model (missing ``type`` means message)."""


class FunctionTool(BaseModel):
    model_config = _OPEN
    type: Literal["function"] = "function"
    name: str
    description: str | None = None
    parameters: dict[str, Any] | None = None
    strict: bool | None = None


class ResponseCreateParams(BaseModel):
    """Body of ``POST /v1/responses`` and the ``responses_create_params`` of every row."""

    model_config = ConfigDict(extra="forbid")
    input: str | list[Item]
    background: bool | None = None
    include: list[str] | None = None
    instructions: str | None = None
    max_output_tokens: Int64 | None = None
    max_tool_calls: Int64 | None = None
    metadata: dict[str, str] | None = None
    model: str | None = None
    parallel_tool_calls: bool | None = True
    previous_response_id: str | None = None
    prompt: dict[str, Any] | None = None
    reasoning: dict[str, Any] | None = None
    service_tier: str | None = None
    store: bool | None = None
    temperature: float | None = None
    text: dict[str, Any] | None = None
    tool_choice: str | dict[str, Any] | None = "auto"
    tools: list[FunctionTool] = Field(default_factory=list)
    top_logprobs: Int64 | None = None
    top_p: float | None = None
    truncation: str | None = None
    user: str | None = None
    stream: bool | None = None


class InputTokensDetails(BaseModel):
    model_config = _OPEN
    cached_tokens: int | None = None


class OutputTokensDetails(BaseModel):
    model_config = _OPEN
    reasoning_tokens: int | None = None


class Usage(BaseModel):
    model_config = _OPEN
    input_tokens: int = 0
    output_tokens: int = 0
    total_tokens: int = 0
    input_tokens_details: InputTokensDetails | None = None
    output_tokens_details: OutputTokensDetails | None = None


class IncompleteDetails(BaseModel):
    model_config = _OPEN
    reason: str | None = None


class Response(BaseModel):
    """A Responses API result (one model call, or a whole agent episode)."""

    model_config = _OPEN
    id: str
    created_at: float
    model: str
    object: Literal["response"] = "response"
    output: list[Item] = Field(default_factory=list)
    usage: Usage | None = None
    status: str | None = None
    incomplete_details: IncompleteDetails | None = None
    error: dict[str, Any] | None = None
    instructions: str | list[Any] | None = None
    metadata: dict[str, Any] | None = None
    parallel_tool_calls: bool = True
    tool_choice: str | dict[str, Any] = "auto"
    tools: list[Any] = Field(default_factory=list)
    temperature: float | None = None
    top_p: float | None = None
    max_output_tokens: int | None = None


def dump(model: BaseModel) -> dict[str, Any]:
    """JSON-ready dict of exactly the fields that were given or set (no invented defaults)."""
    return model.model_dump(mode="json", exclude_unset=True)
