"""`rules.frames` and `rules.titles`: the words around a value, and the titles a draft quotes."""

from serc_dspy.core.trace import Slot
from serc_dspy.rules.frames import following_words, preceding_word
from serc_dspy.rules.slots import EvidenceSentence, Span
from serc_dspy.rules.titles import quoted, title_candidates


def test_the_word_before_a_value_passes_over_articles_and_conjunctions():
    text = "She was born in the city of Warsaw."
    assert preceding_word(text, text.index("Warsaw")) == "of"
    assert preceding_word("Warsaw is old.", 0) == ""


def test_the_two_words_after_a_value_count_a_possessive_and_never_a_function_word():
    text = "He was Jordan's 15th Secretary of State."
    end = text.index("Jordan") + len("Jordan")
    assert following_words(text, end) == ("'s", "15th")
    assert following_words("as Puerto Rico’s 15th Secretary", len("as Puerto Rico")) == \
        ("'s", "15th")
    assert following_words("He moved to London in 1911.", len("He moved to London")) == ()
    assert following_words("in London.", len("in London")) == ()


def test_a_quoted_slot_is_offered_the_quoted_titles_the_fact_does_not_name():
    sentence = 'She starred in "Desperate Housewives" for years.'
    slot = Slot(kind="name", text="Desperate Housewives", start=0)
    assert quoted(sentence, Span("name", slot.text, sentence.index(slot.text)))
    evidence = [EvidenceSentence('She played Miranda in "Sex and the City" and in "The Big C".',
                                 0, 0)]
    options = title_candidates(slot, sentence, "She starred in Desperate Housewives.", evidence)
    assert [c.value for c in options] == ["Desperate Housewives", "Sex and the City",
                                          "The Big C", "not stated"]
    assert options[1].context == '"Sex and the City"'
    # unquoted in the draft: not a title, and its options are found as any name's
    assert title_candidates(slot, "She starred in Desperate Housewives.", "", evidence) is None
