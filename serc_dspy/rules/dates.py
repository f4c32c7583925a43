"""A date whose year alone the evidence can check: the year becomes the slot.

A bio's evidence often gives an event's year without its day ("Davis was born in the Waterhouse
district of Kingston in 1973"), while the draft states a whole date ("born on 22 August 1966").
A date slot is offered only dates, so such evidence offered it nothing, and a wrong year in a
full date could never be corrected. Here the date's year is asked on its own, where the
evidence states no year of the date and offers other years for the fact's event."""

from __future__ import annotations

from serc_dspy.core.trace import Slot
from serc_dspy.rules.base import Rule, register
from serc_dspy.rules.slots import (
    EvidenceSentence,
    blank_in,
    collect_candidates,
    has_value,
    normal_form,
)

register(
    Rule("choose.date_year", "a date slot that the evidence offers no date for is asked as "
         "its year alone (\"born on 22 August ___\"), when the year stands once in the fact "
         "and in the draft's sentence, no evidence sentence about the subject states it, and "
         "the evidence offers another year for the fact's event; a swap then replaces the year "
         "and leaves the day and month", "a date slot was offered dates only: a planted birth "
         "year in \"22 August 1966\" had no rival, while the evidence says \"born ... in "
         "1973\"", english_only=True, found_on="wikipedia_dev.json, Beenie Man, K = 2"),
)


def year_slot(slot: Slot, fact: str, sentence: str, about: list[EvidenceSentence],
              evidence: list[EvidenceSentence], subject: str = "") -> Slot | None:
    """The date slot's year as a year slot with its candidates (from `about`, the sentences
    about the fact), or None: not a date, or one offered a date already; a date with no year;
    a year that does not stand once in the fact and once in the draft's sentence (a swap must
    hit it alone); one the `evidence` states (then the year is not what is wrong); or no other
    year offered."""
    year = normal_form("year", slot.text) if slot.kind == "date" and not any(
        c.origin == "evidence" for c in slot.candidates) else ""
    if not year.isdigit() or blank_in(fact, year) is None or blank_in(sentence, year) is None \
            or any(has_value("year", year, s.text) for s in evidence):
        return None
    narrowed = Slot(kind="year", text=year, start=slot.start + slot.text.rfind(year))
    narrowed.candidates = collect_candidates(narrowed, fact, about, subject)
    return narrowed if any(c.origin == "evidence" for c in narrowed.candidates) else None
