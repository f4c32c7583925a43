"""`rules.places`: place names from the gazetteers, by kind."""

from serc_dspy.rules.places import asked_place, is_asked_place, place_kinds


def test_place_names_have_the_kinds_the_gazetteers_give_them():
    assert place_kinds("Turkey") == {"country"} and "state" in place_kinds("Hawaii")
    assert "city" in place_kinds("Istanbul") and "city" in place_kinds("Eminönü")
    assert "city" in place_kinds("Eminonu")  # accents folded
    assert "county" in place_kinds("Ulster County")
    assert not place_kinds("Persian") and not place_kinds("Longs Drugs")
    assert is_asked_place("Turkey", "country") and not is_asked_place("Istanbul", "country")
    assert is_asked_place("Istanbul", "") and not is_asked_place("Badr Hari", "")
    assert asked_place("country") == "country" and asked_place("town") == "city"
    assert asked_place("book") == ""
