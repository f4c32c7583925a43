"""`rules.questions`: what a question asks for, from its words alone."""

from serc_dspy.rules.questions import head_noun, question_kind


def test_a_list_of_modifiers_does_not_end_the_asked_type_phrase():
    # HaluEval extra tuning item 46: "What American stage, film, and television actor ...?"
    # was typed "other", so its sentence answer was decoded as prose
    question = "What American stage, film, and television actor played Samson in 1949?"
    assert head_noun(question) == "actor" and question_kind(question) == "person"
    assert head_noun("What author, born in 1949, wrote for weeklies?") == "author"


def test_an_amount_or_a_date_asked_at_the_end_of_the_question_types_it():
    # HaluEval extra tuning items 138 and 231: "... earned how much money?" was typed "other",
    # so a draft stating no amount ("made an incredible amount of money") was prose
    assert question_kind("Emma Rose Kenney's roll in a Blue Sky Studios produced film earned "
                         "how much money?") == "number"
    assert question_kind("Up to how far off can the Deal Timeball be from UTC?") == "number"
    assert question_kind("The band spent how many weeks at number one?") == "number"
    assert question_kind("How tall is the tower?") == "number"
    # a date asked at the end (HaluEval extra tuning items 267 and 280: "born on which date?")
    assert question_kind("Ricky Gervais, an English comedian, born on which date?") == "date"
    assert question_kind("A branch of Freemasonry founded on what date?") == "date"
    # a "how" that asks no amount stays as it was
    assert question_kind("How did the band, which spent weeks at number one, split?") == "other"
