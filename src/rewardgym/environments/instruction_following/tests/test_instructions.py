"""Rule vectors for every registered instruction family: one text that follows it, one that does not."""

from __future__ import annotations

from typing import Any

import pytest

from rewardgym.environments.instruction_following.instructions import REGISTRY, evaluate

PROMPT = "Write a haiku about the sea"

# (instruction id, kwargs, text that follows, text that does not)
VECTORS: list[tuple[str, dict[str, Any] | None, str, str]] = [
    ("keywords:existence", {"keywords": ["ocean", "sal+t"]}, "The OCEAN is saltt.", "The ocean is wet."),
    ("keywords:frequency", {"keyword": "sea", "frequency": 2, "relation": "at least"}, "sea Sea", "sea"),
    ("keywords:frequency", {"keyword": "sea", "frequency": 2, "relation": "less than"}, "sea", "sea seaside"),
    ("keywords:forbidden_words", {"forbidden_words": ["part"]}, "a partial view", "a Part of it"),
    ("keywords:letter_frequency", {"letter": "Z", "let_frequency": 2, "let_relation": "at least"}, "zZ", "z"),
    (
        "language:response_language",
        {"language": "en"},
        "This is clearly an English sentence about the weather.",
        "Ceci est une phrase en français sur le temps qu'il fait.",
    ),
    (
        "length_constraints:number_sentences",
        {"num_sentences": 2, "relation": "less than"},
        "One sentence only.",
        "One. Two. Three.",
    ),
    (
        "length_constraints:number_paragraphs",
        {"num_paragraphs": 2},
        "First.\n***\nSecond.\n***",
        "One\n***\n\n***\nTwo",
    ),
    (
        "length_constraints:number_words",
        {"num_words": 3, "relation": "less than"},
        "two words",
        "three small words",
    ),
    (
        "length_constraints:nth_paragraph_first_word",
        {"num_paragraphs": 2, "nth_paragraph": 2, "first_word": "crash"},
        'Intro.\n\n"Crash, said he.',
        "Intro.\n\nBoom crash.",
    ),
    (
        "detectable_content:number_placeholders",
        {"num_placeholders": 2},
        "[name] lives at [address]",
        "[name] only",
    ),
    ("detectable_content:postscript", {"postscript_marker": "P.S."}, "Hi.\nP. S. see you", "Hi.\nPS see you"),
    ("detectable_content:postscript", {"postscript_marker": "P.P.S"}, "Hi.\np.p.s more", "Hi.\np.s. more"),
    (
        "detectable_format:number_bullet_lists",
        {"num_bullets": 2},
        "* one\n- two\n**bold**",
        "* one\n* two\n- three",
    ),
    ("detectable_format:constrained_response", None, "  Well. My answer is maybe. ", "My answer is perhaps."),
    (
        "detectable_format:number_highlighted_sections",
        {"num_highlights": 2},
        "*one* and **two**",
        "*one* and * *",
    ),
    (
        "detectable_format:multiple_sections",
        {"section_spliter": "Section", "num_sections": 2},
        "Section 1\na\nSection 2\nb",
        "Section 1\nonly",
    ),
    ("detectable_format:json_format", None, '```json\n{"a": 1}\n```', "{'a': 1}"),
    ("detectable_format:title", None, "<<Sea Song>>", "<<   >>"),
    ("combination:two_responses", None, "Answer one ****** Answer two", "Same ****** Same"),
    (
        "combination:repeat_prompt",
        {"prompt_to_repeat": PROMPT},
        "write a haiku about the sea. Waves...",
        "Sure! Write a haiku about the sea",
    ),
    (
        "startend:end_checker",
        {"end_phrase": "Any other questions?"},
        'Done. Any other questions?"',
        "Any other questions? Yes.",
    ),
    (
        "change_case:capital_word_frequency",
        {"capital_frequency": 2, "capital_relation": "at least"},
        "THE sea IS blue",
        "The SEA is blue",
    ),
    (
        "change_case:english_capital",
        None,
        "THIS IS AN ENGLISH SENTENCE ABOUT THE WEATHER TODAY.",
        "This is not all capitals.",
    ),
    (
        "change_case:english_lowercase",
        None,
        "this is an english sentence about the weather today.",
        "This is not all lower case.",
    ),
    ("punctuation:no_comma", None, "no commas here", "a, b"),
    ("startend:quotation", None, ' "wrapped" ', '"open only'),
    (
        "copy:repeat_phrase",
        {"phrase": "The early bird catches the worm", "small_n": 2},
        "The early cat catches the worm. The early bird eats the worm.",
        "The early bird catches the worm. The early bird catches the worm.",
    ),
    (
        "copy:copy",
        {"prompt_to_repeat": PROMPT},
        " WRITE a haiku about the sea ",
        "Write a haiku about the sea!",
    ),
    ("new:copy_span_idx", {"prompt_to_repeat": PROMPT, "n_start": 8, "n_end": 13}, "Haiku", "a haiku"),
    ("detectable_format:sentence_hyphens", None, "I swim.-You run.-We rest.", "I swim. - You run."),
    ("keywords:no_adjacent_consecutive", None, "cat egg dog cat", "apple banana"),
    ("detectable_format:square_brackets", None, "[every] [word] [here]", "[every] word"),
    ("keywords:word_once", {"keyword": "sea"}, "the Sea is calm", "sea and seashell"),
    (
        "keywords:word_count_different_numbers",
        {"keyword": "wave", "frequency": 2, "relation": "at least"},
        "wave wave",
        "one wave",
    ),
    ("keywords:exclude_word_harder", {"keyword": "to"}, "Go to-day", "Go to the sea"),
    ("paragraphs:paragraphs", None, "One.\n* * *\n***\nTwo.", "One.\n***\n\n***\nTwo."),
    ("paragraphs:paragraphs2", None, "\n\nOne.\n\nTwo.\n\n", "One.\n\n\n\nTwo."),
    (
        "first_word:first_word_sent",
        {"first_word": "Relationship"},
        "Relationship one. relationship two!",
        "Relationship one. Another two.",
    ),
    ("first_word:first_word_answer", {"first_word": "sea"}, "  Sea first", "The sea"),
    (
        "last_word:last_word_sent",
        {"last_word": "sea"},
        "I love the sea. Look at the sea!",
        "I love the sea. Look at it.",
    ),
    (
        "last_word:last_word_answer",
        {"last_word": "contest"},
        "This is the final contest!!",
        "This contest is over.",
    ),
    ("detectable_format:bigram_wrapping", None, "<<I am>> <<at home>> alone", "<<I am>> at <<home>>"),
    ("copy:copying_simple", {"prompt_to_repeat": PROMPT}, PROMPT, "Here: " + PROMPT),
    ("copy:copying_multiple", {"prompt_to_repeat": PROMPT, "N": 2}, f"{PROMPT}\n******\n{PROMPT}", PROMPT),
    ("punctuation:punctuation_dot", None, "No dots here", "A dot."),
    ("punctuation:punctuation_exclamation", None, "Calm.", "Wow!"),
    ("count:lowercase_counting", {"N": 2}, "Only two Words Here", "three lower words"),
    ("letters:letter_counting", {"N": 3, "relation": "at least"}, "abc", "a1b"),
    (
        "letters:letter_counting2",
        {"letter": "a", "let_frequency": 2, "let_relation": "less than"},
        "A b",
        "a A",
    ),
    (
        "count:counting_composition",
        {"n_sent": 1, "n_words": 4},
        "I like it.\n***\nYou like it.\n***\nWe like it.",
        "I like it.\n***\nYou like it.",
    ),
    ("count:count_unique", None, "every word is unique here", "the sea and the sky"),
    (
        "count:count_increment_word",
        {"keyword1": "sun", "keyword2": "moon"},
        "sun moon moon",
        "sun sun moon moon",
    ),
    ("keywords:palindrome", None, "we saw a racecar", "no such words"),
    (
        "keywords:keyword_specific_position",
        {"keyword": "blue", "n": 2, "m": 3},
        "Hello there. The sky blue today.",
        "Hello there. The blue sky.",
    ),
    ("keywords:start_end", None, "Sea is the sea", "Sea is blue."),
]


