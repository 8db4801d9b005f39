"""The 29 instruction families that AllenAI's open-instruct added to IFEval for RLVR training (IFEvalG).

Each function states its rule in its docstring; argument names are the row's ``kwargs`` keys.
"Words" are whitespace-separated tokens unless a docstring says NLTK tokens or sentences; "sentences"
are IFEval's rule-based sentences (:func:`split_into_sentences`), not Punkt's.
"""

from __future__ import annotations

import itertools
import re

from pydantic import StrictInt, StrictStr

from rewardgym.environments.instruction_following.instructions.base import (
    Args,
    NoArgs,
    Number,
    Relation,
    Word,
    compare,
    instruction,
)
from rewardgym.environments.instruction_following.instructions.checks_ifeval import (
    LetterFrequencyArgs,
    PromptArgs,
    keyword_count,
    letter_frequency,
)
from rewardgym.environments.instruction_following.text import (
    count_nonempty_outer,
    split_into_sentences,
    split_paragraphs_divider,
    word_tokenize,
)


def _same_text(a: str, b: str) -> bool:
    return a.strip().lower() == b.strip().lower()


def _strip_punctuation(word: str) -> str:
    return re.sub(r"[^\w\s]", "", word)


# --- copying --------------------------------------------------------------------------------------------
class RepeatPhraseArgs(Args):
    phrase: Word
    small_n: StrictInt


@instruction("copy:repeat_phrase", RepeatPhraseArgs)
def repeat_phrase(text: str, args: RepeatPhraseArgs) -> bool:
    """Exactly ``small_n`` spans "<first word> ... <last word>" of the phrase, each differing in one word.

    Spans are found with the regex ``first .*? last`` (within a line). Every span may differ from the
    phrase in at most one position, a span longer than the phrase fails, and the last span must differ
    in exactly one position (the reference's rule).
    """
    reference = args.phrase.strip().split()
    spans = re.findall(rf"{reference[0]} .*? {reference[-1]}", text)
    if len(spans) != args.small_n:
        return False
    differences = 0
    for span in spans:
        words = span.split()
        if len(words) > len(reference):
            return False
        differences = sum(1 for mine, theirs in zip(words, reference, strict=False) if mine != theirs)
        if differences > 1:
            return False
    return differences == 1


@instruction("copy:copy", PromptArgs)
def copy(text: str, args: PromptArgs) -> bool:
    """The text is the prompt, verbatim (case-insensitive, outer whitespace ignored)."""
    return _same_text(text, args.prompt_to_repeat)


@instruction("copy:copying_simple", PromptArgs)
def copying_simple(text: str, args: PromptArgs) -> bool:
    """The text is the prompt, verbatim (case-insensitive, outer whitespace ignored)."""
    return _same_text(text, args.prompt_to_repeat)


class CopyingMultipleArgs(PromptArgs):
    N: StrictInt


@instruction("copy:copying_multiple", CopyingMultipleArgs)
def copying_multiple(text: str, args: CopyingMultipleArgs) -> bool:
    """``N`` copies of the prompt separated by ``******`` and nothing else."""
    copies = text.split("******")
    return len(copies) == args.N and all(_same_text(c, args.prompt_to_repeat) for c in copies)


class CopySpanArgs(PromptArgs):
    n_start: StrictInt
    n_end: StrictInt


@instruction("new:copy_span_idx", CopySpanArgs)
def copy_span_idx(text: str, args: CopySpanArgs) -> bool:
    """The text is ``prompt_to_repeat[n_start:n_end]`` (case-insensitive, outer whitespace ignored)."""
    return _same_text(text, args.prompt_to_repeat[args.n_start : args.n_end])


# --- format ---------------------------------------------------------------------------------------------
@instruction("detectable_format:sentence_hyphens", NoArgs)
def sentence_hyphens(text: str, args: NoArgs) -> bool:
    """Sentences are joined by ``-`` with no surrounding spaces.

    Each ``-``-separated piece must have no outer whitespace and equal the matching sentence of the text
    with hyphens read as spaces.
    """
    gold = split_into_sentences(text.replace("-", " "))
    pairs = zip(text.split("-"), gold, strict=False)
    return all(piece.strip() == piece and piece == sentence for piece, sentence in pairs)


@instruction("detectable_format:square_brackets", NoArgs)
def square_brackets(text: str, args: NoArgs) -> bool:
    """Every word starts with ``[`` and ends with ``]``."""
    return all(word.startswith("[") and word.endswith("]") for word in text.split())


