"""The NeMo RL string-match grader ``G(gt, pred)`` used by ``string_match`` (pure functions).

Contract (``docs/reference/environments.md`` §9): :func:`grade` returns 1.0, 0.98 or 0.0.

1. Both sides are NFKC-normalised, lose one pair of matching outer quotes, are lower-cased and lose trailing
   ``.!?`` (unless that empties them).
2. 1.0 at the first equal form among: raw, float form, number form, LaTeX form, list form, US-state form.
3. 0.98 if the soft-numeric score ``S`` exceeds 0.98.
4. Unit stripping (``UNITS`` removed from ``U(LaTeX(x))``): equal → 1.0; ``S`` > 0.98 → 0.98.
5. Otherwise 0.0.

The quirks are NeMo's and are kept on purpose: the number form merges only one ``,`` between digit runs per
match (``1,000,000`` → ``1000,000``) and the list form removes the *substrings* ``and``/``or``.
"""

from __future__ import annotations

import re
import unicodedata

_LATEX_WRAPPERS = (
    "\\boxed",
    "\\text",
    "\\textbf",
    "\\textit",
    "\\texttt",
    "\\mathrm",
    "\\mathbf",
    "\\mathit",
    "\\mathsf",
    "\\mathbb",
    "\\mathcal",
    "\\emph",
    "\\url",
)
_LATEX_DELIMITERS = ("\\(", "\\)", "\\[", "\\]", "$")
_THOUSANDS = re.compile(r"(\d+),(\d+)")
UNITS = re.compile(r"\^\{?\\circ\}?|\\circ|°|cm[²³]?|mm|km|m[²³]?|kg")
"""Units removed by the unit-stripping step and by ``S``."""

_UNICODE_MATH = (
    ("°", "^\\circ"),
    ("²", "^2"),
    ("³", "^3"),
    ("⁴", "^4"),
    ("⁵", "^5"),
    ("⁶", "^6"),
    ("⁷", "^7"),
    ("⁸", "^8"),
    ("⁹", "^9"),
    ("√", "\\sqrt"),
    ("﹣", "-"),
    ("﹢", "+"),
    ("﹦", "="),
    ("﹤", "<"),
    ("﹥", ">"),
    ("：", ":"),
    ("π", "\\pi"),
)

# Multi-word names first so "west virginia" is not read as "west VA".
US_STATES: tuple[tuple[str, str], ...] = (
    ("district of columbia", "DC"),
    ("new hampshire", "NH"),
    ("new jersey", "NJ"),
    ("new mexico", "NM"),
    ("new york", "NY"),
    ("north carolina", "NC"),
    ("north dakota", "ND"),
    ("rhode island", "RI"),
    ("south carolina", "SC"),
    ("south dakota", "SD"),
    ("west virginia", "WV"),
    ("alabama", "AL"),
    ("alaska", "AK"),
    ("arizona", "AZ"),
    ("arkansas", "AR"),
    ("california", "CA"),
    ("colorado", "CO"),
    ("connecticut", "CT"),
    ("delaware", "DE"),
    ("florida", "FL"),
    ("georgia", "GA"),
    ("hawaii", "HI"),
    ("idaho", "ID"),
    ("illinois", "IL"),
    ("indiana", "IN"),
    ("iowa", "IA"),
    ("kansas", "KS"),
    ("kentucky", "KY"),
    ("louisiana", "LA"),
    ("maine", "ME"),
    ("maryland", "MD"),
    ("massachusetts", "MA"),
    ("michigan", "MI"),
    ("minnesota", "MN"),
    ("mississippi", "MS"),
    ("missouri", "MO"),
    ("montana", "MT"),
    ("nebraska", "NE"),
    ("nevada", "NV"),
    ("ohio", "OH"),
    ("oklahoma", "OK"),
    ("oregon", "OR"),
    ("pennsylvania", "PA"),
    ("tennessee", "TN"),
    ("texas", "TX"),
    ("utah", "UT"),
    ("vermont", "VT"),
    ("virginia", "VA"),
    ("washington", "WA"),
    ("wisconsin", "WI"),
    ("wyoming", "WY"),
)
"""Lower-case state names and their codes, in replacement order (longer names first)."""


