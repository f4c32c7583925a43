"""Given names, to tell a person's full name from other capitalised runs: "Amy Jo Johnson"
answers "Which actress ...?", "Power Rangers" and "Saban Entertainment" do not. The names come
from a maintained list (gender-guesser's dictionary of about 45,000 given names from many
countries), not a list of our own. A name's gender there is read only to leave out, for a
question about a woman (or a man), names given only to the other (`choose.asked_gender`)."""

from __future__ import annotations

import re
from functools import lru_cache

from serc_dspy.rules.places import is_asked_place
from serc_dspy.rules.slots import Span
from serc_dspy.rules.titles import quoted

HONORIFICS = frozenset("sir dame lord lady dr saint st king queen prince princess".split())
"""Words that may open a person's name in place of a given name ("Sir Francis Nethersole")."""


@lru_cache(maxsize=1)
def _detector():
    import gender_guesser.detector as detector

    return detector.Detector(case_sensitive=False)


def opens_person_name(word: str) -> bool:
    """Whether a name's first word can open a person's name: a known given name, an initial
    ("J."), or an honorific."""
    bare = word.strip(".,")
    if re.fullmatch(r"[A-Z]\.?", word) or bare.lower() in HONORIFICS:
        return True
    return _detector().get_gender(bare) != "unknown"


_GENDERED = {**dict.fromkeys("he him his himself".split(), "male"),
             **dict.fromkeys("she her hers herself actress woman female".split(), "female")}
"""Words that say a person is a man or a woman: pronouns, and the few nouns only one can be."""
GENDER_NOUN = {"male": "man", "female": "woman"}


def asked_gender(question: str) -> str | None:
    """Whether the person a question asks for is a man or a woman, by its first gendered word
    ("..., sang a duet with her ex-husband the same year that he released ...": a woman; the
    later "he" is the husband): "male", "female", or None."""
    for word in re.findall(r"[A-Za-z]+", question):
        if word.lower() in _GENDERED:
            return _GENDERED[word.lower()]
    return None


def other_gender(name: str, gender: str | None) -> bool:
    """Whether a full name's given name is, by gender-guesser's list, only ever the other
    gender's ("George" for a woman; a name the list gives to both, "Kim", never is)."""
    if gender is None or not name.split():
        return False
    found = _detector().get_gender(name.split()[0].strip(".,"))
    return found in ("male", "female") and found != gender


def full_name(sentence: str, span: Span) -> bool:
    """Whether a name span can name a person in full: two words or more, opening with a given
    name, an initial or an honorific ("Badr Hari", not "Hari", "American" nor "Power
    Rangers"), not a title the sentence quotes ("The Weekly Standard"), not a place."""
    words = span.text.split()
    return len(words) > 1 and (opens_person_name(words[0]) or bool(
        _LIFE_DATES.match(sentence, span.start + len(span.text)))) and \
        not quoted(sentence, span) and not is_asked_place(span.text, "")


_LIFE_DATES = re.compile(r"\s*\((?:[^()]*;\s*)?(?:born\b|b\.\s|\d{1,2} [A-Z][a-z]+ \d{4}|"
                         r"[A-Z][a-z]+ \d{1,2}, \d{4}|\d{4}\s*[-–])")
"""A person's life dates right after a name, as a biography opens ("Zooey Deschanel (born
January 17, 1980)"): the name is a person's whatever its given name."""
