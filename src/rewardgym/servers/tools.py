"""Tools of a resources server, declared by decorating typed methods.

Contract::

    class GetWeatherArgs(BaseModel):
        city: str
        \"\"\"The city to look up.\"\"\"

    class Weather(ResourcesServer[...]):
        @tool
        async def get_weather(self, args: GetWeatherArgs, session: Session) -> WeatherResult:
            \"\"\"Current weather of a city.\"\"\"

- The method name (or ``@tool(name=...)``) is the tool name and the endpoint ``POST /<name>``.
- The first parameter's annotation must be a pydantic model: it validates the request body (HTTP 422 naming
  the field on mismatch) and its JSON schema is the tool's ``parameters`` (field descriptions come from
  ``Field(description=...)``, or from attribute docstrings with ``use_attribute_docstrings=True``;
  ``extra="forbid"`` adds ``additionalProperties: false``). The optional ``session``
  parameter receives the caller's :class:`~rewardgym.servers.sessions.Session`.
- The return value (a pydantic model, or any orjson-serialisable value) is the response body, which the
  agent hands verbatim to the model.
- :meth:`ToolSpec.function_tool` gives the OpenAI function-tool declaration
  (:class:`~rewardgym.protocol.FunctionTool`) to put in ``responses_create_params.tools``.
"""

from __future__ import annotations

import inspect
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar, get_type_hints, overload

from pydantic import BaseModel

from rewardgym.protocol import FunctionTool

F = TypeVar("F", bound=Callable[..., Any])

TOOL_MARK = "__rewardgym_tool__"
TOOL_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_-]{0,127}$")
RESERVED_PATHS = frozenset(
    {"seed_session", "verify", "aggregate_metrics", "reverify_mode", "docs", "openapi.json"}
)


@dataclass(frozen=True, slots=True)
class ToolSpec:
    """A tool of a server class: endpoint name, bound method name, argument model, description."""

    name: str
    method_name: str
    args_model: type[BaseModel]
    description: str | None
    takes_session: bool

    def parameters_schema(self) -> dict[str, Any]:
        schema: dict[str, Any] = _strip_titles(self.args_model.model_json_schema())
        schema.setdefault("properties", {})
        if self.args_model.model_config.get("extra") == "forbid":
            schema["additionalProperties"] = False
        return schema

    def function_tool(self, *, strict: bool | None = None) -> FunctionTool:
        """The OpenAI function-tool declaration of this tool."""
        tool = FunctionTool(
            name=self.name, description=self.description or "", parameters=self.parameters_schema()
        )
        if strict is not None:
            tool.strict = strict
        return tool


def _strip_titles(node: Any, *, in_properties: bool = False) -> Any:
    if isinstance(node, dict):
        return {
            key: _strip_titles(value, in_properties=(key in ("properties", "$defs") and not in_properties))
            for key, value in node.items()
            if in_properties or key != "title"
        }
    if isinstance(node, list):
        return [_strip_titles(v) for v in node]
    return node


@overload
def tool(fn: F) -> F: ...
@overload
def tool(*, name: str | None = None, description: str | None = None) -> Callable[[F], F]: ...
def tool(
    fn: F | None = None, *, name: str | None = None, description: str | None = None
) -> F | Callable[[F], F]:
    """Mark a server method as a tool (see the module docstring)."""

    def mark(func: F) -> F:
        setattr(func, TOOL_MARK, (name, description))
        return func

    return mark(fn) if fn is not None else mark


def collect_tools(cls: type) -> list[ToolSpec]:
    """The tools declared on ``cls`` and its bases (subclass definitions win), in definition order."""
    seen: dict[str, ToolSpec] = {}
    for klass in reversed(cls.__mro__):
        for attr, func in vars(klass).items():
            mark = getattr(func, TOOL_MARK, None)
            if mark is None:
                continue
            spec = _tool_spec(cls, attr, func, mark)
            seen[spec.name] = spec
    return list(seen.values())


def _tool_spec(cls: type, attr: str, func: Any, mark: tuple[str | None, str | None]) -> ToolSpec:
    name, description = mark
    name = name or attr
    where = f"{cls.__name__}.{attr}"
    if not TOOL_NAME.match(name) or name in RESERVED_PATHS:
        raise TypeError(f"{where}: invalid tool name {name!r}")
    if not inspect.iscoroutinefunction(func):
        raise TypeError(f"{where}: a tool must be an async method")
    params = list(inspect.signature(func).parameters.values())[1:]
    hints = get_type_hints(func)
    if not params or not (
        isinstance(hints.get(params[0].name), type) and issubclass(hints[params[0].name], BaseModel)
    ):
        raise TypeError(f"{where}: the first parameter must be annotated with a pydantic model")
    takes_session = any(p.name == "session" for p in params[1:])
    doc = description if description is not None else inspect.getdoc(func)
    return ToolSpec(
        name=name,
        method_name=attr,
        args_model=hints[params[0].name],
        description=doc.strip() if doc else None,
        takes_session=takes_session,
    )