@instruction("detectable_format:bigram_wrapping", NoArgs)
def bigram_wrapping(text: str, args: NoArgs) -> bool:
    """Words pair up as ``<<first second>>`` (a trailing odd word is not checked)."""
    words = text.split()
    return all(words[i].startswith("<<") and words[i + 1].endswith(">>") for i in range(0, len(words) - 1, 2))


@instruction("paragraphs:paragraphs", NoArgs)
def paragraphs(text: str, args: NoArgs) -> bool:
    """Exactly 2 paragraphs between ``***`` dividers; an empty inner one fails."""
    return count_nonempty_outer(split_paragraphs_divider(text)) == 2


@instruction("paragraphs:paragraphs2", NoArgs)
def paragraphs2(text: str, args: NoArgs) -> bool:
    """Exactly 2 paragraphs separated by a blank line (``\\n\\n``); an empty inner one fails."""
    return count_nonempty_outer(text.split("\n\n")) == 2


# --- punctuation ----------------------------------------------------------------------------------------
@instruction("punctuation:punctuation_dot", NoArgs)
def punctuation_dot(text: str, args: NoArgs) -> bool:
    """No ``.`` anywhere."""
    return "." not in text


@instruction("punctuation:punctuation_exclamation", NoArgs)
def punctuation_exclamation(text: str, args: NoArgs) -> bool:
    """No ``!`` anywhere."""
    return "!" not in text


# --- first and last words -------------------------------------------------------------------------------
class FirstWordArgs(Args):
    first_word: Word


@instruction("first_word:first_word_sent", FirstWordArgs)
def first_word_sent(text: str, args: FirstWordArgs) -> bool:
    """Every sentence's first word is ``first_word`` (case-insensitive; punctuation is part of the word)."""
    expected = args.first_word.strip().lower()
    for sentence in split_into_sentences(text):
        if not sentence.strip() or sentence.split()[0].strip().lower() != expected:
            return False
    return True


@instruction("first_word:first_word_answer", FirstWordArgs)
def first_word_answer(text: str, args: FirstWordArgs) -> bool:
    """The first word of the text is ``first_word`` (case-insensitive); empty text fails."""
    words = text.split()
    return bool(words) and words[0].strip().lower() == args.first_word.strip().lower()


class LastWordSentArgs(Args):
    last_word: Word | list[StrictStr]


@instruction("last_word:last_word_sent", LastWordSentArgs)
def last_word_sent(text: str, args: LastWordSentArgs) -> bool:
    """Every sentence's last word, without punctuation, is ``last_word`` (case-insensitive)."""
    expected = (args.last_word if isinstance(args.last_word, str) else args.last_word[0]).strip().lower()
    for sentence in split_into_sentences(text):
        if not sentence.strip() or _strip_punctuation(sentence.split()[-1].strip()).lower() != expected:
            return False
    return True


class LastWordArgs(Args):
    last_word: Word


@instruction("last_word:last_word_answer", LastWordArgs)
def last_word_answer(text: str, args: LastWordArgs) -> bool:
    """The last word of the text, without punctuation, is ``last_word`` (case-insensitive)."""
    words = text.split()
    return bool(words) and _strip_punctuation(words[-1].strip()).lower() == args.last_word.strip().lower()


# --- keywords -------------------------------------------------------------------------------------------
class KeywordArgs(Args):
    keyword: Word


@instruction("keywords:word_once", KeywordArgs)
def word_once(text: str, args: KeywordArgs) -> bool:
    """The keyword (a regex, case-insensitive) occurs exactly once."""
    return keyword_count(args.keyword, text) == 1


class KeywordCountArgs(Args):
    keyword: Word
    frequency: Number
    relation: Relation


@instruction("keywords:word_count_different_numbers", KeywordCountArgs)
def word_count_different_numbers(text: str, args: KeywordCountArgs) -> bool:
    """The keyword (a regex, case-insensitive) occurs ``relation`` ``frequency`` times."""
    return compare(keyword_count(args.keyword, text), args.relation, args.frequency)


class ExcludeWordArgs(Args):
    keyword: Word
    instruction: StrictStr | None = None


@instruction("keywords:exclude_word_harder", ExcludeWordArgs)
def exclude_word_harder(text: str, args: ExcludeWordArgs) -> bool:
    """The keyword never appears with a space on both sides (case-sensitive)."""
    return f" {args.keyword.strip()} " not in text


