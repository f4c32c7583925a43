"""Nationality words ("American", "Japanese", "Irish-American"): the value a question of
nationality asks for, which a short draft states beside other names ("Jauja is a Spanish
historical drama.") and the evidence states as an adjective ("is an Argentine director").
Told by their endings, not by a list: a given name with such an ending ("Jordan", "Brian")
is no nationality."""

from __future__ import annotations

import re

from serc_dspy.core.text import normalise
from serc_dspy.rules.people import opens_person_name

NATIONALITY = re.compile(r"[A-Z][a-z]+(?:an|ese|ish|ch|ic|i)")
"""The ends of a nationality word ("American", "Japanese", "Dutch"): one pattern, not a list
(no maintained library lists "Scottish" or "Argentine"; some such words, "German", "Greek",
are missed)."""
_WORD = re.compile(r"(?<![\w-])[A-Z][a-z]+(?:-[A-Z][a-z]+)*(?![\w-])")
_ASKS = re.compile(r"\bnationality\b|\bof\s+what\s+nation\b", re.IGNORECASE)


def is_nationality(word: str) -> bool:
    """Whether one word (or a hyphened compound, judged by its last part: "Irish-American")
    reads as a nationality: its ending, and no given name ("Jordan" ends as "American" does)."""
    last = word.split("-")[-1]
    return bool(NATIONALITY.fullmatch(last)) and not opens_person_name(last)


def asks_nationality(question: str) -> bool:
    """Whether a question asks for a nationality ("What nationality was ...?", "... of which
    nationality?")."""
    return bool(_ASKS.search(question))


def nationality_words(text: str) -> list[tuple[str, int]]:
    """The nationality words of a text with their offsets, in order."""
    return [(m.group(0), m.start()) for m in _WORD.finditer(text) if is_nationality(m.group(0))]


def stated_nationalities(question: str, text: str) -> list[tuple[str, int]]:
    """The nationality words of a text that the question does not name, with their offsets:
    what a draft answers a question of nationality with ("What nationality was the American
    poet's wife?" answered "The American poet's wife was British.": British)."""
    asked = f" {normalise(question, fold=True)} "
    return [(word, at) for word, at in nationality_words(text)
            if f" {normalise(word, fold=True)} " not in asked]
