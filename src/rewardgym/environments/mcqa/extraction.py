"""Pure answer-letter extraction for ``mcqa`` (no I/O, no pydantic).

Contract: every function takes the stripped model text plus the row's options / allowed letters and returns
an upper-case letter or ``None``; none of them raises on any model text. Regexes and rules are those of
NeMo Gym's ``resources_servers/mcqa`` as stated in ``docs/reference/environments.md`` §3 (quoted
exactly there):

- :func:`template_letter` — ``template_metadata.output_regex`` (str or list), last ``findall`` hit;
  raises :class:`TemplateRegexError` only for a pattern with two or more groups (NeMo Gym answers HTTP 500).
- :func:`strict_boxed_letter`, :func:`lenient_boxed_letter`, :func:`answer_colon_letter`,
  :func:`answer_colon_md_letter` — the four grading modes.
- Helpers N (:func:`normalize`), L (:func:`localize`) and C (:func:`choice_letter`); the ``\\boxed{}`` scan is
  :mod:`rewardgym.environments.boxed`'s, shared with ``string_match``.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Sequence

from rewardgym.environments.boxed import last_box, unwrap_text

Options = Sequence[dict[str, str | None]]
"""The row's ``options``: single-key dicts ``{letter: text | null}``."""

_LETTER_ONLY = re.compile(r"^[^A-Za-z]*([A-Z])[^A-Za-z]*$")
_LETTER_LABEL = re.compile(r"^\s*([A-Z])\s*[:).\-]")
_ANSWER_COLON = re.compile(r"(?i)answer\s*:\s*(.+)")
_ANSWER_COLON_MD = re.compile(r"(?im)[*_]{0,2}Answer[*_]{0,2}\s*:[*_\s]{0,2}(.+)")
_CHOICE_TOKEN = re.compile(r"(?<![A-Za-z])([A-Za-z])(?![A-Za-z])")
_LIST_SEPARATOR = re.compile(r"(?:\s*[/|&,;]\s*|\s+(?:or|and)\s+|\s+)", re.IGNORECASE)
_LEADING_LETTER = re.compile(r"^([a-zA-Z])(?![a-zA-Z0-9])")
_LAST_CAPITAL = re.compile(r"\b[A-Z]\b(?!.*\b[A-Z]\b)", re.DOTALL)
_CHOICE_STRIP = "*_` \t\n\r.,;:"

_LOCALISED_LETTERS: tuple[tuple[str, str], ...] = (
    ("أ", "A"),
    ("ب", "B"),
    ("ج", "C"),
    ("د", "D"),
    ("অ", "A"),
    ("ব", "B"),
    ("ড", "C"),
    ("ঢ", "D"),
    ("Ａ", "A"),
    ("Ｂ", "B"),
    ("Ｃ", "C"),
    ("Ｄ", "D"),
)


class TemplateRegexError(ValueError):
    """A ``template_metadata.output_regex`` pattern whose ``findall`` yields tuples (two or more groups)."""


def allowed_letters(options: Options | None) -> set[str]:
    """Upper-cased option keys that are one alphabetic character and carry a non-null text."""
    return {
        key.upper()
        for entry in options or ()
        for key, value in entry.items()
        if len(key) == 1 and value is not None and key.isalpha()
    }


def _option_texts(options: Options | None, allowed: set[str]) -> list[tuple[str, str]]:
    """``(LETTER, text)`` for every allowed option with a text, in list order."""
    return [
        (key.upper(), value)
        for entry in options or ()
        for key, value in entry.items()
        if value is not None and len(key) == 1 and key.upper() in allowed
    ]


def normalize(text: str) -> str:
    """N: lowercase and collapse every whitespace run to one space."""
    return " ".join(text.lower().split())


def localize(text: str) -> str:
    """L: Arabic / Bengali / full-width A–D become ``" " + Latin letter``; the result is stripped."""
    for local, latin in _LOCALISED_LETTERS:
        text = text.replace(local, " " + latin)
    return text.strip()


def template_letter(
    text: str, output_regex: str | Sequence[str], options: Options | None, allowed: set[str]
) -> str | None:
    """Apply each template pattern in order; the first non-null letter wins."""
    patterns = [output_regex] if isinstance(output_regex, str) else list(output_regex)
    for pattern in patterns:
        letter = _template_letter_one(text, pattern, options, allowed)
        if letter is not None:
            return letter
    return None