@instruction("keywords:no_adjacent_consecutive", NoArgs)
def no_adjacent_consecutive(text: str, args: NoArgs) -> bool:
    """No two adjacent words start with consecutive letters (``a`` then ``b``), ignoring case."""
    words = text.split()
    for left, right in itertools.pairwise(words):
        first, second = left[0].lower(), right[0].lower()
        if len(first) != 1 or len(second) != 1 or ord(second) - ord(first) == 1:
            return False
    return True


@instruction("keywords:palindrome", NoArgs)
def palindrome(text: str, args: NoArgs) -> bool:
    """Some word reads the same backwards (single characters count)."""
    return any(word == word[::-1] for word in text.split())


class KeywordPositionArgs(Args):
    keyword: Word | list[StrictStr]
    n: StrictInt
    m: StrictInt


@instruction("keywords:keyword_specific_position", KeywordPositionArgs)
def keyword_specific_position(text: str, args: KeywordPositionArgs) -> bool:
    """NLTK token ``m`` of sentence ``n`` (both from 1) is exactly the keyword."""
    if args.n < 1 or args.m < 1:
        return False
    keyword = (args.keyword if isinstance(args.keyword, str) else args.keyword[0]).strip()
    sentences = split_into_sentences(text)
    if len(sentences) < args.n:
        return False
    words = word_tokenize(sentences[args.n - 1])
    return len(words) >= args.m and words[args.m - 1] == keyword


@instruction("keywords:start_end", NoArgs)
def start_end(text: str, args: NoArgs) -> bool:
    """At least two NLTK tokens and the first equals the last (case-insensitive)."""
    words = word_tokenize(text)
    return len(words) >= 2 and words[0].lower() == words[-1].lower()


# --- counting -------------------------------------------------------------------------------------------
class LowercaseCountArgs(Args):
    N: Number


@instruction("count:lowercase_counting", LowercaseCountArgs)
def lowercase_counting(text: str, args: LowercaseCountArgs) -> bool:
    """At most ``N`` all-lowercase ASCII words (``\\b[a-z]+\\b``) in the whole text."""
    return len(re.findall(r"\b[a-z]+\b", text)) <= args.N


class LetterCountArgs(Args):
    N: Number
    relation: Relation


@instruction("letters:letter_counting", LetterCountArgs)
def letter_counting(text: str, args: LetterCountArgs) -> bool:
    """The number of ASCII letters is ``relation`` ``N``."""
    return compare(len(re.findall(r"[a-zA-Z]", text)), args.relation, args.N)


@instruction("letters:letter_counting2", LetterFrequencyArgs)
def letter_counting2(text: str, args: LetterFrequencyArgs) -> bool:
    """Same rule as ``keywords:letter_frequency``."""
    return letter_frequency(text, args)


class CompositionArgs(Args):
    n_sent: StrictInt
    n_words: StrictInt


@instruction("count:counting_composition", CompositionArgs)
def counting_composition(text: str, args: CompositionArgs) -> bool:
    """3 ``***`` paragraphs of ``n_sent`` sentences of ``n_words`` NLTK tokens each.

    As in the reference, every piece between dividers (even an empty first or last one) must have
    ``n_sent`` sentences, so a leading or trailing divider fails.
    """
    pieces = split_paragraphs_divider(text)
    if count_nonempty_outer(pieces) is None:
        return False
    for piece in pieces:
        sentences = split_into_sentences(piece)
        if len(sentences) != args.n_sent:
            return False
        if any(len(word_tokenize(sentence)) != args.n_words for sentence in sentences):
            return False
    return count_nonempty_outer(pieces) == 3


@instruction("count:count_unique", NoArgs)
def count_unique(text: str, args: NoArgs) -> bool:
    """No NLTK token (punctuation included) occurs twice."""
    words = word_tokenize(text)
    return len(words) == len(set(words))


class IncrementArgs(Args):
    keyword1: Word
    keyword2: Word


@instruction("count:count_increment_word", IncrementArgs)
def count_increment_word(text: str, args: IncrementArgs) -> bool:
    """``keyword1`` occurs exactly once and ``keyword2`` exactly twice (regexes, case-insensitive)."""
    return keyword_count(args.keyword1, text) == 1 and keyword_count(args.keyword2, text) == 2
