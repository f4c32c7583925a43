"""A person's roles: the occupations the evidence predicates of the subject, offered to a role
slot that the slot's frame alone finds no rival for (`choose.subject_roles`).

A role slot ("was an American ___", "was the ___ of La Trinité") is offered the evidence's roles
only where the word before them is the slot's (`collect_candidates`), and a biography names a
person's occupation in other words than its lead does: "he became an organist and teacher",
"returned ... as an official staff producer", "a career as a singer, dancer, actress, and
writer". On the tuning bios no planted role error was ever offered its original value (0 of 9
corrected; on the report bios 0 of 6). What makes such a role a value of the same thing is
not the word before it but that it is said of the subject: it stands in a passage that names
the subject, and no relation ("his father", "her husband") stands between its clause's start and
its verb.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from serc_dspy.core.trace import Candidate, Fact, Slot
from serc_dspy.rules.base import Rule, register
from serc_dspy.rules.slots import (
    MAX_CANDIDATES,
    ROLE_NOT,
    EvidenceSentence,
    normal_form,
    role_head,
    sentence_of,
    spans,
    stated,
    with_lead,
)
from serc_dspy.rules.words import words_of

register(
    Rule("choose.subject_roles", "a role slot whose own role no evidence sentence about the "
         "subject states, and which its frame finds no rival for, is offered the roles those "
         "sentences predicate of the subject (\"he became an organist and teacher\", \"a career "
         "as a singer, dancer, actress\"; not a relative's: \"his father was a painter\"), "
         "whatever word stands before them; such a rival chosen in both orders is not held to "
         "the words around it (`choose.same_frame`): being said of the subject is its frame",
         "no planted role error of the tuning bios was ever offered its original value: the "
         "frame (the word before the role) of \"an American record ___\" is \"record\", and the "
         "body says \"an official staff producer\"; off by default: on the same bios the model "
         "took the offered role in both orders every time it was offered (17 of 17), so 2 "
         "planted roles were corrected and 4 replaced by another wrong one, and 9 true roles "
         "the evidence does not name (\"a pedagogue\", \"a songwriter\") were swapped for one "
         "it does (false alarms 0.000 to 0.073)", english_only=True,
         found_on="wikipedia_dev.json, K = 2, bios 1-20 (Alexandre Guilmant, Focus..., Mitzi "
         "Gaynor)", default=False),
)

_VERB = re.compile(r"\b(?:is|was|are|were|became|become|becomes|as)\s+(?:an?|the)\s+", re.I)
_LIST_NEXT = re.compile(r"(?:,\s*(?:and\s+|or\s+)?|\s+(?:and|or)\s+)(?:an?\s+)?([a-z][a-z-]+)\b")
_KIN = frozenset(
    "father mother son daughter wife husband brother sister parent parents uncle aunt cousin "
    "grandfather grandmother grandson granddaughter partner friend fiancé fiancée spouse widow "
    "widower nephew niece half-brother half-sister stepfather stepmother".split())
_RELATIONS = _KIN | {"teacher", "student", "mentor", "pupil"}
"""Words for another person: in the clause before a role's verb, the role is theirs."""
_PERSON_NOUN = re.compile(r"(?:er|or|ist|ian|ant|ent|man|woman|ess|eur|euse|ee|ic|ect|ot|ive|ef|"
                          r"ain|ier|ar)$|^(?:star|model|judge|monk|nun|priest|poet|saint|chef|cook|"
                          r"spy|host|icon|legend|bishop|king|queen|prince|princess)$")
"""The endings and words of nouns for people ("organist", "producer", "actress", "host"): a
role phrase's head that is none ("the nucleus of", "a celebrated", "as a child") is no
occupation, and offering it invites a swap the passage never meant."""


def _occupation(word: str) -> bool:
    """A singular noun for a person that is no relative ("sister" is no occupation)."""
    head = word.lower().rsplit("-", 1)[-1]
    return bool(_PERSON_NOUN.search(head)) and word.lower() not in _KIN


def _said_of_subject(sentence: str, verb_at: int) -> bool:
    """Whether the role after `verb_at` is said of the subject: no relation word ("his father
    Jean-Baptiste was an organist") in the clause that leads up to its verb."""
    clause = re.split(r"[,;:(]", sentence[:verb_at])[-1]
    return not {w.lower() for w in words_of(clause)} & _RELATIONS


def _listed_after(sentence: str, end: int) -> list[tuple[str, int]]:
    """The roles that continue a role's list: "a singer, dancer, actress, and writer"."""
    found = []
    while (m := _LIST_NEXT.match(sentence, end)) and m.group(1).lower() not in ROLE_NOT and \
            len(m.group(1)) > 3 and _occupation(m.group(1)):
        start, end = role_head(sentence, m.start(1), m.end(1))  # "television host"
        found.append((sentence[start:end], start))
    return found


def subject_roles(slot: Slot, fact: str, evidence: list[EvidenceSentence], subject: str,
                  limit: int) -> list[Candidate]:
    """Up to `limit` roles the evidence predicates of the subject, each once by its normal
    form, none the fact states, with their passage and offset."""
    own = {normal_form("role", s.text) for s in spans(fact, subject) if s.kind == "role"}
    seen = own | {normal_form("role", slot.text)}
    found: list[Candidate] = []
    for sentence in evidence:
        for span in spans(sentence.text, subject):
            verbs = list(_VERB.finditer(sentence.text[:span.start]))
            if span.kind != "role" or not verbs or not _occupation(span.text) or \
                    not _said_of_subject(sentence.text, verbs[-1].start()):
                continue
            for value, at in [(span.text, span.start)] + _listed_after(
                    sentence.text, span.start + len(span.text)):
                key = normal_form("role", value)
                if key in seen or key in {normal_form("role", w) for w in words_of(subject)}:
                    continue
                seen.add(key)
                found.append(Candidate(value=value, passage=sentence.passage,
                                       offset=sentence.offset + at,
                                       context=with_lead(sentence.text[:at], value)))
    return found[:limit]


def said_of_subject(rival: Candidate, evidence: list[EvidenceSentence], subject: str) -> bool:
    """Whether a role rival is one of the roles its sentence predicates of the subject."""
    sentence = sentence_of(rival, evidence)
    return sentence is not None and any(
        c.offset == rival.offset for c in subject_roles(Slot(kind="role", text="", start=0), "",
                                                        [sentence], subject, limit=99))



def offer_roles(slot: Slot, fact: Fact, evidence: list[EvidenceSentence], subject: str,
                text: str, rule: Callable[..., None]) -> str:
    """`choose.subject_roles` on a role slot whose frame found no rival and whose own role no
    sentence about the subject states: its options widened by `subject_roles` (its own value
    first, "not stated" last), ruled by `rule`; returns the evidence text shown beside them,
    each new role's sentence added."""
    if slot.candidates[1:-1] or stated(slot, evidence):
        return text
    roles = subject_roles(slot, fact.text, evidence, subject, MAX_CANDIDATES - 2)
    for role in roles:
        sentence = sentence_of(role, evidence)
        text += "" if sentence is None or sentence.text in text else "\n" + sentence.text
    if roles:
        slot.candidates = slot.candidates[:1] + roles + slot.candidates[-1:]
        rule("choose.subject_roles", fact.id, before=slot.text,
             detail="offered " + ", ".join(repr(c.value) for c in roles))
    return text
