"""Claims read sentence by sentence: a short answer's claim, and the same claim with another
value in the answer's slot, each read against the evidence sentences that name its own value
(the check nodes' sentence choice, `ChooseSentence`). A 1.5B chooser picks a value from a
list by where the question's words stand; asked of one claim and a few sentences, it says
"yes" to what they state, and a right answer's claim is stated. So another value replaces
the answer only where its claim is stated and the answer's is not (`choose.option_claims`
for which-of-two questions, `choose.rival_claims` for a rival the evidence's statement of
the answer held back)."""

from __future__ import annotations

from serc_dspy.core.trace import Slot
from serc_dspy.rules.base import Rule, register
from serc_dspy.rules.slots import EvidenceSentence
from serc_dspy.rules.two_options import evidence_form, mentions
from serc_dspy.rules.words import content_stems, negations

register(
    Rule("choose.rival_claims", "a rival chosen in both orders over a short answer that the "
         "evidence states (which `choose.own_stated` would hold back) is read as a claim: "
         "the answer's sentence, and the same sentence with the rival in the answer's slot, "
         "each read by one sentence choice "
         "against the evidence sentences naming its own value. The rival replaces the answer "
         "only where its claim is stated (\"yes\") and the answer's is not; anything else, a "
         "failed call included, leaves the answer held. A bare value (no sentence) is not "
         "read: its claim would be the question, which the evidence of a multi-hop question "
         "states in no one sentence", "the evidence states a wrong answer "
         "too, in another role (\"Mumford & Sons is from Columbus, Ohio.\": the evidence "
         "names the band too), so `choose.own_stated` held right rivals back; releasing "
         "them on another reading of the same list (`choose.read_rival`) broke 7 of 13 "
         "right answers",
         english_only=True, found_on="HaluEval extra tuning items 242, 243, 376, 380"),
)

CLAIM_SENTENCES = 6
"""The most evidence sentences one claim is read against."""


def claim_with(question: str, sentence: str, slot: Slot, form: str) -> str:
    """The answer's claim with `form` in its slot: the answer's sentence with the slot's words
    replaced, or, for a bare value (the sentence says nothing else), the question answered
    by `form`."""
    said = " ".join(sentence.split())
    at = said.find(slot.text)
    if at >= 0 and content_stems(said.replace(slot.text, " ")):
        return f"{said[:at]}{form}{said[at + len(slot.text):]}"
    return f"{' '.join(question.split())} Answer: {form}."


def rival_claims(question: str, slot: Slot, sentence: str, rival: str,
                 evidence: list[EvidenceSentence]) -> list[tuple[str, str, list[str]]] | None:
    """`choose.rival_claims`: the answer's value and the rival, each with its claim
    (`claim_with`) and the evidence sentences that name it (both may be named in one) to read
    it against, the answer's first. None where the reading does not apply: the answer is a
    bare value (its claim would be the question itself, which a multi-hop question's
    evidence states in no one sentence: 6 of 27 right bare answers of the tuning items were
    read "not stated" against a rival's "yes"), the slot is a whole sentence or not in the
    answer's words, the answer negates something, or a value has no sentence naming it."""
    said = " ".join(sentence.split())
    rest = said.replace(slot.text, " ")
    if slot.kind == "sentence" or slot.text not in said or not content_stems(rest) or \
            negations(rest):
        return None
    claims = []
    for value in (slot.text, rival):
        said = [s.text for s in evidence if mentions(s.text, value)][:CLAIM_SENTENCES]
        if not said:
            return None
        form = value if value == slot.text else evidence_form(value, evidence)
        claims.append((value, claim_with(question, sentence, slot, form), said))
    return claims
