r"""The shared ``\boxed{}`` scan: the last box (mcqa) and the last balanced box (string_match)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from rewardgym.environments.boxed import box_contents, last_balanced_box, last_box, unwrap_text


@pytest.mark.parametrize(
    ("text", "last", "balanced"),
    [
        ("no box", None, None),
        (r"\boxed{A}", "A", "A"),
        (r"\boxed{A} then \boxed{B}", "B", "B"),
        (r"\boxed{\frac{1}{2}}", r"\frac{1}{2}", r"\frac{1}{2}"),
        (r"\boxed{A} then \boxed{B", None, "A"),  # an unclosed last box: mcqa finds nothing
        (r"\boxed{", None, None),
        (r"\boxed{}", "", ""),
    ],
)
def test_boxes(text: str, last: str | None, balanced: str | None) -> None:
    assert last_box(text) == last
    assert last_balanced_box(text) == balanced


def test_unwrap_text_peels_whole_string_wrappers_only() -> None:
    assert unwrap_text(r"\text{ \text{B} }") == "B"
    assert unwrap_text(r"x \text{B}") == r"x \text{B}"


@given(st.text(alphabet="{}\\boxed xy", max_size=40))
def test_no_text_raises_and_a_box_balances(text: str) -> None:
    for inner in (last_box(text), last_balanced_box(text)):
        if inner is not None:
            assert inner.count("{") == inner.count("}")
    assert box_contents(text, len(text)) is None
