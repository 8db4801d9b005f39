"""Property: Responses items → chat messages → (the assistant turns replayed as upstream replies) → items.

Nothing is lost, call ids survive, and order is kept, for any sequence of input items.
"""

from __future__ import annotations

import itertools
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from rewardgym.models.chat_adapter import chat_to_response
from rewardgym.models.chat_request import responses_to_chat
from rewardgym.models.config import ChatAdapterConfig
from rewardgym.protocol import ChatCompletion, ResponseCreateParams, dump

CONFIG = ChatAdapterConfig(model="m")
_ASSISTANT_SIDE = ("reasoning", "assistant", "function_call")

# No "<" so that text can never contain a <think> tag of its own.
text = st.text(alphabet=st.characters(blacklist_characters="<", blacklist_categories=["Cs"]), max_size=12)
nonempty = text.filter(bool)


def _kind(item: dict[str, Any]) -> str:
    if item.get("type") == "message" and item["role"] == "assistant":
        return "assistant"
    return str(item.get("type", "message"))


@st.composite
def items(draw: st.DrawFn) -> list[dict[str, Any]]:
    ids = itertools.count()
    out: list[dict[str, Any]] = []
    for _ in range(draw(st.integers(min_value=1, max_value=10))):
        kind = draw(st.sampled_from(["user", "system", "assistant", "reasoning", "call", "output"]))
        if kind in ("user", "system"):
            out.append({"type": "message", "role": kind, "content": draw(text)})
        elif kind == "assistant":
            parts = [{"type": "output_text", "text": t} for t in draw(st.lists(text, min_size=1, max_size=2))]
            out.append({"type": "message", "role": "assistant", "content": parts})
        elif kind == "reasoning":
            summary = [
                {"type": "summary_text", "text": t} for t in draw(st.lists(text, min_size=1, max_size=2))
            ]
            out.append({"type": "reasoning", "summary": summary})
        elif kind == "call":
            name = draw(st.sampled_from(["get_weather", "lookup"]))
            out.append(
                {
                    "type": "function_call",
                    "call_id": f"call_{next(ids)}",
                    "name": name,
                    "arguments": draw(text),
                }
            )
        else:
            out.append({"type": "function_call_output", "call_id": draw(nonempty), "output": draw(text)})
    return out


def _runs(sequence: list[dict[str, Any]]) -> list[list[dict[str, Any]]]:
    """Maximal runs of assistant-side items that produce an assistant message."""
    runs: list[list[dict[str, Any]]] = []
    current: list[dict[str, Any]] = []
    for item in [*sequence, {"type": "message", "role": "user", "content": ""}]:
        if _kind(item) in _ASSISTANT_SIDE:
            current.append(item)
            continue
        if any(_kind(i) != "reasoning" or any(s["text"] for s in i["summary"]) for i in current):
            runs.append(current)
        current = []
    return runs


def _summaries(run: list[dict[str, Any]]) -> list[str]:
    return [s["text"] for i in run if _kind(i) == "reasoning" for s in i["summary"] if s["text"]]


def _message_text(run: list[dict[str, Any]]) -> str:
    return "".join(p["text"] for i in run if _kind(i) == "assistant" for p in i["content"])


def _calls(run: list[dict[str, Any]]) -> list[tuple[str, str, str]]:
    return [(i["call_id"], i["name"], i["arguments"]) for i in run if _kind(i) == "function_call"]


def _replay(message: dict[str, Any]) -> list[dict[str, Any]]:
    """Items of a Response whose upstream reply is exactly this chat assistant message."""
    completion = ChatCompletion.model_validate(
        {"id": "c", "created": 0, "model": "m", "choices": [{"message": message, "finish_reason": "stop"}]}
    )
    response = chat_to_response(completion, ResponseCreateParams(input="x"), CONFIG)
    return [dump(item) for item in response.output]


@settings(max_examples=200, deadline=None)
@given(items())
def test_items_survive_the_round_trip(sequence: list[dict[str, Any]]) -> None:
    messages = responses_to_chat(ResponseCreateParams.model_validate({"input": sequence}))["messages"]

    # Non-assistant items map one to one, in order.
    others = [i for i in sequence if _kind(i) not in _ASSISTANT_SIDE]
    non_assistant = [m for m in messages if m["role"] != "assistant"]
    assert len(non_assistant) == len(others)
    for item, message in zip(others, non_assistant, strict=True):
        if item["type"] == "function_call_output":
            assert message == {"role": "tool", "tool_call_id": item["call_id"], "content": item["output"]}
        else:
            assert message == {"role": item["role"], "content": item["content"]}

    # Each run of assistant-side items is exactly one assistant message; never two in a row.
    assistants = [m for m in messages if m["role"] == "assistant"]
    runs = _runs(sequence)
    assert len(assistants) == len(runs)
    roles = [m["role"] for m in messages]
    assert ("assistant", "assistant") not in set(itertools.pairwise(roles))

    # Replaying each assistant message as an upstream reply gives back the run's content and calls.
    for run, message in zip(runs, assistants, strict=True):
        calls = [
            (c["id"], c["function"]["name"], c["function"]["arguments"])
            for c in message.get("tool_calls", [])
        ]
        assert calls == _calls(run)
        out = _replay(message)
        kinds = [item["type"] for item in out]
        assert kinds == sorted(kinds, key=["reasoning", "message", "function_call"].index)  # order
        summaries = [s["text"] for item in out if item["type"] == "reasoning" for s in item["summary"]]
        assert summaries == _summaries(run)
        replayed_text = "".join(
            p["text"] for item in out if item["type"] == "message" for p in item["content"]
        )
        assert replayed_text == _message_text(run)
        replayed_calls = [
            (i["call_id"], i["name"], i["arguments"]) for i in out if i["type"] == "function_call"
        ]
        assert replayed_calls == _calls(run)
        assert all(i["id"] == i["call_id"] for i in out if i["type"] == "function_call")

        # Feeding the replayed items back in yields the same items again (stable, ids aside).
        again = responses_to_chat(ResponseCreateParams.model_validate({"input": out}))["messages"]
        assert len(again) == 1
        assert _without_fresh_ids(_replay(again[0])) == _without_fresh_ids(out)


def _without_fresh_ids(items: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Items with the ids the adapter mints (rs_/msg_) removed; call ids are kept (they must survive)."""
    return [
        item if item["type"] == "function_call" else {k: v for k, v in item.items() if k != "id"}
        for item in items
    ]
