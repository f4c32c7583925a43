"""`rules.cover`: a year, date or number no extracted fact states, checked as a slot of its
sentence (`choose.uncovered`), firing and staying quiet."""

import rules_helpers  # noqa: F401 (puts tests/ and tests/programs/ on the path)
from test_choice import decode, pick

from serc_dspy.rules.cover import uncovered_slots

FIRES = {"choose.uncovered"}
QUIET = set(FIRES)

DRAFT = "Marie Curie was born in Warsaw. She died in 1944 of aplastic anaemia at Passy."
LEFT_OUT = {"She died in 1944 of aplastic anaemia at Passy.": [
    "Marie Curie died of aplastic anaemia.", "Marie Curie died at Passy."]}


def test_the_details_no_fact_states_are_the_sentences_slots():
    """wikipedia_dev.json, K = 2: Egon Krenz "during the Revolutions of 1998", whose facts
    all left the year out."""
    sentence = ("He was the last leader of East Germany during the Revolutions of 1998, and "
                "led it for 50 days from 18 October 1989.")
    facts = ["He was the last leader of East Germany.", "He led it from 18 October 1989."]
    assert [(s.kind, s.text, s.start) for s in uncovered_slots(sentence, facts, "Egon Krenz")
            ] == [("year", "1998", sentence.index("1998")), ("number", "50", sentence.index("50"))]
    assert uncovered_slots(sentence, [sentence], "Egon Krenz") == []


def test_a_year_the_extractor_left_out_is_checked_and_swapped_in_its_sentence():
    fixed, engine = decode(DRAFT, LEFT_OUT, choose=pick("1934"),
                           rules={"choose.uncovered": True})    # off by default
    assert fixed.answer == DRAFT.replace("1944", "1934")
    ruling = fixed.trace.ruled("choose.uncovered")[0]
    assert ruling.detail == "no fact states '1944'"
    cover = fixed.trace.fact(ruling.node)
    assert cover.text == "She died in 1944 of aplastic anaemia at Passy."
    assert [s.text for s in cover.slots] == ["1944"]     # the facts' details are theirs
    assert fixed.trace.ruled("choose.swap", ruling.node)[0].after == "1934"
    # off (the default): no fact carries the year, and the wrong year stays
    off, _ = decode(DRAFT, LEFT_OUT, choose=pick("1934"))
    assert off.answer == DRAFT and not off.trace.ruled("choose.uncovered")


def test_a_sentence_whose_facts_state_every_detail_gets_no_sentence_fact():
    facts = {"She died in 1944 of aplastic anaemia at Passy.": [
        "Marie Curie died in 1944 of aplastic anaemia at Passy."]}
    result, _ = decode(DRAFT, facts, choose=pick("1934"), rules={"choose.uncovered": True})
    assert not result.trace.ruled("choose.uncovered")
    assert result.answer == DRAFT.replace("1944", "1934")   # the fact's own slot swapped it
