"""Yes/no questions that ask whether two named things share a property ("Are Wenling and
Xinzheng both in China?"): "yes" and "no" stand in no passage, so there is no value to choose;
but the evidence answers "yes" when each thing's own defining sentence states the property's
words (`choose.both`). A "no" is never inferred from a property left unstated: that a sentence
does not state it says nothing. It is read only where the question asks whether two things
share one value ("Are A and B of the same nationality?") and the evidence states each one's
value (`choose.same_value`), or where P names a nationality or a family that one option's
own sentence states and the other's replaces with another (`choose.both_not`): two values
that differ are a "no" the passages state."""

from __future__ import annotations

import re

from serc_dspy.core.trace import Slot
from serc_dspy.rules.base import Rule, register
from serc_dspy.rules.nationalities import NATIONALITY
from serc_dspy.rules.slots import _YEAR, EvidenceSentence
from serc_dspy.rules.two_options import NAME_RUN
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
    Rule("choose.same_value", "a caller's one-part answer to \"Are A and B of the same "
         "nationality?\" (or country, year, family, genus) is decided by the value each "
         "option's own evidence states (the nationality word after \"is a\", the first year, "
         "the family named): the same value is a yes, two different values a no; an answer "
         "that says otherwise is replaced by a sentence stating both values (\"No, A is "
         "American and B is Australian.\"), one that agrees is supported; with a value "
         "missing for either, it stays unverified", "\"the same ...\" questions had no "
         "value to choose and were left unverified, though each option's opening states the "
         "value asked about", english_only=True,
         found_on="HaluEval extra tuning items 108, 214, 233, 343, 367"),
    Rule("choose.both_not", "a caller's answer to \"Are A and B both P?\" (or \"Do both A "
         "and B ...?\") whose P names a nationality or a family or genus is decided \"no\" "
         "when one option's own evidence states that value (as `choose.same_value` reads it) "
         "and the other's states another one: the answer is replaced by \"No, B is "
         "Canadian.\" unless it says no; with either value missing it stays unverified",
         "`choose.both` reads only a yes, so \"Yes, The New Pornographers and Kings of Leon "
         "are both popular rock bands.\" stood for \"... both American rock bands?\" though "
         "the band's own sentence calls it Canadian", english_only=True,
         found_on="HaluEval multi-turn tuning drafts 29, 438"),
)

_BOTH = re.compile(r"^(?P<verb>are|were)\s+(?P<a>.+?)\s+and\s+(?P<b>.+?)\s+both\s+"
                   r"(?P<p>[^?]+?)\s*\?$", re.IGNORECASE)
_BOTH_FIRST = re.compile(r"^(?P<verb>are|were|do|does|did)\s+both\s+(?P<a>.+?)\s+and\s+"
                         r"(?P<rest>.+?)\s*\?$", re.IGNORECASE)
_SAME = re.compile(r"^(?i:are|were|is|was|do|did|does)\s+(?:both\s+)?(?:[a-z]+\s+)*?"
                   r"(?P<a>[A-Z].*?)\s+and\s+(?P<b>[A-Z].*?)\s+(?:[a-z]+\s+)*?(?:of\s+)?the "
                   r"same\s+(?P<what>nationality|country|year|family|genus)\b")
_NATIONALITY = re.compile(r"\b(?:is|was|are|were)\s+(?:an?|the)\s+(?:[a-z]+\s+){0,2}?"
                          r"((?:[A-Z][\w-]*\s+)*[A-Z][\w-]*)")
_FAMILY = re.compile(r"\bfamily\s+([A-Z][a-z]+)|\b([A-Z][a-z]+aceae)\b")
_GENUS = re.compile(r"\bgenus\s+([A-Z][a-z]+)")
_YES = re.compile(r"^\W*yes\b", re.IGNORECASE)
_NO = re.compile(r"^\W*no\b", re.IGNORECASE)


def both_question(question: str, evidence: list[EvidenceSentence] | None = None
                  ) -> tuple[str, str, str, str] | None:
    """(verb, A, B, P) of "Are A and B both P?" or "Are both A and B P?", where B is the
    longest run of the capitalised words after "and" that opens an evidence sentence ("Are
    both Tim McIlrath and Spike Slawson American punk rock musicians?": Spike Slawson), and P
    the rest; None for any other question."""
    text = " ".join(question.split())
    found = _BOTH.match(text)
    if found:
        verb, a, b, prop = found["verb"], found["a"], found["b"], found["p"]
    elif (first := _BOTH_FIRST.match(text)) and (name := NAME_RUN.match(first["rest"])):
        words = name.group(0).split()
        cut = next((k for k in range(len(words), 0, -1) if any(
            opens_with(s.text, " ".join(words[:k])) for s in evidence or [])), len(words))
        verb, a, b = first["verb"], first["a"], " ".join(words[:cut])
        prop = " ".join(words[cut:]) + first["rest"][name.end():]
    else:
        return None
    if not content_stems(prop) or not b.strip(" ,"):
        return None
    return verb.lower(), a.strip(" ,"), b.strip(" ,"), prop.strip(" ,")


def opens_with(sentence: str, option: str) -> bool:
    """Whether the sentence names the option (in full, or by its last name word, or in the
    plural) among its first `SUBJECT_WORDS` words: the option is what the sentence is about."""
    opening = {w.lower() for w in words_of(sentence)[:SUBJECT_WORDS]}
    opening |= {w[:-1] for w in opening if w.endswith("s")}  # "Junipers are ...": Juniper
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
    return not says_no(answer) and "both" in answer.lower().split() and \
        content_stems(prop) <= content_stems(answer)


