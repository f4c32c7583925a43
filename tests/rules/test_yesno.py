"""`rules.yesno`: "Are A and B both P?" read from the evidence, never a "no" inferred."""

from serc_dspy.rules.slots import EvidenceSentence
from serc_dspy.rules.yesno import (
    both_question,
    both_slot,
    opens_with,
    same_question,
    same_slot,
    says_yes,
    value_of,
)

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
    # "both" first (HaluEval extra tuning items 22, 50): the second name is the longest run
    # of capitalised words that opens an evidence sentence, the rest is the property
    bands = [EvidenceSentence("Kings of Leon is an American rock band.", 0, 0)]
    assert both_question("Are both The New Pornographers and Kings of Leon American rock "
                         "bands?", bands) == ("are", "The New Pornographers", "Kings of Leon",
                                              "American rock bands")
    assert both_question("Were both Joseph Roth and Cid Corman authors?") == (
        "were", "Joseph Roth", "Cid Corman", "authors")


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


SAME = [EvidenceSentence(t, 0, k * 100) for k, t in enumerate((
    "Chris Carter (born October 13, 1956) is an American television and film producer.",
    "Theo van Gogh (23 July 1957 - 2 November 2004) was a Dutch film director.",
    "Randal Kleiser (born July 20, 1946) is an American film director.",
    "Lysichiton is a genus of flowering plants in the family Araceae.",
    "Ageratum is a genus of 40 to 60 annuals in the family Asteraceae.",
    "Up is a 2009 American computer-animated film.",
    "The Watercolor is a 2009 short film by Kim Ki-duk."))]


def test_a_same_question_is_parsed_into_its_two_options_and_what_they_share():
    # HaluEval extra tuning items 367, 214, 233
    assert same_question("Do filmmakers Chris Carter and Theo van Gogh share the same "
                         "nationality?") == ("Chris Carter", "Theo van Gogh", "nationality")
    assert same_question("Were Up and The Watercolor released in the same year?") == (
        "Up", "The Watercolor", "year")
    assert same_question("Is Lysichiton and Ageratum in the same family?") == (
        "Lysichiton", "Ageratum", "family")
    assert same_question("Were Eatza Pizza and Your Pie founded in the same state?") is None
    assert same_question(QUESTION) is None


def test_each_options_value_is_read_from_the_sentence_that_opens_by_naming_it():
    assert value_of("Chris Carter", "nationality", SAME) == "American"
    assert value_of("Theo van Gogh", "nationality", SAME) == "Dutch"
    assert value_of("Ageratum", "family", SAME) == "Asteraceae"
    assert value_of("The Watercolor", "year", SAME) == "2009"
    assert value_of("Kim Ki-duk", "year", SAME) is None  # named, but opens no sentence


def test_two_values_that_differ_are_a_no_the_passages_state_and_one_value_a_yes():
    question = "Do filmmakers Chris Carter and Theo van Gogh share the same nationality?"
    wrong = same_slot(question, "Yes, both were born in America.", SAME)
    assert wrong.ruling == "contradicted"
    assert wrong.chosen == "No, Chris Carter is American and Theo van Gogh is Dutch."
    assert same_slot(question, "no", SAME).ruling == "supported"
    same = "Are Chris Carter and Randal Kleiser of the same nationality?"
    assert same_slot(same, "No, Carter is Canadian.", SAME).chosen == \
        "Yes, Chris Carter and Randal Kleiser are both American."
    assert same_slot("Were Up and The Watercolor released in the same year?", "No.",
                     SAME).chosen == "Yes, Up and The Watercolor are both from 2009."
    # a value missing for either: no decision
    assert same_slot("Are Chris Carter and Lee Smith of the same nationality?", "No.",
                     SAME) is None
