"""The 25 instruction families of Google's IFEval, as used by open-instruct's IFEvalG registry.

Each function states its rule in its docstring; argument names are the row's ``kwargs`` keys.
Keywords and phrases given by the row are used as regular expressions where IFEval does so.
"""

from __future__ import annotations

import json
import re
from collections import Counter

from pydantic import StrictInt, StrictStr, field_validator

from rewardgym.environments.instruction_following.instructions.base import (
    Args,
    NoArgs,
    Number,
    Relation,
    Word,
    compare,
    instruction,
)
from rewardgym.environments.instruction_following.instructions.language import detect_language
from rewardgym.environments.instruction_following.text import (
    count_nonempty_outer,
    count_sentences,
    count_words,
    split_paragraphs_divider,
    word_tokenize,
)

LANGUAGE_CODES = frozenset(
    {
        *("en", "es", "pt", "ar", "hi", "fr", "ru", "de", "ja", "it", "bn", "uk", "th", "ur", "ta"),
        *("te", "bg", "ko", "pl", "he", "fa", "vi", "ne", "sw", "kn", "mr", "gu", "pa", "ml", "fi"),
    }
)
"""ISO 639-1 codes IFEval accepts for ``language:response_language`` (others fail the instruction)."""

CONSTRAINED_RESPONSES = ("My answer is yes.", "My answer is no.", "My answer is maybe.")


# --- keywords -------------------------------------------------------------------------------------------
class KeywordsArgs(Args):
    keywords: list[StrictStr]
    """Regexes that must all occur (an empty list fails: the reference would draw random keywords)."""

    @field_validator("keywords")
    @classmethod
    def _non_empty(cls, value: list[str]) -> list[str]:
        if not value:
            raise ValueError("keywords must not be empty")
        return value


@instruction("keywords:existence", KeywordsArgs)
def keywords_existence(text: str, args: KeywordsArgs) -> bool:
    """Every keyword (a regex) is found, ignoring case."""
    return all(re.search(keyword, text, flags=re.IGNORECASE) for keyword in args.keywords)


class KeywordFrequencyArgs(Args):
    keyword: Word
    frequency: Number
    relation: Relation


def keyword_count(keyword: str, text: str) -> int:
    """Occurrences of ``keyword.strip()`` used as a regex, ignoring case."""
    return len(re.findall(keyword.strip(), text, flags=re.IGNORECASE))


@instruction("keywords:frequency", KeywordFrequencyArgs)
def keywords_frequency(text: str, args: KeywordFrequencyArgs) -> bool:
    """The keyword occurs ``relation`` ``frequency`` times."""
    return compare(keyword_count(args.keyword, text), args.relation, args.frequency)


class ForbiddenWordsArgs(Args):
    forbidden_words: list[StrictStr]

    @field_validator("forbidden_words")
    @classmethod
    def _non_empty(cls, value: list[str]) -> list[str]:
        if not value:
            raise ValueError("forbidden_words must not be empty")
        return value


@instruction("keywords:forbidden_words", ForbiddenWordsArgs)
def forbidden_words(text: str, args: ForbiddenWordsArgs) -> bool:
    """No forbidden word occurs as a whole word (``\\bword\\b``), ignoring case."""
    return not any(
        re.search(r"\b" + word + r"\b", text, flags=re.IGNORECASE) for word in set(args.forbidden_words)
    )


class LetterFrequencyArgs(Args):
    letter: StrictStr
    let_frequency: Number
    let_relation: Relation

    @field_validator("letter")
    @classmethod
    def _one_ascii_letter(cls, value: str) -> str:
        if len(value) != 1 or not ("a" <= value.lower() <= "z"):
            raise ValueError("letter must be one ASCII letter")
        return value.lower()


@instruction("keywords:letter_frequency", LetterFrequencyArgs)
def letter_frequency(text: str, args: LetterFrequencyArgs) -> bool:
    """The letter (case-insensitive) occurs ``let_relation`` ``let_frequency`` times."""
    return compare(Counter(text.lower())[args.letter], args.let_relation, args.let_frequency)


# --- language and case ----------------------------------------------------------------------------------
class LanguageArgs(Args):
    language: StrictStr

    @field_validator("language")
    @classmethod
    def _known(cls, value: str) -> str:
        if value not in LANGUAGE_CODES:
            raise ValueError(f"unsupported language {value!r}")
        return value


@instruction("language:response_language", LanguageArgs)
def response_language(text: str, args: LanguageArgs) -> bool:
    """The detected language is ``language``; undetectable text counts as followed."""
    detected = detect_language(text)
    return detected is None or detected == args.language


