"""`rules.people`: which words can open a person's name."""

from serc_dspy.rules.people import full_name, opens_person_name
from serc_dspy.rules.slots import spans


def test_a_persons_name_opens_with_a_given_name_an_initial_or_an_honorific():
    assert all(opens_person_name(w) for w in ("Amy", "Badr", "Tammy", "Sir", "J."))
    assert not any(opens_person_name(w) for w in ("Power", "Saban", "Weekly", "Times"))


def test_a_full_name_is_no_quoted_title_no_place_and_no_lone_surname():
    sentence = ("He wrote for \"The Weekly Standard\" with Amy Jo Johnson, for Power Rangers, "
                "Sir Francis Nethersole, Hari and Mary Pierce in New York.")
    named = {s.text: full_name(sentence, s) for s in spans(sentence)}
    assert named == {"Weekly Standard": False, "Amy Jo Johnson": True, "Power Rangers": False,
                     "Francis Nethersole": True, "Hari": False, "Mary Pierce": True,
                     "New York": False}