def _strip_outer_quotes(text: str) -> str:
    if len(text) >= 2 and text[0] == text[-1] and text[0] in "\"'":
        return text[1:-1]
    return text


def _strip_trailing_punctuation(text: str) -> str:
    return text.rstrip(".!?") or text


def float_form(text: str) -> str:
    """``str(float(x))`` after removing ``\\%``, ``\\$`` and ``$``; the input itself when not a number."""
    cleaned = text.replace("\\%", "").replace("\\$", "").replace("$", "").strip()
    try:
        return str(float(cleaned))
    except ValueError:
        return text


def number_form(text: str) -> str:
    """One non-overlapping pass of ``(\\d+),(\\d+)`` → ``\\1\\2``, then ``\\%`` → ``%``."""
    return _THOUSANDS.sub(r"\1\2", text).replace("\\%", "%")


def _closing_brace(text: str) -> int:
    """Index of the ``}`` closing an already-open brace at the start of ``text``, or -1."""
    depth = 1
    for index, char in enumerate(text):
        if char == "{":
            depth += 1
        elif char == "}":
            depth -= 1
            if depth == 0:
                return index
    return -1


def _remove_wrapper(command: str, text: str) -> str:
    """Drop every ``command{...}`` wrapper but keep its content (an unclosed one loses only its head)."""
    opener = command + "{"
    while opener in text:
        prefix, suffix = text.split(opener, 1)
        end = _closing_brace(suffix)
        text = prefix + (suffix if end < 0 else suffix[:end] + suffix[end + 1 :])
    return text


def latex_form(text: str) -> str:
    """Unwrap formatting commands, drop math delimiters and collapse whitespace."""
    for command in _LATEX_WRAPPERS:
        text = _remove_wrapper(command, text)
    for delimiter in _LATEX_DELIMITERS:
        text = text.replace(delimiter, "")
    return " ".join(text.split())


def list_form(text: str) -> str:
    """``,`` ``;`` and the substrings ``and``/``or`` become spaces, unless that shrinks it by over 10%."""
    replaced = text.replace(",", " ").replace(";", " ").replace("and", " ").replace("or", " ")
    if len(replaced) < 0.9 * len(text):
        return text
    return " ".join(replaced.split())


def state_form(text: str) -> str:
    """Full US state names → 2-letter codes, then the list form, lower-cased."""
    for name, code in US_STATES:
        text = text.replace(name, code)
    return list_form(text).lower()


def unicode_math(text: str) -> str:
    """U: degree sign, superscripts, root, small-form operators, full-width colon and pi to LaTeX/ASCII."""
    for source, target in _UNICODE_MATH:
        text = text.replace(source, target)
    return text


def _numeric_core(text: str) -> str:
    for char in "$£€%,":
        text = text.replace(char, "")
    text = UNITS.sub("", unicode_math(text))
    return text.replace("\\%", "").replace("\\$", "").strip()


def soft_numeric(gt: str, pred: str) -> float:
    """S: ``max(0, 1 - relative error)**2`` of the numeric cores; 0.0 when either is not a number."""
    try:
        pred_value = float(_numeric_core(pred))
        gt_value = float(_numeric_core(gt))
    except ValueError:
        return 0.0
    relative = abs(pred_value - gt_value) / max(abs(gt_value), 1e-9)
    return max(0.0, 1.0 - relative) ** 2


def _prepare(text: str) -> str:
    text = _strip_outer_quotes(unicodedata.normalize("NFKC", text)).lower()
    return _strip_trailing_punctuation(text)


def grade(gt: str, pred: str) -> float:
    """``G(gt, pred)``: 1.0 (equal under some form), 0.98 (numerically within ~1%), else 0.0."""
    gt, pred = _prepare(gt), _prepare(pred)
    forms = (float_form, number_form, latex_form, list_form, state_form)
    if pred == gt or any(form(pred) == form(gt) for form in forms):
        return 1.0
    if soft_numeric(gt, pred) > 0.98:
        return 0.98
    pred_core = UNITS.sub("", unicode_math(latex_form(pred))).strip()
    gt_core = UNITS.sub("", unicode_math(latex_form(gt))).strip()
    if pred_core == gt_core:
        return 1.0
    if soft_numeric(gt_core, pred_core) > 0.98:
        return 0.98
    return 0.0
