"""How a HaluEval answer is scored: the right answer stated (in a form it may take), the
hallucinated one gone. Whole words, after `core.text.normalise`."""

from __future__ import annotations

import re

from serc_dspy.core.text import normalise
from serc_dspy.rules.places import place_kinds
from serc_dspy.rules.words import TITLES


def _padded(text: str) -> str:
    """`normalise(text, singular=True)` between spaces, so a match is of whole words:
    "16-year-old" matches "16 years old", and "Hole" does not match inside "whole"."""
    words = normalise(text, singular=True)
    return f" {words} " if words else ""


_NICKNAME = re.compile(r"^(?P<given>.*?\S)\s+[\"\u201c](?P<nick>[^\"\u201d]+)[\"\u201d]\s+"
                       r"(?P<rest>\S.*)$")
"""A name with its nickname quoted inside it: Jacob "Jack" Kevorkian."""


_LOCATED = re.compile(r"^(?P<place>[A-Z][^,]*?),\s+(?P<within>[A-Z][^,]*)$")
"""A place with the state or country it lies in: "Albuquerque, New Mexico"."""


_TITLED = re.compile(rf"^(?i:{'|'.join(TITLES)})\.?\s+(?P<name>\S+(?:\s+\S+)+)$")
"""A person's name after a title, of two words at least: "Sir Francis Nethersole"."""


def right_forms(right: str) -> list[str]:
    """The forms a right answer may be stated in: as HaluEval gives it; without a leading
    article in lower case (5 of the 500 right answers: "the Desert Fox"); for a person's name
    with a title (4 of the 500 right answers: "Sir Francis Nethersole"), the name without it;
    and, for a name with
    a quoted nickname (Jacob "Jack" Kevorkian: 7 of the 500 right answers of qa_dev and the
    extra tuning questions), the name without the nickname (Jacob Kevorkian) or with the
    nickname as its given name (Jack Kevorkian); for a place given with the state or country
    it lies in, as the gazetteers know them (7 of the 844 extra and multi-turn tuning right
    answers: "Albuquerque, New Mexico"), the place alone ("formed in Albuquerque")."""
    forms = [right]
    bare = re.match(r"(?:the|a|an)\s+(\S.*)$", " ".join(right.split()))
    if bare:  # "the Desert Fox" is stated by "Desert Fox" (a capital "The" is the name's)
        forms.append(bare.group(1))
    located = _LOCATED.match(" ".join(right.split()))
    if located and place_kinds(located.group("within")) & {"state", "country"}:
        forms.append(located.group("place"))  # "Albuquerque" states "Albuquerque, New Mexico"
    titled = _TITLED.match(" ".join(right.split()))
    if titled:  # "Sir Francis Nethersole" is stated by "Francis Nethersole"
        forms.append(titled.group("name"))
    name = _NICKNAME.match(" ".join(right.split()))
    if not name:
        return forms
    given, nick, rest = name.group("given"), name.group("nick"), name.group("rest")
    return [*forms, f"{given} {rest}", f"{nick} {rest}"]


def halueval_outcome(answer: str | None, right: str, hallucinated: str) -> dict[str, bool]:
    """`right`: the right answer appears (in one of its `right_forms`); `gone`: the
    hallucinated answer no longer does."""
    text = _padded(answer or "")
    right_in = any(bool(_padded(form)) and _padded(form) in text for form in right_forms(right))
    wrong_in = bool(_padded(hallucinated)) and _padded(hallucinated) in text
    return {"right": right_in, "gone": not wrong_in, "fixed": right_in and not wrong_in}
