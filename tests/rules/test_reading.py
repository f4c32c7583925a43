"""`rules.reading`: a reading of the evidence found in it and offered among the options."""

from serc_dspy.core.trace import Candidate, Slot
from serc_dspy.rules.answers import one_sentence
from serc_dspy.rules.reading import (
    offer_reading,
    reading_span,
    sentence_slot,
    without_draft_tail,
)
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


def test_a_sentence_drafts_slot_is_its_one_detail_of_the_readings_kind_not_in_the_question():
    # HaluEval extra tuning items 42, 49 and 64
    weeks = ("... behind a song written by Donna Weiss and Jackie DeShannon which spent how "
             "many weeks at No. 1 on the Hot 100?")
    slot = sentence_slot(weeks, "The song written by Donna Weiss and Jackie DeShannon spent "
                                "eight weeks at No. 1 on the Hot 100.", "nine")
    assert (slot.kind, slot.text) == ("number", "eight")
    film = "Which Oscar-nominated film was written by Sooni Taraporevala?"
    draft = "The Namesake was an Oscar-nominated film written by Sooni Taraporevala."
    slot = sentence_slot(film, draft, "Salaam Bombay")
    assert (slot.text, slot.start) == ("The Namesake", 0)  # a capital article opens a title
    quoted = sentence_slot("Kim Yool-ho starred in what 2016 movie?",
                           'Kim Yool-ho starred in "The Map Against the World".',
                           "Train to Busan")
    assert quoted.text == "The Map Against the World"
    # item 16: the part of a name the question names stays ("served as Nevada" had been
    # printed for "served as Attorney General of California")
    where = ("Catherine Cortez Masto, a woman who previously served as the 32nd Attorney "
             "General of where?")
    slot = sentence_slot(where, "Catherine Cortez Masto served as Attorney General of "
                                "California.", "Nevada")
    assert (slot.text, slot.start) == ("California", 53)
    # item 31: of two names the question does not give, a place is read: the draft's place
    state = ("... based at McClellan Air Force Base, in the North Highlands area of Sacramento "
             "County, in which US state?")
    slot = sentence_slot(state, "McClelland Air Force Base was located in Illinois.",
                         "California")
    assert slot.text == "Illinois"
    person = sentence_slot("Gigantic starred Paul Dano beside which actress?", "Jane "
                           "Alexander, born in Los Angeles, starred in it.", "Ann Dowd")
    assert person.text == "Jane Alexander"
    # item 39: a lower-case reading replaces the draft's words that close on its last word
    track = "... via the first mountain railway built in Europe to use what kind of track?"
    draft = "It runs from Vienna to Graz via a narrow gauge track."
    slot = sentence_slot(track, draft, "standard gauge track")
    assert (slot.kind, slot.text) == ("role", "narrow gauge track")
    assert sentence_slot(track, draft, "standard gauge").text == "narrow gauge"
    for reading in ("track", "narrow gauge track", "synth-pop"):  # one word, the draft's own,
        assert sentence_slot(track, draft, reading) is None  # a word not in the draft
    assert sentence_slot(track, "It runs via the track.", "standard gauge track") is None


def test_no_slot_for_two_details_of_the_kind_the_readings_own_value_or_long_prose():
    mvp = "In which American football game was Malcolm Smith named Most Valuable Player?"
    assert sentence_slot(mvp, "Malcolm Smith was named Most Valuable Player in the National "
                              "Football League (NFL) season of 2013.", "Super Bowl XLVIII") \
        is None  # two names the question does not give: which one the reading replaces?
    film = "Which Oscar-nominated film was written by Sooni Taraporevala?"
    draft = "The Namesake was an Oscar-nominated film written by Sooni Taraporevala."
    assert sentence_slot(film, draft, "the Namesake") is None  # the draft says the reading
    assert sentence_slot(film, "Goodison Park is in Liverpool.", "eight") is None  # no number
    long = draft[:-1] + ", and it was shown in many countries over the two years after it " \
                        "opened in 1988."
    assert not one_sentence(long) and sentence_slot(film, long, "Salaam Bombay") is None
    assert not one_sentence(draft + " It won.") and one_sentence(draft)


def test_words_a_passage_glued_at_a_full_stop_are_no_reading():
    # HaluEval extra tuning item 8: "El-P.Jaime Meline" was offered, chosen and printed
    glued = [EvidenceSentence(text="It features El-P.Jaime Meline is an American rapper.",
                              passage=0, offset=0)]
    assert reading_span("El-P.Jaime Meline", glued) is None
    assert reading_span("Jaime Meline", glued)[2] == "Jaime Meline"
    assert reading_span("Washington, D.C.", [EvidenceSentence(
        text="He lived in Washington, D.C. for years.", passage=0, offset=0)]) is not None


def test_a_typed_slot_is_offered_a_reading_of_its_own_kind_only():
    # HaluEval extra tuning item 386: "... was produced in 1972." read "Peter Asher" (the
    # producer, not his birth date), which two votes swapped in for the year
    evidence = [EvidenceSentence(text="Peter Asher (born 22 June 1944) produced the album.",
                                 passage=0, offset=0)]
    options = [Candidate(value="1972", origin="fact"),
               Candidate(value="1944", passage=0, offset=21),
               Candidate(value="not stated", origin="none")]
    year = Slot(kind="year", text="1972")
    assert offer_reading(year, options, "Peter Asher", evidence) == (options, "not a year")
    dated, outcome = offer_reading(year, options, "22 June 1944", evidence)  # its year's
    assert outcome == "already offered" and dated[1].value == "1944" and dated[1].read
    number = Slot(kind="number", text="three")
    assert offer_reading(number, options, "Peter Asher", evidence)[1] == "not a number"
    name = Slot(kind="name", text="Paul Simon")
    assert offer_reading(name, options, "Peter Asher", evidence)[1] == "offered"
