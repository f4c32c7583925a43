"""`rules.claims`: the claims a short answer and a rival are read as, and when none is read."""

from serc_dspy.core.trace import Slot
from serc_dspy.rules.claims import claim_with, rival_claims
from serc_dspy.rules.slots import EvidenceSentence

QUESTION = "Which K283BV artist is from Columbus, Ohio?"
EVIDENCE = [EvidenceSentence(text, 0, offset) for text, offset in (
    ("Mumford & Sons are a British folk rock band formed in London in 2007.", 0),
    ("Twenty One Pilots is an American musical duo from Columbus, Ohio.", 70),
    ("K283BV plays Twenty One Pilots and Mumford & Sons.", 140))]


def _slot(text: str, sentence: str) -> Slot:
    return Slot(kind="name", text=text, start=max(sentence.find(text), 0))


def test_a_sentence_answer_and_its_rival_are_read_against_the_sentences_naming_each():
    sentence = "Mumford & Sons is from Columbus, Ohio."
    claims = rival_claims(QUESTION, _slot("Mumford & Sons", sentence), sentence,
                          "Twenty One Pilots", EVIDENCE)
    assert [(value, claim) for value, claim, _ in claims] == [
        ("Mumford & Sons", sentence),
        ("Twenty One Pilots", "Twenty One Pilots is from Columbus, Ohio.")]
    # each value's sentences, a sentence naming both included
    assert claims[0][2] == [EVIDENCE[0].text, EVIDENCE[2].text]
    assert claims[1][2] == [EVIDENCE[1].text, EVIDENCE[2].text]


def test_no_claim_is_read_for_a_bare_value_a_negation_or_a_slot_the_answer_lacks():
    # a bare value's claim would be the question itself (6 of 27 right bare answers broken)
    bare = "Mumford & Sons."
    assert rival_claims(QUESTION, _slot("Mumford & Sons", bare), bare, "Twenty One Pilots",
                        EVIDENCE) is None
    denied = "Mumford & Sons is not from London."
    assert rival_claims(QUESTION, _slot("Mumford & Sons", denied), denied,
                        "Twenty One Pilots", EVIDENCE) is None
    elsewhere = "The band is from Columbus, Ohio."
    assert rival_claims(QUESTION, Slot(kind="name", text="Mumford & Sons", start=0), elsewhere,
                        "Twenty One Pilots", EVIDENCE) is None
    # a value no evidence sentence names has nothing to be read against
    sentence = "Mumford & Sons is from Columbus, Ohio."
    assert rival_claims(QUESTION, _slot("Mumford & Sons", sentence), sentence, "Pearl Jam",
                        EVIDENCE) is None


def test_a_bare_values_claim_with_another_value_is_the_question_answered_by_it():
    # `choose.option_claims` reads a bare name so ("...? Answer: Boston College.")
    bare = "Mumford & Sons"
    assert claim_with(QUESTION, bare, _slot(bare, bare), "Twenty One Pilots") == \
        f"{QUESTION} Answer: Twenty One Pilots."
    sentence = "It was  Mumford & Sons."  # whitespace folded, the rest kept
    assert claim_with(QUESTION, sentence, _slot(bare, sentence), "Twenty One Pilots") == \
        f"{QUESTION} Answer: Twenty One Pilots."
    said = "They said Mumford & Sons played."
    assert claim_with(QUESTION, said, _slot(bare, said), "Twenty One Pilots") == \
        "They said Twenty One Pilots played."
