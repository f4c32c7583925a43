"""The word-level reading every rule shares: words, stems, content words, numbers, names,
negations. English function words live here, so a rule that uses them is English-only."""

from __future__ import annotations

import re

from serc_dspy.core.text import is_wide, words

STOP = frozenset("""
a an the and or but nor of in on at to for from by with without as into onto over under about
after before during since until between among through per via than then also too very so such
is are was were be been being am has have had having do does did done will would shall should
can could may might must not no yes it its it's this that these those there here their them
they he him his she her hers we us our you your i me my mine who whom whose which what when
where why how all any both each either neither few more most other some own same only just one ones
later earlier first became become becomes becoming known named called made make makes
""".split())
"""Function words and the verbs a paraphrase adds; they carry no claim of their own."""
MONTHS = frozenset("""january february march april may june july august september october
november december jan feb mar apr jun jul aug sep sept oct nov dec""".split())
TITLES = ("sir", "dame", "dr", "mr", "mrs", "ms", "lord", "lady", "prof", "professor")
"""Titles a person's name may open with ("Sir Francis Nethersole", "Lady Hillary Clinton"):
no part of the name."""
STEM_LETTERS = 5
"""A word counts as another when they share their first five letters ("married" / "marry",
"discovered" / "discovery")."""
_NEGATION = re.compile(r"\b(?:not|never|no|neither|nor|without|none|nothing|nobody|"
                       r"unsuccessful(?:ly)?|denied|refused|failed)\b|n['’]t\b", re.IGNORECASE)


def words_of(text: str) -> list[str]:
    """Words and numbers (`text.words`: each CJK character is a word); a possessive is its
    name ("Curie's" -> "Curie")."""
    return [w[:-2] if w[-2:].lower() in ("'s", "’s") else w for w in words(text)]


def is_number(word: str) -> bool:
    return word[0].isdigit()


def is_content(word: str) -> bool:
    """Long enough to carry meaning: 3+ letters, a number, or one CJK character (a word)."""
    return len(word) > 2 or is_number(word) or is_wide(word)


def stem(word: str) -> str:
    return word.lower()[:STEM_LETTERS]


def content_words(text: str, subject: str = "") -> list[str]:
    """A text's content words and numbers: no function words, none of the subject's own name
    words, no word under 3 letters."""
    skip = {w.lower() for w in words_of(subject)}
    return [w for w in words_of(text) if w.lower() not in STOP and w.lower() not in skip
            and is_content(w)]


def content_stems(text: str, subject: str = "") -> set[str]:
    return {stem(w) for w in content_words(text, subject)}


def negations(text: str) -> set[str]:
    return {m.lower() for m in _NEGATION.findall(text or "")}


def stated_negations(text: str) -> set[str]:
    """`negations` the text states itself, not those inside a name or title: a capitalised
    one after the first word ("the Not Ready for Prime Time Players"), or one between two
    capitalised words ("Nakayama Miho no Tokimeki High School")."""
    text = text or ""
    found = set()
    for match in _NEGATION.finditer(text):
        before, after = text[:match.start()].split(), text[match.end():].split()
        if before and match.group(0)[:1].isupper():
            continue
        if before and after and before[-1][:1].isupper() and after[0][:1].isupper():
            continue
        found.add(match.group(0).lower())
    return found


def key_terms(found: list[str], skip: set[str]) -> tuple[set[str], set[str]]:
    """Numbers, and capitalised words that are not sentence starts or function words."""
    numbers, names = set(), set()
    for position, word in enumerate(found):
        if is_number(word):
            numbers.add(word)
        elif (word[0].isupper() and word.lower() not in STOP and position > 0
              and word.lower() not in skip and word.lower() not in MONTHS):
            names.add(word.lower())
    return numbers, names


def original_case(term: str, found: list[str]) -> str:
    return next((w for w in found if w.lower() == term), term)


def event_stems(text: str, subject: str) -> set[str]:
    """The content stems that say what happened: no numbers and no month names, which two
    events on the same day share ("born on 26 October" and "retired on 26 October")."""
    return {stem(w) for w in content_words(text, subject)
            if not is_number(w) and w.lower().rstrip(".") not in MONTHS}
