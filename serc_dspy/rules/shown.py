"""`choose.own_context`: how the draft's own value is shown to the chooser.

Every option the evidence offers is shown with the words that lead up to it; a 1.5B chooser
prefers such a quoted option to a bare one, so the draft's own value, where the evidence
states it for the fact's event, is shown the same way."""

from __future__ import annotations

import re

from serc_dspy.core.trace import Candidate, Slot
from serc_dspy.rules.base import Rule, register
from serc_dspy.rules.slots import has_value, normal_form, spans, with_lead

register(
    Rule("choose.own_context", "in a prose draft (not a caller's short answer), the "
         "draft's own value, where the evidence a choice shows "
         "states it in a sentence that also states the fact's other years, dates and numbers "
         "(its event: not \"Chemistry\" beside 1911 for \"Chemistry in 1903\"), is shown "
         "with the words that lead up to it there, as every evidence value is",
         "shown bare beside rivals quoted from the evidence, a right draft's "
         "value was passed over for them: on 62 held-out choice calls of HaluEval tuning "
         "drafts, the right answer's own value was chosen 14 times of 32 bare and 21 of 32 "
         "with its words (every call 0.613 to 0.710, +0.097 [0.000, 0.194]); not for a "
         "short answer, where a right one is kept anyway and a wrong one was kept more (a "
         "hallucinated answer's value chosen right 24 times of 30 bare, 23 with its words)",
         found_on="HaluEval extra tuning items 101-170 (their choice calls replayed)",
         acts_without_ruling=True),
)


def stated_lead(value: str, evidence: str) -> str:
    """`value` with up to three words that lead up to it where the shown evidence first
    states it (whole words, as written, within its line), as an evidence value is shown; ""
    where the evidence does not state it."""
    found = re.search(rf"(?<!\w){re.escape(value)}(?!\w)", evidence) if value else None
    if not found:
        return ""
    return with_lead(evidence[:found.start()].rsplit("\n", 1)[-1], value)


def event_lines(fact: str, slot: Slot, evidence: str) -> str:
    """The lines (sentences) of the shown evidence that state every other year, date and
    number of the fact: where its own value stands for the fact's event. "In 1911 she won
    the Nobel Prize in Chemistry" is no statement of "Chemistry in 1903"."""
    counted = [s for s in spans(fact) if s.kind in ("year", "date", "number") and
               s.text != slot.text]
    return "\n".join(line for line in evidence.split("\n") if all(
        has_value(s.kind, normal_form(s.kind, s.text), line) for s in counted))


def show_own_values(candidates: list[Candidate], fact: str, slot: Slot, evidence: str) -> None:
    """Gives the fact's own candidate the words that lead up to it where `evidence` (the
    text the choice shows) states it for the fact's event (`event_lines`)."""
    for own in (c for c in candidates if c.origin == "fact" and not c.context):
        own.context = stated_lead(own.value, event_lines(fact, slot, evidence))
