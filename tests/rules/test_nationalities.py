"""`rules.nationalities` and `choose.asked_nationality`: a question of nationality is answered
by the draft's nationality word, and offered the evidence's."""

from serc_dspy.core.trace import Slot
from serc_dspy.rules.answers import answer_candidates, answer_sentence, answer_slots
from serc_dspy.rules.nationalities import asks_nationality, is_nationality, nationality_words
from serc_dspy.rules.slots import EvidenceSentence

FILM = "What nationality was a historical drama film directed by?"


def test_nationality_words_are_told_by_their_endings_and_no_given_name_is_one():
    assert all(map(is_nationality, ("American", "Japanese", "Irish", "Dutch", "Pakistani",
                                    "Irish-American")))
    assert not any(map(is_nationality, ("Jordan", "Brian", "Christian", "Jauja", "Smith")))
    assert nationality_words("Bob Hope, the star, was a Canadian-American.") == \
        [("Canadian-American", 26)]
    assert asks_nationality("Son of Paleface starred the comedian of what nationality?")
    assert not asks_nationality("Where was Bob Hope born?")


def test_a_nationality_questions_slot_is_the_drafts_nationality_word():
    # multi-turn tuning item 170 and extra tuning item 200: the film's and the singer's names
    # were the slots, and the nationality chosen in both orders had nothing to replace
    assert answer_sentence(FILM, "Jauja is a Spanish historical drama.")
    slot, = answer_slots(FILM, "Jauja is a Spanish historical drama.")
    assert (slot.kind, slot.text, slot.start) == ("name", "Spanish", 11)
    slot, = answer_slots("What is the nationality of the poet?", "Patti Smith is Irish-American.")
    assert slot.text == "Irish-American"
    # a nationality the question names is no answer; the draft's other one is
    slot, = answer_slots("What nationality was the American poet's wife?",
                         "The American poet's wife was British.")
    assert slot.text == "British"
    # off, the slot is a name of the draft, as before
    off = answer_slots(FILM, "Jauja is a Spanish historical drama.",
                       on=lambda rule: rule != "choose.asked_nationality")
    assert [s.text for s in off] != ["Spanish"]


def test_a_nationality_slot_is_offered_the_evidences_nationality_words_only():
    evidence = [EvidenceSentence(text="Patti Smith is an American singer-songwriter and poet "
                                      "born in Chicago.", passage=0, offset=0),
                EvidenceSentence(text="Her poetry collection Early Work was published by "
                                      "Norton.", passage=0, offset=70)]
    slot = Slot(kind="name", text="Irish-American", start=15)
    offered = answer_candidates("What is the nationality of the poet who wrote Early Work?",
                                slot, evidence, sentence="Patti Smith is Irish-American.")
    # "American" is another answer than "Irish-American", not another form of it
    assert [c.value for c in offered] == ["Irish-American", "American", "not stated"]