@pytest.mark.parametrize(("instruction_id", "kwargs", "good", "bad"), VECTORS)
def test_instruction_rule(instruction_id: str, kwargs: dict[str, Any] | None, good: str, bad: str) -> None:
    assert evaluate(instruction_id, kwargs, good) is True
    assert evaluate(instruction_id, kwargs, bad) is False


def test_every_registered_instruction_has_a_vector() -> None:
    assert {vector[0] for vector in VECTORS} == set(REGISTRY)


def test_undetectable_language_counts_as_followed() -> None:
    assert evaluate("language:response_language", {"language": "fr"}, "12345 !!!") is True
    assert evaluate("language:response_language", {"language": "xx"}, "12345 !!!") is False


def test_nth_paragraph_out_of_range_fails() -> None:
    kwargs = {"num_paragraphs": 2, "nth_paragraph": 3, "first_word": "a"}
    assert evaluate("length_constraints:nth_paragraph_first_word", kwargs, "a\n\nb\n\na") is False


def test_keyword_regex_error_counts_as_not_followed() -> None:
    assert evaluate("keywords:word_once", {"keyword": "c++("}, "c++(") is False


def test_empty_words_fail_instead_of_a_random_draw() -> None:
    assert evaluate("keywords:word_once", {"keyword": ""}, "x") is False
    assert evaluate("keywords:forbidden_words", {"forbidden_words": []}, "x") is False
    assert evaluate("keywords:existence", {"keywords": []}, "x") is False
    assert evaluate("first_word:first_word_answer", {"first_word": ""}, "x") is False