@instruction("change_case:english_capital", NoArgs)
def english_capital(text: str, args: NoArgs) -> bool:
    """All cased characters are upper case and the text is English (undetectable counts as English)."""
    return text.isupper() and detect_language(text) in (None, "en")


@instruction("change_case:english_lowercase", NoArgs)
def english_lowercase(text: str, args: NoArgs) -> bool:
    """All cased characters are lower case and the text is English (undetectable counts as English)."""
    return text.islower() and detect_language(text) in (None, "en")


class CapitalFrequencyArgs(Args):
    capital_frequency: Number
    capital_relation: Relation


@instruction("change_case:capital_word_frequency", CapitalFrequencyArgs)
def capital_word_frequency(text: str, args: CapitalFrequencyArgs) -> bool:
    """Words (NLTK tokens) that are all upper case occur ``capital_relation`` ``capital_frequency`` times."""
    capitals = sum(1 for word in word_tokenize(text) if word.isupper())
    return compare(capitals, args.capital_relation, args.capital_frequency)


# --- length ---------------------------------------------------------------------------------------------
class SentencesArgs(Args):
    num_sentences: Number
    relation: Relation


@instruction("length_constraints:number_sentences", SentencesArgs)
def number_sentences(text: str, args: SentencesArgs) -> bool:
    """The number of Punkt sentences is ``relation`` ``num_sentences``."""
    return compare(count_sentences(text), args.relation, args.num_sentences)


class ParagraphsArgs(Args):
    num_paragraphs: Number


@instruction("length_constraints:number_paragraphs", ParagraphsArgs)
def number_paragraphs(text: str, args: ParagraphsArgs) -> bool:
    """Exactly ``num_paragraphs`` paragraphs between ``***`` dividers; an empty inner one fails."""
    count = count_nonempty_outer(split_paragraphs_divider(text))
    return count is not None and count == args.num_paragraphs


class WordsArgs(Args):
    num_words: Number
    relation: Relation


@instruction("length_constraints:number_words", WordsArgs)
def number_words(text: str, args: WordsArgs) -> bool:
    """The number of ``\\w+`` words is ``relation`` ``num_words``."""
    return compare(count_words(text), args.relation, args.num_words)


class NthParagraphArgs(Args):
    num_paragraphs: StrictInt
    nth_paragraph: StrictInt
    first_word: StrictStr


@instruction("length_constraints:nth_paragraph_first_word", NthParagraphArgs)
def nth_paragraph_first_word(text: str, args: NthParagraphArgs) -> bool:
    """``num_paragraphs`` blank-line paragraphs, and paragraph ``nth_paragraph`` starts with ``first_word``.

    Paragraphs are split on ``\\n\\n``; blank pieces are not counted but still occupy an index. The first
    word is the first whitespace token without leading quotes, cut at the first ``.,?!'"``, lower-cased.
    """
    if not 0 < args.nth_paragraph <= args.num_paragraphs:
        return False
    pieces = text.split("\n\n")
    count = sum(1 for piece in pieces if piece.strip())
    if args.nth_paragraph > count:
        return False
    paragraph = pieces[args.nth_paragraph - 1].strip()
    if not paragraph:
        return False
    word = paragraph.split()[0].strip().lstrip("'").lstrip('"')
    first = ""
    for char in word:
        if char in {".", ",", "?", "!", "'", '"'}:
            break
        first += char.lower()
    return count == args.num_paragraphs and first == args.first_word.lower()


# --- content and format ---------------------------------------------------------------------------------
class PlaceholdersArgs(Args):
    num_placeholders: Number


@instruction("detectable_content:number_placeholders", PlaceholdersArgs)
def number_placeholders(text: str, args: PlaceholdersArgs) -> bool:
    """At least ``num_placeholders`` ``[...]`` placeholders (non-greedy, within a line)."""
    return len(re.findall(r"\[.*?\]", text)) >= args.num_placeholders


class PostscriptArgs(Args):
    postscript_marker: StrictStr


@instruction("detectable_content:postscript", PostscriptArgs)
def postscript(text: str, args: PostscriptArgs) -> bool:
    """A line contains the postscript marker (``P.S.`` and ``P.P.S`` allow optional inner spaces)."""
    marker = args.postscript_marker.strip()
    if marker == "P.P.S":
        pattern = r"\s*p\.\s?p\.\s?s.*$"
    elif marker == "P.S.":
        pattern = r"\s*p\.\s?s\..*$"
    else:
        pattern = r"\s*" + marker.lower() + r".*$"
    return bool(re.findall(pattern, text.lower(), flags=re.MULTILINE))


