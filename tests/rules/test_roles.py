"""`rules.roles`: a role slot offered the roles the evidence says of the subject
(`choose.subject_roles`), firing and staying quiet."""

import rules_helpers  # noqa: F401 (puts tests/ and tests/programs/ on the path)
from test_choice import decode, pick

from serc_dspy import LocalCorpus
from serc_dspy.core.trace import Slot
from serc_dspy.rules.roles import subject_roles
from serc_dspy.rules.slots import EvidenceSentence, spans

FIRES = {"choose.subject_roles"}
QUIET = set(FIRES)

CAREER = LocalCorpus.from_texts({
    "career.txt": "Her father Władysław Skłodowski was a teacher of mathematics. In Paris Marie "
                  "Curie became a physicist and chemist at the Sorbonne, where she worked with "
                  "Pierre Curie.",
})


def sentences(*texts):
    return [EvidenceSentence(text, 0, 1000 * k) for k, text in enumerate(texts)]


def test_the_roles_said_of_the_subject_are_offered_not_a_relatives_nor_a_non_role():
    """wikipedia_dev.json, K = 2: Alexandre Guilmant "the painter of La Trinité" (organist),
    Focus... "an American record sculptor" (producer), Mitzi Gaynor (a listed actress)."""
    evidence = sentences(
        "A student of his father Jean-Baptiste, he became an organist and teacher in his place "
        "of birth.",
        "His father Jean-Baptiste was a painter.",
        "In 2013, Focus... returned to Aftermath Entertainment as an official staff producer.",
        "A proclamation paid tribute to her career as a singer, dancer, actress, and writer.",
        "Guilmant was the nucleus of a school, and as a child he played the organ.")
    fact = "Guilmant was the painter of La Trinité."
    slot = Slot(kind="role", text="painter", start=fact.index("painter"))
    found = subject_roles(slot, fact, evidence, "Guilmant", limit=9)
    assert [c.value for c in found] == ["organist", "teacher", "producer", "singer", "dancer",
                                        "actress", "writer"]
    # each keeps where it was found and the words that lead up to it
    assert found[0].context == "he became an organist" and found[0].offset == \
        evidence[0].text.index("organist")
    assert [c.value for c in subject_roles(slot, fact, evidence, "Guilmant", limit=2)] == [
        "organist", "teacher"]


def test_a_role_phrase_ends_before_a_verb_of_its_own():
    """wikipedia_dev.json, Joey D. Vieira, K = 2: "a child painter using the name" made
    "using" the role slot."""
    assert [(s.kind, s.text) for s in spans("He began as a child actor using the name Donald "
                                            "Keeler.")] == [("role", "actor"),
                                                            ("name", "Donald Keeler")]
    assert [s.text for s in spans("She was a figure skating champion.")] == ["champion"]


def test_a_wrong_role_is_swapped_for_the_one_the_evidence_says_of_the_subject():
    draft = "Marie Curie was a painter. She worked with Pierre Curie."
    facts = {"Marie Curie was a painter.": ["Marie Curie was a painter."]}
    fixed, engine = decode(draft, facts, corpus=CAREER, choose=pick("physicist"),
                           rules={"choose.subject_roles": True})    # off by default
    assert fixed.answer == draft.replace("painter", "physicist")
    ruling = fixed.trace.ruled("choose.subject_roles", "f0.0")[0]
    assert ruling.detail == "offered 'physicist', 'chemist'"   # not her father's "teacher"
    assert fixed.trace.ruled("choose.swap", "f0.0")[0].after == "physicist"
    # off (the default): the slot's frame ("was ___") finds no rival in "became a
    # physicist", and the wrong role stays, unverified, in the draft's words
    off, _ = decode(draft, facts, corpus=CAREER, choose=pick("physicist"))
    assert off.answer == draft and not off.trace.ruled("choose.subject_roles")
    assert off.trace.fact("f0.0").status == "unverified"


def test_a_role_the_evidence_states_or_a_frame_rival_is_not_widened():
    # the draft's own role is stated: no widening, and nothing to swap
    draft = "Marie Curie was a chemist. She worked with Pierre Curie."
    kept, _ = decode(draft, {}, corpus=CAREER, choose=pick("physicist"),
                     rules={"choose.subject_roles": True})
    assert kept.answer == draft and not kept.trace.ruled("choose.subject_roles")
