"""`rules.yesno`: "Are A and B both P?" read from the evidence, never a "no" inferred."""

from serc_dspy.rules.slots import EvidenceSentence
from serc_dspy.rules.yesno import both_question, both_slot, opens_with, says_yes

EVIDENCE = [
    EvidenceSentence("Wenling (Wenling dialect: Uen-lin) is a coastal city in Zhejiang, China.",
                     0, 0),
    EvidenceSentence("Xinzheng is a small city of Zhengzhou in Henan province of Central China.",
                     0, 80),
    EvidenceSentence("Ships from the port of Kobe near Osaka trade with China.", 0, 160),
]
QUESTION = "Are Wenling and Xinzheng both in China?"


def test_a_both_question_is_parsed_into_its_two_options_and_the_property():
    assert both_question(QUESTION) == ("are", "Wenling", "Xinzheng", "in China")
    assert both_question("Were Patrick White and Katherine Anne Porter both writers?") == \
        ("were", "Patrick White", "Katherine Anne Porter", "writers")
    assert both_question("Were Eatza Pizza and Your Pie founded in the same state?") is None
    assert both_question("Which city is larger, Wenling or Xinzheng?") is None


def test_an_option_is_what_a_sentence_is_about_only_when_it_opens_it():
    assert opens_with(EVIDENCE[0].text, "Wenling")
    assert opens_with("The Singer Building, at Liberty Street, was a tower.", "Singer Building")
    assert not opens_with(EVIDENCE[2].text, "Osaka")  # named, but eighth: not its subject


def test_the_answer_is_yes_only_where_the_evidence_states_the_property_of_each():
    fixed = both_slot(QUESTION, "Wenling is in Japan.", EVIDENCE)
    assert fixed.ruling == "contradicted"
    assert fixed.chosen == "Yes, Wenling and Xinzheng are both in China."
    assert both_slot(QUESTION, "Yes, both are.", EVIDENCE).ruling == "supported"
    # Osaka's sentence names China, but is not about Osaka: no yes, and never a no
    assert both_slot("Are Wenling and Osaka both in China?", "No.", EVIDENCE) is None


def test_an_answer_says_yes_by_its_first_word_or_by_both_and_the_property():
    assert says_yes("Yes, they are.", "in China")
    assert says_yes("Both are in China, in different provinces.", "in China")
    assert not says_yes("No, both are not in China.", "in China")
    assert not says_yes("Wenling is in Japan.", "in China")
