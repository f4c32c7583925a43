"""`rules.units`: what a number counts, and units of measure by pint's registry."""

from serc_dspy.rules.units import in_metres, measure_name, unit_of


def test_a_units_spellings_are_one_unit_and_other_words_and_time_none():
    assert measure_name("km") == measure_name("kilometers") == measure_name("kilometres") == \
        "kilometer"
    assert measure_name("ft") == measure_name("feet")
    assert measure_name("km") != measure_name("miles")
    assert measure_name("chromosomes") == measure_name("12") == measure_name("") == ""
    assert measure_name("years") == ""  # a unit of time is no measure (`unit_of`)


def test_a_number_counts_the_unit_right_after_it_else_the_last_word_of_its_noun_phrase():
    text = "The 6.213 km long track and a track 6 kilometers long."
    assert unit_of(text, text.index("213") + 3) == unit_of(text, text.index(" 6 ") + 2) \
        == "kilometer"
    assert unit_of("19 chromosome pairs for", 2) == "pair"
    assert unit_of("38 chromosomes in each cell", 2) == unit_of("7 chromosome in", 1)
    assert unit_of("at the age of 11, she", 13) == ""
    # a unit of time is no measure of its own: "5 years old" is an age, "5 years" a span
    assert unit_of("aged 5 years old when", 6) == "old" != unit_of("for 5 years.", 5)


def test_a_length_in_metres_and_none_for_what_is_no_length():
    assert in_metres(6.213, "km") == 6213.0
    assert abs(in_metres(100, "feet") - 30.48) < 1e-9
    assert in_metres(3, "years") is None and in_metres(3, "species") is None
