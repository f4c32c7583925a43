"""Details no fact states: a year, date or number of a draft sentence that the fact extractor
left out of every fact is checked as a slot of the sentence itself (`choose.uncovered`).

A variable node the decomposition never made is a detail no check can reach: on the tuning
bios (K = 2, 20 bios) 5 of 40 planted errors sat in a detail no extracted fact kept ("the
Revolutions of 1998", "compiled in Tibisial (2026)"), and no rule could see them. The sentence
is the fact that carries such a detail, its other details left to the facts that state them.
"""

from __future__ import annotations

from serc_dspy.core.trace import Slot
from serc_dspy.rules.base import Rule, register
from serc_dspy.rules.slots import MAX_SLOTS, normal_form, occurrences, spans

UNCOVERED_KINDS = ("date", "year", "number")
"""Kinds a sentence's own slot may have: names left out were mostly no detail ("Throughout",
"Following", "Prior" on the tuning bios: 2 planted in 17)."""

register(
    Rule("choose.uncovered", "with verdicts=\"choose\", the years, dates and numbers of a draft "
         "sentence that none of its extracted facts states (by their words or normal form) "
         "are slots of one more fact, the sentence itself, asked and swapped like any other "
         "slot; the details the facts state are theirs", "5 of 40 planted errors of the tuning "
         "bios sat in a detail the extractor left out of every fact, where no check could "
         "reach them; off by default: on those bios (K = 2) it gave the 3 that are years a fact, "
         "and corrected none (the rivals the model chose were other events' years, held back by "
         "the guards), and on the clean bios (K = 0) it swapped one true year", found_on=
         "wikipedia_dev.json, K = 2, bios 1-20 (Egon Krenz, Gerardo Fernandez Fe, Kang Daniel)",
         default=False),
)


def uncovered_slots(sentence: str, facts: list[str], subject: str) -> list[Slot]:
    """The sentence's years, dates and numbers (each standing once in it) that no fact
    states, as slots of the sentence; at most `MAX_SLOTS`."""
    stated = {normal_form(s.kind, s.text) for fact in facts for s in spans(fact, subject)}
    found = [Slot(kind=s.kind, text=s.text, start=s.start) for s in spans(sentence, subject)
             if s.kind in UNCOVERED_KINDS and occurrences(sentence, s.text) == 1 and
             normal_form(s.kind, s.text) not in stated and
             not any(occurrences(fact, s.text) for fact in facts)]
    return found[:MAX_SLOTS]
