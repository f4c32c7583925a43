"""`rules.two_options`: the two options a question names, which questions ask for one of two,
and where a draft or the evidence names an option."""

from serc_dspy.rules.two_options import choice_question, comparison_options, mentions


def test_the_options_of_a_comparison_question():
    assert comparison_options("Who was born first, Pablo Trapero or Aleksander Ford?") == [
        "Pablo Trapero", "Aleksander Ford"]
    assert comparison_options("Are Wenling and Xinzheng both in China, or not?") == []
    assert comparison_options("Which is older, the lake?") == []
    # the options in the middle, after a verb, or after "between" (HaluEval extra tuning
    # items 114, 78 and 323, 101)
    assert comparison_options("Which musician, Edwyn Collins or Jimmie Ross, played the bass "
                              "guitar?") == ["Edwyn Collins", "Jimmie Ross"]
    assert comparison_options("Which city is larger, Dallas or Austin, Texas?") == [
        "Dallas", "Austin, Texas"]
    hospital = "Is Children's Hospital or MedStar Center the largest private hospital in Ohio?"
    assert comparison_options(hospital) == ["Children's Hospital", "MedStar Center"]
    assert comparison_options("Is Advanced Micro Devices or Level 3 Communications "
                              "headquartered further west?")[1] == "Level 3 Communications"
    assert comparison_options("Between two tennis players Kim Clijsters and Mary Pierce, who "
                              "is older?") == ["Kim Clijsters", "Mary Pierce"]
    # a choice between two lower-case kinds, or two years, names no options
    assert comparison_options("Was the president a democrat or a republican?") == []
    assert comparison_options("Between 1990 and 2000, which film won?") == []
    assert choice_question(hospital) and not choice_question("Is Paris in France?")
    # a superlative or a relation between two options, or options in the middle, leave a
    # question typed by its head word: no default rule decides which of two a statement holds
    # for, and its person or place path may fix it (extra tuning items 114, 178, 180)
    assert not choice_question("What shopping mall is the largest in south Texas, Malle del "
                               "Norte or La Plaza Mall?")
    assert not choice_question("Which airport is closer to Cleveland, Ohio, Luis Munoz Marin "
                               "International Airport or Rickenbacker International Airport?")
    assert not choice_question("Which musician, Edwyn Collins or Jimmie Ross, played the bass "
                               "guitar?")
    assert choice_question("Which director is American, Mark Lester or Ken Loach?")
    # a lower-case "the" is no part of an option ("The Chinese Crested Dog" takes "Chien-gris")
    assert comparison_options("Which breed of dog is now extinct: Chinese Crested Dog or the "
                              "Chien-gris?") == ["Chinese Crested Dog", "Chien-gris"]


def test_an_option_is_named_by_its_words_in_a_row_or_each_of_them():
    assert mentions("Anna Sergeyevna Kournikova (born 7 June 1981) is a Russian player.",
                    "Anna Kournikova")
    assert mentions("Jerome Lejeune was born in 1926.", "Jérôme Lejeune")  # accents aside
    assert mentions("Love Bug is a 1968 film.", "The Love Bug")  # function words aside
    assert not mentions("Anna Chakvetadze was born in 1987.", "Anna Kournikova")
    assert not mentions("The whole band split up.", "Hole")  # whole words only
    # HaluEval extra tuning item 396: "Which genus has more species, Fir or Chelone?"
    assert mentions("Firs (Abies) are a genus of 48-56 species of trees.", "Fir")
    assert not mentions("The Love Bugs is a band.", "The Love Bug")  # a name is not plural


def test_an_option_is_named_as_its_passage_names_it():
    # cmp51 tuning item 14: "Which director is American, Mark L. Lester or Ken Loach?"
    loach = "Kenneth Charles Loach (born 17 June 1936) is an English director."
    assert mentions(loach, "Ken Loach")  # a first name in full
    assert mentions("Michael Gerard Tyson is a boxer.", "Mike Tyson")  # or its nickname
    assert mentions("Al Loach is a singer.", "Albert Loach")  # a nickname, either way
    assert not mentions("Alfred Loach is a singer.", "Al Loach")  # "Al" opens too much
    # cmp51 tuning item 24: the passage names "Camlaren Mine" by its own word alone
    camlaren = "Conditions attributed to World War II halted development at Camlaren in 1939."
    assert mentions(camlaren, "Camlaren Mine", rival="Barton Mine")
    assert not mentions(camlaren, "Camlaren Mine")  # without a rival, every word counts
    assert not mentions(camlaren, "Barton Mine", rival="Camlaren Mine")
    # a word the two share is no name of either
    assert not mentions("The mine closed.", "Camlaren Mine", rival="Barton Mine")