class BulletsArgs(Args):
    num_bullets: Number


@instruction("detectable_format:number_bullet_lists", BulletsArgs)
def number_bullet_lists(text: str, args: BulletsArgs) -> bool:
    """Exactly ``num_bullets`` lines start with ``*`` (not ``**``) or ``-`` after optional whitespace."""
    stars = re.findall(r"^\s*\*[^\*].*$", text, flags=re.MULTILINE)
    dashes = re.findall(r"^\s*-.*$", text, flags=re.MULTILINE)
    return len(stars) + len(dashes) == args.num_bullets


@instruction("detectable_format:constrained_response", NoArgs)
def constrained_response(text: str, args: NoArgs) -> bool:
    """The text contains one of "My answer is yes./no./maybe."."""
    stripped = text.strip()
    return any(option in stripped for option in CONSTRAINED_RESPONSES)


class HighlightsArgs(Args):
    num_highlights: Number


@instruction("detectable_format:number_highlighted_sections", HighlightsArgs)
def number_highlighted_sections(text: str, args: HighlightsArgs) -> bool:
    """At least ``num_highlights`` non-empty ``*...*`` plus ``**...**`` spans (counted separately)."""
    singles = [h for h in re.findall(r"\*[^\n\*]*\*", text) if h.strip("*").strip()]
    doubles = [
        h for h in re.findall(r"\*\*[^\n\*]*\*\*", text) if h.removeprefix("**").removesuffix("**").strip()
    ]
    return len(singles) + len(doubles) >= args.num_highlights


class SectionsArgs(Args):
    section_spliter: StrictStr
    num_sections: Number


@instruction("detectable_format:multiple_sections", SectionsArgs)
def multiple_sections(text: str, args: SectionsArgs) -> bool:
    """At least ``num_sections`` "<spliter> <number>" markers (the spliter is a regex)."""
    pattern = r"\s?" + args.section_spliter.strip() + r"\s?\d+\s?"
    return len(re.split(pattern, text)) - 1 >= args.num_sections


@instruction("detectable_format:json_format", NoArgs)
def json_format(text: str, args: NoArgs) -> bool:
    """The text, without surrounding whitespace and one optional code fence, is valid JSON."""
    value = text.strip()
    for fence in ("```json", "```Json", "```JSON", "```"):
        value = value.removeprefix(fence)
    value = value.removesuffix("```").strip()
    try:
        json.loads(value)
    except ValueError:
        return False
    return True


@instruction("detectable_format:title", NoArgs)
def title(text: str, args: NoArgs) -> bool:
    """A ``<<title>>`` on one line with non-blank content."""
    return any(t.lstrip("<").rstrip(">").strip() for t in re.findall(r"<<[^\n]+>>", text))


@instruction("combination:two_responses", NoArgs)
def two_responses(text: str, args: NoArgs) -> bool:
    """Exactly two different non-blank responses separated by ``******`` (blank only at the ends)."""
    parts = text.split("******")
    responses: list[str] = []
    for index, part in enumerate(parts):
        if part.strip():
            responses.append(part)
        elif index not in (0, len(parts) - 1):
            return False
    return len(responses) == 2 and responses[0].strip() != responses[1].strip()


class PromptArgs(Args):
    prompt_to_repeat: StrictStr

    @field_validator("prompt_to_repeat")
    @classmethod
    def _non_empty(cls, value: str) -> str:
        if not value:
            raise ValueError("prompt_to_repeat must be set")
        return value


@instruction("combination:repeat_prompt", PromptArgs)
def repeat_prompt(text: str, args: PromptArgs) -> bool:
    """The text starts with the prompt (case-insensitive, outer whitespace ignored)."""
    return text.strip().lower().startswith(args.prompt_to_repeat.strip().lower())


class EndPhraseArgs(Args):
    end_phrase: StrictStr


@instruction("startend:end_checker", EndPhraseArgs)
def end_checker(text: str, args: EndPhraseArgs) -> bool:
    """The text (outer whitespace and double quotes removed) ends with the phrase, ignoring case."""
    return text.strip().strip('"').lower().endswith(args.end_phrase.strip().lower())


@instruction("startend:quotation", NoArgs)
def quotation(text: str, args: NoArgs) -> bool:
    """The stripped text is wrapped in double quotes."""
    value = text.strip()
    return len(value) > 1 and value[0] == '"' and value[-1] == '"'


@instruction("punctuation:no_comma", NoArgs)
def no_comma(text: str, args: NoArgs) -> bool:
    """No comma anywhere."""
    return "," not in text
