"""Claims read sentence by sentence: a short answer's claim, and the same claim with another
value in the answer's slot, each read against the evidence sentences that name its own value
(the check nodes' sentence choice, `ChooseSentence`). A 1.5B chooser picks a value from a
list by where the question's words stand; asked of one claim and a few sentences, it says
"yes" to what they state, and a right answer's claim is stated. So another value replaces
the answer only where its claim is stated and the answer's is not (`choose.option_claims`
for which-of-two questions, `choose.rival_claims` for a rival the evidence's statement of
the answer held back, `choose.both_claims` for "Are A and B both P?")."""

from __future__ import annotations

import re

from serc_dspy.core.trace import Slot
from serc_dspy.rules.base import Rule, register
from serc_dspy.rules.slots import EvidenceSentence
from serc_dspy.rules.two_options import evidence_form, mentions
from serc_dspy.rules.words import content_stems, negations
from serc_dspy.rules.yesno import both_question, says_no, says_yes

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
    Rule("choose.both_claims", "a caller's answer that says yes or no to \"Are A and B both "
         "P?\" (or \"Did both A and B ...?\") and that the passages' words do not decide "
         "(`choose.both`, `choose.both_not`) is read as two claims, \"A is a P.\" and \"B is "
         "a P.\" (\"A did direct films.\": no verb is conjugated), each by one sentence "
         "choice against the evidence sentences naming its option: both read "
         "\"yes\" make the answer yes, one \"yes\" and one \"opposite\" make it no; an answer "
         "that says otherwise is replaced (\"Yes, A and B are both P.\", \"No, B is not a "
         "P.\"), one that agrees is supported; any other reading, a failed call included, "
         "leaves it unverified", "a property the passages state in other words (\"a genus "
         "of two species in the Papaveraceae family\" for a plant, \"a beer cocktail\" for a "
         "drink) gave the word rules nothing, and the answer stood unread",
         english_only=True, found_on="HaluEval extra tuning items 36, 218, 221"),
)

CLAIM_SENTENCES = 6
"""The most evidence sentences one claim is read against."""
FAILED_READING = "failed"
"""The stance of a claim whose reading call failed: no reading, so no verdict."""


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


_HEAD_ENDS = frozenset("of in on at from for with by to based that who which whose made "
                       "known located born".split())
"""Words that end the head noun phrase of P ("types of drinks", "cocktails based on
tequila", "projects in New York")."""
_SAID_OF_ONE = {"are": "is", "were": "was", "do": "does", "does": "does", "did": "did"}
"""The question's verb said of one option ("Did both A and B direct films?": "A did direct
films.", with no verb to conjugate)."""


def one_option_claim(option: str, verb: str, prop: str) -> str:
    """P said of one option, in the singular: "Calochone is a plant.", "Grasshopper is a
    drink." (for "types of drinks"), "Wenling is in China." (a P that opens on a preposition
    or names no plural noun is said as it stands: "X is American."), "A did direct films."."""
    kind = re.match(r"(?:types?|kinds?|sorts?|forms?)\s+of\s+(\S.*)$", prop, re.IGNORECASE)
    if kind:  # "types of drinks": a drink
        prop = kind.group(1)
    words = prop.split()
    cut = next((i for i, w in enumerate(words) if w.lower() in _HEAD_ENDS), len(words))
    be = _SAID_OF_ONE.get(verb, verb)
    if be in ("does", "did"):
        return f"{option} {be} {prop}."
    head = words[cut - 1] if cut else ""
    if not re.fullmatch(r"[a-z][a-z-]*[^s]s", head):
        return f"{option} {be} {prop}."
    single = head[:-3] + "y" if head.endswith("ies") else \
        head[:-2] if re.search(r"(?:ch|sh|x|ss)es$", head) else head[:-1]
    phrase = " ".join([*words[:cut - 1], single, *words[cut:]])
    article = "an" if phrase[0].lower() in "aeiou" else "a"
    return f"{option} {be} {article} {phrase}."


def both_claims(question: str, answer: str, evidence: list[EvidenceSentence]
                ) -> list[tuple[str, str, list[str]]] | None:
    """`choose.both_claims`: for "Are A and B both P?" (or "Did both A and B ...?") answered
    yes or no, each option with its claim (`one_option_claim`) and the evidence sentences
    naming it; None where the question is of another form, P relates the two, the answer says
    neither, or no split of "A and B" leaves both named (`named_options`)."""
    parsed = both_question(question, evidence)
    if parsed is None or parsed[0] not in _SAID_OF_ONE or _RELATION.search(parsed[3]) or \
            not (says_yes(answer, parsed[3]) or says_no(answer)):
        return None
    verb, _, _, prop = parsed
    options = named_options(parsed[1], parsed[2], evidence)
    if options is None:
        return None
    return [(option, one_option_claim(option, verb, prop), said) for option, said in options]


_RELATION = re.compile(r"\b(?:same|similar|different|each other|one another|together)\b",
                       re.IGNORECASE)
"""A P that relates the two options ("catering to the same customer bases") is no property
of either alone."""


_DESCRIBED = re.compile(r"^(?:the|a|an)\s+(?:[a-z][\w-]*\s+)+(?=[A-Z0-9])")
"""A lower-case description before an option's name: "the documentaries Welcome to ..."."""


def named_options(a: str, b: str, evidence: list[EvidenceSentence]
                  ) -> list[tuple[str, list[str]]] | None:
    """The two options of "A and B", each with the evidence sentences naming it: split at the
    "and" that leaves both named in the evidence ("Gin and tonic and Paloma"), a lower-case
    description before a name dropped ("the documentaries Welcome to Durham, USA"); None
    where no split does."""
    words = f"{a} and {b}".split()
    for at in (i for i, w in enumerate(words) if w.lower() == "and" and 0 < i < len(words) - 1):
        pair = [_DESCRIBED.sub("", " ".join(part)).strip(" ,")
                for part in (words[:at], words[at + 1:])]
        said = [[s.text for s in evidence if mentions(s.text, option)][:CLAIM_SENTENCES]
                for option in pair]
        if all(pair) and all(said):
            return list(zip(pair, said, strict=True))
    return None


def both_reading(question: str, answer: str, evidence: list[EvidenceSentence],
                 claims: list[tuple[str, str, list[str]]], stances: list[str]) -> Slot:
    """`choose.both_claims`' ruling on the answer (one slot, the whole answer) from the
    `both_claims` it read: yes where both claims read "yes", no where one reads "yes" and the
    other "opposite", else unverified."""
    verb, _, _, prop = both_question(question, evidence) or ("are", "", "", "")
    a, b = claims[0][0], claims[1][0]
    text = answer.strip()
    slot = Slot(kind="sentence", text=text, start=max(answer.find(text), 0))
    slot.note = f"read as claims: {claims[0][1]!r} {stances[0]}, {claims[1][1]!r} {stances[1]}"
    if FAILED_READING in stances:
        slot.ruling, slot.choices = "unverified", [None]  # `decide`: no verdict
        return slot
    if stances == ["yes", "yes"]:
        yes, fix = True, f"Yes, {a} and {b} {verb} both {prop}."
    elif sorted(stances) == ["opposite", "yes"]:
        not_p = claims[stances.index("opposite")][1]
        be = _SAID_OF_ONE.get(verb, verb)
        yes, fix = False, "No, " + not_p.replace(f" {be} ", f" {be} not ", 1)
    else:
        slot.ruling = "unverified"
        return slot
    if (says_yes(text, prop) if yes else says_no(text)):
        slot.ruling = "supported"
    else:
        slot.ruling, slot.chosen = "contradicted", fix
    return slot
