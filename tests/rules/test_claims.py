"""`rules.claims`: the claims a short answer and a rival are read as, and when none is read."""

from serc_dspy.core.trace import Slot
from serc_dspy.rules.claims import both_claims, claim_with, one_option_claim, rival_claims
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


def test_a_both_questions_property_is_said_of_one_option_in_the_singular():
    assert one_option_claim("Calochone", "are", "plants") == "Calochone is a plant."
    assert one_option_claim("Joseph Roth", "were", "authors") == "Joseph Roth was an author."
    # the head noun is the one before "of", "based", "in", ...
    assert one_option_claim("Paloma", "are", "cocktails based on tequila") == \
        "Paloma is a cocktail based on tequila."
    assert one_option_claim("Z", "are", "actresses") == "Z is an actress."
    assert one_option_claim("Y", "are", "comedies") == "Y is a comedy."
    assert one_option_claim("Grasshopper", "are", "types of drinks") == "Grasshopper is a drink."
    # a property with no plural noun is said as it stands
    assert one_option_claim("Wenling", "are", "in China") == "Wenling is in China."
    assert one_option_claim("X", "were", "American") == "X was American."
    # "Did both A and B ...?": the emphatic form, no verb to conjugate
    assert one_option_claim("Carl Boese", "did", "direct and produce film") == \
        "Carl Boese did direct and produce film."
    assert one_option_claim("Juniper", "do", "belong to the family") == \
        "Juniper does belong to the family."


def test_a_both_question_is_read_only_when_answered_yes_or_no_and_each_option_is_named():
    evidence = [EvidenceSentence(text, 0, offset) for text, offset in (
        ("Calochone is a genus of flowering plants.", 0),
        ("Adlumia is a genus of two species.", 50))]
    question = "Are Calochone and Adlumia both plants?"
    claims = both_claims(question, "No, Calochone is a fish.", evidence)
    assert [(option, claim, said) for option, claim, said in claims] == [
        ("Calochone", "Calochone is a plant.", [evidence[0].text]),
        ("Adlumia", "Adlumia is a plant.", [evidence[1].text])]
    assert both_claims(question, "Calochone is a fish.", evidence) is None  # neither
    assert both_claims("Do Calochone and Adlumia both grow?", "No.", evidence) is None
    assert both_claims("Are Calochone and Rosa both plants?", "No.", evidence) is None
    # a property relating the two is no claim about either alone
    assert both_claims("Are Calochone and Adlumia both of the same family?", "No.",
                       evidence) is None


def test_a_both_questions_options_are_split_at_the_and_that_leaves_both_named():
    evidence = [EvidenceSentence(text, 0, offset) for text, offset in (
        ("A gin and tonic is a highball cocktail made with gin and tonic water.", 0),
        ("The paloma is a tequila-based cocktail.", 80),
        ("Welcome to Durham, USA is a documentary about Durham.", 130))]
    claims = both_claims("Are Gin and tonic and Paloma both cocktails?", "Yes.", evidence)
    assert [option for option, _, _ in claims] == ["Gin and tonic", "Paloma"]
    # a lower-case description before a name is no part of it
    claims = both_claims("Are the documentaries Welcome to Durham, USA and Paloma both "
                         "about Durham?", "Yes.", evidence)
    assert [option for option, _, _ in claims] == ["Welcome to Durham, USA", "Paloma"]
