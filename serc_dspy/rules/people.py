"""Given names, to tell a person's full name from other capitalised runs: "Amy Jo Johnson"
answers "Which actress ...?", "Power Rangers" and "Saban Entertainment" do not. The names come
from a maintained list (gender-guesser's dictionary of about 45,000 given names from many
countries, of which only membership is read), not a list of our own."""

from __future__ import annotations

import re
from functools import lru_cache

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