def _template_letter_one(text: str, pattern: str, options: Options | None, allowed: set[str]) -> str | None:
    try:
        hits: list[str | tuple[str, ...]] = re.findall(pattern, text, re.IGNORECASE)
    except re.error:
        return None
    if not hits:
        return None
    last = hits[-1]
    if isinstance(last, tuple):
        raise TemplateRegexError(
            f"template_metadata.output_regex {pattern!r} has {len(last)} groups; use at most one"
        )
    captured = localize(last.strip()).upper()
    if len(captured) == 1 and captured.isalpha():
        return captured
    wanted = normalize(captured)
    for letter, option_text in _option_texts(options, allowed):
        if normalize(option_text) == wanted:
            return letter
    return None


def strict_boxed_letter(text: str, allowed: set[str]) -> str | None:
    r"""``strict_single_letter_boxed``: a lone capital, or a capital label (``E: ...``), in the last box."""
    inner = last_box(text)
    if inner is None:
        return None
    inner = unwrap_text(inner.strip())
    match = _LETTER_ONLY.match(inner) or _LETTER_LABEL.match(inner)
    if match is None:
        return None
    letter = match.group(1).upper()
    return letter if letter in allowed else None


def lenient_boxed_letter(text: str, options: Options | None, allowed: set[str]) -> str | None:
    """``lenient_boxed``: strict first, else exactly one option text contained in the last box."""
    letter = strict_boxed_letter(text, allowed)
    if letter is not None:
        return letter
    inner = last_box(text)
    if inner is None:
        return None
    inner = inner.strip()
    candidates = [normalize(inner), normalize(unwrap_text(inner))]
    hits = {
        option_letter
        for option_letter, option_text in _option_texts(options, allowed)
        if (needle := normalize(option_text)) and any(needle in candidate for candidate in candidates)
    }
    return next(iter(hits)) if len(hits) == 1 else None


def answer_colon_letter(text: str, options: Options | None, allowed: set[str]) -> str | None:
    """``lenient_answer_colon``: the first ``answer:`` line holds a letter or an exact option text."""
    match = _ANSWER_COLON.search(text)
    if match is None:
        return None
    candidate = unwrap_text(match.group(1)).strip()
    if len(candidate) == 1 and candidate.isalpha() and candidate.upper() in allowed:
        return candidate.upper()
    wanted = normalize(candidate)
    for letter, option_text in _option_texts(options, allowed):
        if normalize(option_text) == wanted:
            return letter
    return None


def answer_colon_md_letter(text: str, allowed: set[str]) -> str | None:
    """``lenient_answer_colon_md``: markdown-aware ``Answer:`` payloads, from the last one backwards."""
    for payload in reversed(_ANSWER_COLON_MD.findall(text)):
        letter = choice_letter(payload, allowed)
        if letter is not None:
            return letter
    return None


def _is_ambiguous(candidate: str, allowed: set[str]) -> bool:
    """True when two different allowed letters are written as a list (``A/B``, ``A or B``, ``A, B``)."""
    tokens = [
        (match.group(1).upper(), match.start(1), match.end(1))
        for match in _CHOICE_TOKEN.finditer(candidate)
        if match.group(1).upper() in allowed
    ]
    return any(
        left[0] != right[0] and _LIST_SEPARATOR.fullmatch(candidate[left[2] : right[1]]) is not None
        for left, right in itertools.pairwise(tokens)
    )


def choice_letter(payload: str, allowed: set[str]) -> str | None:
    """C: one allowed letter from an ``Answer:`` payload, or ``None`` when absent or ambiguous."""
    candidate = localize(payload).strip().strip(_CHOICE_STRIP)
    if _is_ambiguous(candidate, allowed):
        return None
    letter: str | None
    if len(candidate) == 1:
        letter = candidate
    elif (leading := _LEADING_LETTER.match(candidate)) is not None:
        letter = leading.group(1)
    elif (last := _LAST_CAPITAL.search(candidate)) is not None:
        letter = last.group(0)
    else:
        letter = None
    if letter is None:
        return None
    upper = letter.upper()
    return upper if upper in allowed else None