def says_no(answer: str) -> bool:
    """Whether a caller's answer opens with "no"."""
    return bool(_NO.match(answer))


def both_slot(question: str, sentence: str, evidence: list[EvidenceSentence]) -> Slot | None:
    """`choose.both`: the answer sentence as one slot, ruled supported (it says yes, as the
    evidence does) or contradicted with "Yes, A and B are both P." as its correction; None
    when the question is no "both" question or the evidence does not state P of each."""
    parsed = both_question(question, evidence)
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


def same_question(question: str) -> tuple[str, str, str] | None:
    """(A, B, what) of "Are A and B of the same nationality?", "Do musicians A and B have the
    same nationality?", "Were A and B released in the same year?"; None for any other."""
    found = _SAME.match(" ".join(question.split()))
    if not found:
        return None
    return found["a"].strip(" ,"), found["b"].strip(" ,"), found["what"].lower()


def pair_question(question: str) -> bool:
    """Whether a yes/no question asks if two named things are both P or share a value: the
    questions whose yes or no the passages can state (`draft.yes_no_sentence`)."""
    return both_question(question) is not None or same_question(question) is not None


def value_of(option: str, what: str, evidence: list[EvidenceSentence]) -> str | None:
    """The value an option's own evidence (its first sentence that opens by naming it) states
    of `what`: the last capitalised word after "is a" (a nationality: "a Scottish-born
    Australian rock singer" is Australian), the first year, or the family or genus named."""
    own = next((s.text for s in evidence if opens_with(s.text, option)), None)
    if own is None:
        return None
    if what in ("nationality", "country"):
        found = _NATIONALITY.search(own)
        word = found.group(1).split()[-1] if found else ""
        return word if NATIONALITY.fullmatch(word.split("-")[-1]) else None
    if what == "year":
        found = _YEAR.search(own)
        return found.group(1) if found else None
    found = (_FAMILY if what == "family" else _GENUS).search(own)
    return next(g for g in found.groups() if g) if found else None


def same_slot(question: str, sentence: str, evidence: list[EvidenceSentence]) -> Slot | None:
    """`choose.same_value`: the answer sentence as one slot, ruled supported where it says
    what the two values say (yes for one value, no for two) or contradicted with a sentence
    stating both as its correction; None when the question asks no "same" or a value is
    missing."""
    parsed = same_question(question)
    if parsed is None:
        return None
    a, b, what = parsed
    values = [value_of(a, what, evidence), value_of(b, what, evidence)]
    if None in values:
        return None
    same = values[0].lower() == values[1].lower()
    text = sentence.strip()
    slot = Slot(kind="sentence", text=text, start=sentence.find(text))
    says = "yes" if _YES.match(text) else "no" if says_no(text) else ""
    slot.note = f"the evidence gives {a} {values[0]!r} and {b} {values[1]!r}: " + \
        ("the same" if same else "not the same")
    if says == ("yes" if same else "no"):
        slot.ruling = "supported"
        return slot
    slot.ruling = "contradicted"
    slot.chosen = _stating(a, b, what, values, same)
    return slot


def _stating(a: str, b: str, what: str, values: list[str], same: bool) -> str:
    """The answer a "same" question's values give, in words the evidence states."""
    if what == "year":
        return f"Yes, {a} and {b} are both from {values[0]}." if same else \
            f"No, {a} is from {values[0]} and {b} from {values[1]}."
    if what in ("family", "genus"):
        return f"Yes, {a} and {b} are both in the {what} {values[0]}." if same else \
            f"No, {a} is in the {what} {values[0]} and {b} in the {what} {values[1]}."
    return f"Yes, {a} and {b} are both {values[0]}." if same else \
        f"No, {a} is {values[0]} and {b} is {values[1]}."


def both_not_slot(question: str, sentence: str, evidence: list[EvidenceSentence]
                  ) -> Slot | None:
    """`choose.both_not`: the answer sentence as one slot, ruled supported where it says no
    or contradicted with "No, B is Canadian." as its correction, where P names a nationality
    or a taxon that one option's own evidence states and the other's contradicts with another
    value; None otherwise."""
    parsed = both_question(question, evidence)
    if parsed is None:
        return None
    _, a, b, prop = parsed
    # the taxon P names, read as `value_of` reads an option's (a genus before a family)
    what, taxon = next(((w, found) for w, pattern in (("genus", _GENUS), ("family", _FAMILY))
                        if (found := pattern.search(prop))), ("nationality", None))
    wanted = next(g for g in taxon.groups() if g) if taxon else \
        next((w for w in prop.split() if NATIONALITY.fullmatch(w)), None)
    if wanted is None:
        return None
    values = {option: value_of(option, what, evidence) for option in (a, b)}
    if None in values.values() or not any(v.lower() == wanted.lower() for v in values.values()):
        return None  # one option must state the asked value: it is a value of that kind
    other = next((o for o, v in values.items()
                  if wanted.lower() not in v.lower().split("-")), None)
    if other is None:
        return None
    text = sentence.strip()
    slot = Slot(kind="sentence", text=text, start=sentence.find(text))
    slot.note = f"the evidence gives {a} {values[a]!r} and {b} {values[b]!r}, not both " \
                f"{wanted!r}"
    if says_no(text):
        slot.ruling = "supported"
        return slot
    slot.ruling = "contradicted"
    slot.chosen = f"No, {other} is in the {what} {values[other]}." if taxon else \
        f"No, {other} is {values[other]}."
    return slot


YES_NO = (("choose.both", both_slot), ("choose.same_value", same_slot),
          ("choose.both_not", both_not_slot))
"""The rules that read a yes or no from the passages, in order, each with its slot reader."""
