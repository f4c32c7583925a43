"""Yes/no questions that ask whether two named things share a property ("Are Wenling and
Xinzheng both in China?"): "yes" and "no" stand in no passage, so there is no value to choose;
but the evidence answers "yes" when each thing's own defining sentence states the property's
words (`choose.both`). A "no" is never inferred: that a sentence does not state a property
says nothing, and the caller's answer is then kept, unverified."""

from __future__ import annotations

import re

from serc_dspy.core.trace import Slot
from serc_dspy.rules.base import Rule, register
from serc_dspy.rules.slots import EvidenceSentence
from serc_dspy.rules.words import STOP, content_stems, words_of

SUBJECT_WORDS = 4
"""A sentence is an option's own when the option's name stands within its first words ("The
Singer Building or Singer Tower, at ...", "Wenling (...) is a coastal city ...")."""

register(
    Rule("choose.both", "a caller's answer to \"Are A and B both P?\" that does not say yes is "
         "replaced by \"Yes, A and B are both P.\" when a sentence opening with each option's "
         "name states every content word of P; an answer that says yes is then supported; "
         "otherwise it is kept, unverified (a \"no\" is never inferred)",
         "a yes/no answer had no value to choose, so \"Wenling is in Japan.\" stood for \"Are "
         "Wenling and Xinzheng both in China?\" though each city's own sentence says China",
         english_only=True, thresholds={"subject_words": SUBJECT_WORDS},
         found_on="HaluEval tuning item 23"),
)

_BOTH = re.compile(r"^(?P<verb>are|were)\s+(?P<a>.+?)\s+and\s+(?P<b>.+?)\s+both\s+"
                   r"(?P<p>[^?]+?)\s*\?$", re.IGNORECASE)
_YES = re.compile(r"^\W*yes\b", re.IGNORECASE)
_NO = re.compile(r"^\W*no\b", re.IGNORECASE)


def both_question(question: str) -> tuple[str, str, str, str] | None:
    """(verb, A, B, P) of "Are A and B both P?"; None for any other question."""
    found = _BOTH.match(" ".join(question.split()))
    if not found or not content_stems(found["p"]):
        return None
    return found["verb"].lower(), found["a"].strip(" ,"), found["b"].strip(" ,"), \
        found["p"].strip(" ,")


def opens_with(sentence: str, option: str) -> bool:
    """Whether the sentence names the option (in full, or by its last name word) among its
    first `SUBJECT_WORDS` words: the option is what the sentence is about."""
    opening = {w.lower() for w in words_of(sentence)[:SUBJECT_WORDS]}
    names = [w.lower() for w in words_of(option) if w.lower() not in STOP]
    return bool(names) and (set(names) <= opening or names[-1] in opening)


def states_property(option: str, prop: str, evidence: list[EvidenceSentence]) -> bool:
    """Whether an evidence sentence about the option states every content word of P."""
    wanted = content_stems(prop)
    return any(opens_with(s.text, option) and wanted <= content_stems(s.text)
               for s in evidence)


def says_yes(answer: str, prop: str) -> bool:
    """Whether a caller's answer says yes: it opens with "yes", or, not opening with "no",
    it says "both" with every content word of P."""
    if _YES.match(answer):
        return True
    return not _NO.match(answer) and "both" in answer.lower().split() and \
        content_stems(prop) <= content_stems(answer)


def both_slot(question: str, sentence: str, evidence: list[EvidenceSentence]) -> Slot | None:
    """`choose.both`: the answer sentence as one slot, ruled supported (it says yes, as the
    evidence does) or contradicted with "Yes, A and B are both P." as its correction; None
    when the question is no "both" question or the evidence does not state P of each."""
    parsed = both_question(question)
    if parsed is None:
        return None
    verb, a, b, prop = parsed
    if not (states_property(a, prop, evidence) and states_property(b, prop, evidence)):
        return None
    text = sentence.strip()
    slot = Slot(kind="sentence", text=text, start=sentence.find(text))
    if says_yes(text, prop):
        slot.ruling, slot.note = "supported", f"the evidence states {prop!r} of {a} and of {b}"
        return slot
    slot.ruling, slot.chosen = "contradicted", f"Yes, {a} and {b} {verb} both {prop}."
    slot.note = f"the evidence states {prop!r} of {a} and of {b}: the answer is yes"
    return slot
