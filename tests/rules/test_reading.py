"""`rules.reading`: a reading of the evidence found in it and offered among the options."""

from serc_dspy.core.trace import Candidate, Slot
from serc_dspy.rules.reading import offer_reading, reading_span, without_draft_tail
from serc_dspy.rules.slots import EvidenceSentence

EVIDENCE = [
    EvidenceSentence(text="Polaris Industries acquired Aixam-Mega in 2013.", passage=0,
                     offset=0),
    EvidenceSentence(text="Polaris is based in Roseau, Minnesota, USA.", passage=0,
                     offset=49),
]


def _options(*values):
    return [Candidate(value="Michigan", origin="fact"),
            *(Candidate(value=v, passage=0, offset=0) for v in values),
            Candidate(value="not stated", origin="none")]


def test_a_reading_is_found_in_the_passages_spelling_case_quotes_and_article_aside():
    sentence, at, value = reading_span('"roseau, minnesota."', EVIDENCE)
    assert (sentence.offset, at, value) == (49, 20, "Roseau, Minnesota")
    assert reading_span("the Aixam-Mega", EVIDENCE)[2] == "Aixam-Mega"


def test_a_long_reply_not_stated_or_words_of_no_sentence_are_no_reading():
    assert reading_span("Polaris is a company that makes vehicles and is based in the US",
                        EVIDENCE) is None
    assert reading_span("not stated", EVIDENCE) is None
    assert reading_span("Detroit", EVIDENCE) is None
    assert reading_span("Rose", EVIDENCE) is None  # a part of a word is no value


def test_a_reading_is_offered_second_and_the_cap_drops_the_last_pattern_value():
    slot = Slot(kind="name", text="Michigan")
    options, outcome = offer_reading(slot, _options("Roseau", "Minnesota", "USA", "Polaris"),
                                     "Roseau, Minnesota", EVIDENCE)
    assert outcome == "offered"
    assert [c.value for c in options] == ["Michigan", "Roseau, Minnesota", "Roseau",
                                          "Minnesota", "USA", "not stated"]
    read = options[1]
    assert read.offset == 49 + 20 and read.context == "is based in Roseau, Minnesota"


def test_a_reading_already_offered_or_the_drafts_own_adds_nothing():
    slot = Slot(kind="name", text="Michigan")
    before = _options("Roseau")
    again, outcome = offer_reading(slot, before, "roseau", EVIDENCE)
    assert outcome == "already offered" and [c.value for c in again] == [c.value for c in before]
    assert [c.read for c in again] == [False, True, False] and not before[1].read
    evidence = [*EVIDENCE, EvidenceSentence(text="Michigan is a state.", passage=1, offset=0)]
    assert offer_reading(slot, before, "Michigan", evidence)[1] == "the draft's own value"
    assert offer_reading(slot, before, "Detroit", EVIDENCE) == (before,
                                                                "not found in the evidence")
    assert offer_reading(slot, before, "Not stated.", EVIDENCE) == (before, "not stated")


def test_a_readings_parts_the_draft_repeats_after_the_slot_are_left_out():
    # HaluEval extra tuning item 26: "Polaris is based in Michigan, USA." read "Roseau,
    # Minnesota, USA", which swapped in whole wrote "USA, USA"
    slot = Slot(kind="name", text="Michigan")
    options, _ = offer_reading(slot, _options("Roseau"), "Roseau, Minnesota, USA", EVIDENCE,
                               following=", USA.")
    assert options[1].value == "Roseau, Minnesota" and options[1].read
    assert without_draft_tail("Roseau, Minnesota, USA", ", USA.") == "Roseau, Minnesota"
    assert without_draft_tail("Roseau, Minnesota, USA", " in 2013.") == \
        "Roseau, Minnesota, USA"


def test_a_reading_with_middle_names_marks_the_offered_name_it_lengthens():
    # HaluEval extra tuning item 35: "Robert Michael Sheehan" was read, "Robert Sheehan"
    # offered; the longer form, chosen, was no longer the answer's usual name
    evidence = [EvidenceSentence(text="Robert Michael Sheehan (born 1988) is an actor.",
                                 passage=0, offset=0)]
    slot = Slot(kind="name", text="Ben Whishaw")
    options = [Candidate(value="Ben Whishaw", origin="fact"),
               Candidate(value="Robert Sheehan", passage=0, offset=0),
               Candidate(value="not stated", origin="none")]
    marked, outcome = offer_reading(slot, options, "Robert Michael Sheehan", evidence)
    assert outcome == "already offered" and [c.value for c in marked] == [
        "Ben Whishaw", "Robert Sheehan", "not stated"] and marked[1].read
