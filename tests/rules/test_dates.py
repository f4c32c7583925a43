"""`rules.dates`: a date slot asked as its year alone."""

from serc_dspy.core.trace import Candidate, Slot
from serc_dspy.rules.dates import year_slot
from serc_dspy.rules.slots import EvidenceSentence

FACT = "Moses Davis was born on 22 August 1966."
DATE = Slot(kind="date", text="22 August 1966", start=FACT.index("22"),
            candidates=[Candidate(value="22 August 1966", origin="fact")])


def _evidence(*texts):
    return [EvidenceSentence(text=t, passage=0, offset=0) for t in texts]


def test_a_date_offered_no_date_is_asked_as_its_year_where_the_evidence_offers_years():
    about = _evidence("Davis was born in Kingston in 1973.")
    year = year_slot(DATE, FACT, FACT, about, about, "Moses Davis")
    assert (year.kind, year.text, FACT[year.start:year.start + 4]) == ("year", "1966", "1966")
    assert [c.value for c in year.candidates] == ["1966", "1973", "not stated"]


def test_a_date_is_kept_whole_where_its_year_cannot_be_asked_alone():
    about = _evidence("Davis was born in Kingston in 1973.")
    # the evidence states the year: not wrong; no other year: nothing to ask
    assert year_slot(DATE, FACT, FACT, about, _evidence("In 1966 he was born."), "") is None
    assert year_slot(DATE, FACT, FACT, _evidence("Davis was born in Kingston."),
                     _evidence("Davis was born in Kingston."), "") is None
    # the year twice in the draft's sentence: a swap could not hit it alone
    twice = "Moses Davis was born on 22 August 1966 and left in 1966."
    assert year_slot(DATE, FACT, twice, about, about, "") is None
    # a date already offered a date, or a year slot: not narrowed
    offered = DATE.model_copy(update={"candidates": [
        *DATE.candidates, Candidate(value="3 May 1973", origin="evidence")]})
    assert year_slot(offered, FACT, FACT, about, about, "") is None
    assert year_slot(Slot(kind="year", text="1966", start=FACT.index("1966")), FACT, FACT,
                     about, about, "") is None
