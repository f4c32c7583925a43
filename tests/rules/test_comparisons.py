"""`rules.comparisons`: the decision a comparison's evidence makes between its two options, by
years, amounts or the question's words (`choose.compare`, `choose.compare_amounts`,
`choose.stated_option`), and how it is written into the answer."""

import rules_helpers  # noqa: F401 (puts tests/ and tests/programs/ on the path)
from test_choice import pick, short

from serc_dspy import LocalCorpus
from serc_dspy.core.trace import Slot
from serc_dspy.rules.comparisons import (
    compare_by_amounts,
    compare_by_dates,
    compare_slot,
    stated_option,
)
from serc_dspy.rules.slots import EvidenceSentence
from serc_dspy.rules.two_options import answers_no_option, comparison_options, option_slot


def said(*texts):
    return [EvidenceSentence(text=t, passage=0, offset=0) for t in texts]


def decided(compare, question, evidence):
    """The option `compare` picks for the question's own two options."""
    return compare(question, comparison_options(question), evidence)


def test_a_comparison_answer_naming_both_options_swaps_them_where_it_compares_them():
    # HaluEval extra tuning: "Cornel West is younger than Elytis." had become "Odysseas Elytis
    # is younger than Elytis.", and "Lee Ranaldo is younger than Mary Ramsey." was ruled
    # supported as if it answered "Mary Ramsey"
    question = "Who was born first, Odysseas Elytis or Cornel West?"
    assert [s.text for s in option_slot(question, "Cornel West is younger than Elytis.")] == [
        "Cornel West"]
    assert option_slot(question, "Both Odysseas Elytis and Cornel West wrote poems.") == []
    assert [s.text for s in option_slot(question, "Cornel West was born first.")] == [
        "Cornel West"]
    assert option_slot(question, "Neither was.") is None
    evidence = said("Odysseas Elytis (2 November 1911 - 18 March 1996) was a Greek poet.",
                    "Cornel West (born June 2, 1953) is an American philosopher.")
    turned = Slot(kind="name", text="Cornel West", start=0)
    compare_slot(question, turned, evidence, sentence="Cornel West is younger than Elytis.")
    assert turned.ruling == "supported"  # it says Elytis was born first, as the dates do
    wrong = Slot(kind="name", text="Cornel West", start=0)
    draft = "Cornel West was born before Odysseas Elytis."
    compare_slot(question, wrong, evidence, sentence=draft)
    assert wrong.ruling == "contradicted" and wrong.kind == "sentence"
    assert wrong.chosen == "Odysseas Elytis was born before Cornel West."
    # naming both, with nothing that ranks them: no slot, whichever option is decided
    assert option_slot(question, "Cornel West and Odysseas Elytis are the same age.") == []


def test_a_date_comparison_reads_each_options_first_year_where_its_name_is_spelt_otherwise():
    evidence = said("Anna Sergeyevna Kournikova (born 7 June 1981) is a Russian player.",
                    "Natalia Zvereva (born 16 April 1971) is a Belarusian player.")
    question = "Who was born first, Natalia Zvereva or Anna Kournikova?"
    assert decided(compare_by_dates, question, evidence) == "Natalia Zvereva"
    younger = "Who is younger, Natalia Zvereva or Anna Kournikova?"
    assert decided(compare_by_dates, younger, evidence) == "Anna Kournikova"
    # a sentence naming both options gives neither its year; one without a year, no decision
    both = said("Anna Kournikova and Natalia Zvereva met in 1997.",
                "Natalia Zvereva is a Belarusian player.")
    assert decided(compare_by_dates, question, both) is None
    # a life span whose dash was lost ("188926 May 1976", six HaluEval tuning items) gives
    # its first year, not its last
    glued = said("Martin Heidegger (26 September 188926 May 1976) was a German philosopher.",
                 "Lydia Davis (born July 15, 1947) is an American writer.")
    assert decided(compare_by_dates, "Who was born first, Martin Heidegger or Lydia Davis?",
                   glued) == "Martin Heidegger"
    # of two, the one released second is the later (multi-turn tuning item 421)
    films = said("Charley and the Angel is a 1973 Disney family film.",
                 "Planes is a 2013 American computer-animated sports comedy film.")
    assert decided(compare_by_dates, "Which was released second, Charley and the Angel or "
                   "Planes?", films) == "Planes"


def test_a_comparison_of_counts_reads_the_number_before_the_counted_noun():
    evidence = said("Quercus is a genus of about 500 species of trees, described in 1753.",
                    "Fagus is a genus of ten species of trees native to Europe.")
    question = "Which genus has more species, Fagus or Quercus?"
    assert decided(compare_by_amounts, question, evidence) == "Quercus"
    fewer = "Which genus has fewer species, Fagus or Quercus?"
    assert decided(compare_by_amounts, fewer, evidence) == "Fagus"
    # a year is never an amount, and a noun neither number counts decides nothing
    members = "Which genus has more members, Fagus or Quercus?"
    assert decided(compare_by_amounts, members, evidence) is None
    assert decided(compare_by_amounts, "Which is more famous, Fagus or Quercus?",
                   evidence) is None
    # HaluEval extra tuning item 396: the option in its plural, a range's dash an en dash
    firs = said("Firs (Abies) are a genus of 48\u201356 species of evergreen coniferous trees.",
                "Chelone is a genus of four species of perennial herbaceous plants.")
    assert decided(compare_by_amounts, "Which genus has more species, Fir or Chelone?",
                   firs) == "Fir"


def test_a_comparison_of_members_counts_the_names_a_band_lists():
    # HaluEval extra tuning item 195: no number counts either band's members
    evidence = [EvidenceSentence(text=t, passage=p, offset=0) for t, p in (
        ("Muse are an English rock band from Teignmouth, Devon, formed in 1994.", 0),
        ("The band consists of Matt Bellamy (lead vocals, guitar), Chris Wolstenholme (bass "
         "guitar, backing vocals) and Dominic Howard (drums, percussion).", 0),
        ("The Raconteurs is an American rock supergroup formed in Detroit, featuring four "
         "musicians associated with earlier musical projects: Jack White (solo), Brendan "
         "Benson (solo), Jack Lawrence (of The Greenhornes), and Patrick Keeler.", 1))]
    question = "Which band has more members, Muse or The Raconteurs?"
    assert decided(compare_by_amounts, question, evidence) == "The Raconteurs"
    fewer = "Which band has fewer members, Muse or The Raconteurs?"
    assert decided(compare_by_amounts, fewer, evidence) == "Muse"
    # a band whose own sentences list no members is not counted: undecided
    unnamed = evidence[:1] + [EvidenceSentence(text="The Raconteurs formed in Detroit.",
                                               passage=1, offset=0)]
    assert decided(compare_by_amounts, question, unnamed) is None
    # a list of what is no name counts nothing
    roles = said("Muse consists of guitars, drums and keyboards.",
                 "The Raconteurs consists of Jack White and Brendan Benson.")
    assert decided(compare_by_amounts, question, roles) is None


def test_a_comparison_of_lengths_compares_metres_whatever_the_unit():
    evidence = said("The Singer Building rose 612 feet above Broadway.",
                    "The Woolworth Building is 241 m tall.")
    question = "Which is taller, the Singer Building or the Woolworth Building?"
    assert decided(compare_by_amounts, question, evidence) == "Woolworth Building"
    shorter = "Which is shorter, the Singer Building or the Woolworth Building?"
    assert decided(compare_by_amounts, shorter, evidence) == "Singer Building"
    # "ranked 5 in the world" counts no inches
    ranked = said("The Singer Building ranked 5 in the world.", "The Woolworth Building is "
                  "241 m tall.")
    assert decided(compare_by_amounts, question, ranked) is None


def test_the_slot_is_decided_by_dates_before_amounts_and_says_which():
    question = "Which genus has more species, Fagus or Quercus?"
    evidence = said("Quercus is a genus of about 500 species.", "Fagus has ten species.")
    slot = Slot(kind="name", text="Fagus", start=0)
    assert compare_slot(question, slot, evidence) == ("choose.compare_amounts", "Quercus")
    assert slot.ruling == "contradicted" and slot.chosen == "Quercus"
    assert "amounts" in slot.note
    unread = Slot(kind="name", text="Fagus", start=0)
    assert compare_slot(question, unread, evidence,
                        on=lambda rule: rule != "choose.compare_amounts") is None
    assert unread.ruling == "unverified"


CORPUS = LocalCorpus.from_texts({
    "oak.txt": "Quercus is a genus of about 500 species of trees and shrubs.",
    "beech.txt": "Fagus is a genus of ten species of deciduous trees in Europe.",
})


def test_a_count_comparison_answer_is_corrected_with_no_choice_call():
    question = "Which genus has more species, Fagus or Quercus?"
    fixed, engine = short(question, "Fagus has more species.", pick("Fagus"),
                          retriever=CORPUS)
    assert fixed.answer == "Quercus has more species."
    assert fixed.trace.ruled("choose.compare_amounts", "f0.0") and not engine.of("ChooseValue")
    # an answer naming both options has them swapped, the rest of it kept
    both, _ = short(question, "Fagus has more species than Quercus.", pick("Fagus"),
                    retriever=CORPUS)
    assert both.answer == "Quercus has more species than Fagus."
    kept, _ = short(question, "Quercus", pick("Fagus"), retriever=CORPUS)
    assert kept.answer == "Quercus" and kept.trace.ruled("choose.compare_amounts")
    off, _ = short(question, "Fagus", pick("Quercus"), retriever=CORPUS,
                   rules={"choose.compare_amounts": False})
    assert off.answer == "Fagus" and not off.trace.ruled("choose.compare_amounts")


def test_an_answer_that_gives_no_option_is_told_from_one_that_gives_one():
    # HaluEval multi-turn tuning drafts: "It is unclear which was released second.", "Vincent
    # Walker and David Usher are the same age."
    question = "Who was born first, Odysseas Elytis or Cornel West?"
    assert answers_no_option(question, "It is unclear who was born first.")
    assert answers_no_option(question, "Cornel West and Odysseas Elytis are the same age.")
    assert not answers_no_option(question, "Cornel West was born first.")
    assert not answers_no_option(question, "Cornel West is younger than Elytis.")
    assert not answers_no_option(question, "Elytis")  # an option's last word names it
    assert not answers_no_option("Which genus has more species, Fir or Chelone?", "Firs")
    # two options ending on one word: "Center" alone names neither
    hospitals = ("Is Children's National Medical Center or MedStar Washington Hospital Center "
                 "the largest private hospital in Washington, D.C.?")
    assert not answers_no_option(hospitals, "MedStar Washington Hospital Center")
    assert answers_no_option(hospitals, "The Center has top rank.")
    assert not answers_no_option("Who wrote Ulysses?", "Nobody knows.")  # no options


def test_an_answer_giving_no_option_becomes_the_option_the_dates_decide():
    question = "Which was released second, Charley and the Angel or Planes?"
    films = LocalCorpus.from_texts({
        "charley.txt": "Charley and the Angel is a 1973 Disney family comedy film.",
        "planes.txt": "Planes is a 2013 American computer-animated sports comedy film.",
    })
    draft = "It is unclear which was released second."
    fixed, engine = short(question, draft, pick("Planes"), retriever=films)
    assert fixed.answer == "Planes"
    assert fixed.trace.ruled("choose.no_option") and fixed.trace.ruled("choose.compare")
    assert not engine.of("ChooseValue")  # the dates decided it, not the model
    off, _ = short(question, draft, pick("Planes"), retriever=films,
                   rules={"choose.no_option": False})
    assert off.answer == draft and not off.trace.ruled("choose.no_option")
    # an answer naming one option is decided as before, with no such ruling
    named, _ = short(question, "Charley and the Angel", pick("Planes"), retriever=films)
    assert named.answer == "Planes" and not named.trace.ruled("choose.no_option")
    # a part of a longer answer that names no option is no answer of its own: "Planes. It
    # came out in 2013." keeps its second part, never "Planes. Planes"
    parts, _ = short(question, "Planes. It came out in 2013.", pick("Planes"),
                     retriever=films)
    assert parts.answer == "Planes. It came out in 2013."
    assert not parts.trace.ruled("choose.no_option")
    # with the rule off too: its year is no option, and was once swapped for one ("It came
    # out in Planes.")
    off_parts, _ = short(question, "Planes. It came out in 2013.", pick("Planes"),
                         retriever=films, rules={"choose.no_option": False})
    assert off_parts.answer == "Planes. It came out in 2013."


def test_a_statements_option_is_the_one_whose_own_passage_states_more_of_the_question():
    # HaluEval extra tuning items 27 and 45: each option's Wikipedia opening is its passage
    evidence = [EvidenceSentence(text=t, passage=p, offset=0) for t, p in (
        ("Adam Clayton Powell is a 1989 American documentary film.", 0),
        ("It was nominated for an Academy Award.", 0),
        ("The Saimaa Gesture is a 1981 Finnish documentary film.", 1),
        ("It follows three rock groups on a lake tour.", 1))]
    question = "Which documentary is about Finnish rock groups, Adam Clayton Powell or The " \
               "Saimaa Gesture?"
    assert decided(stated_option, question, evidence) == "The Saimaa Gesture"
    # no lead, or a relation between the two ("closer"), or a date comparison: no decision
    assert decided(stated_option, "Which documentary is a film, Adam Clayton Powell or The "
                   "Saimaa Gesture?", evidence) is None
    assert decided(stated_option, "Which documentary is closer to Finnish rock groups, Adam "
                   "Clayton Powell or The Saimaa Gesture?", evidence) is None
    assert decided(stated_option, "Which documentary about rock groups came first, Adam "
                   "Clayton Powell or The Saimaa Gesture?", evidence) is None
    # a sentence that names both options says nothing of either
    both = said("The Saimaa Gesture and Adam Clayton Powell are Finnish rock films.")
    assert decided(stated_option, question, both) is None
    # one passage holding both openings (a knowledge source packs paragraphs): a sentence
    # that names neither belongs to the option before it, up to one that names something
    packed = said("Adam Clayton Powell is a 1989 American documentary film.",
                  "The Saimaa Gesture is a 1981 Finnish film.",
                  "It is a documentary of three rock groups on tour.",
                  "Lake Saimaa is a lake in Finland, home to rock groups.")
    assert decided(stated_option, question, packed) == "The Saimaa Gesture"
    assert decided(stated_option, question, packed[:2] + packed[3:]) is None


def test_a_negated_comparison_answer_is_kept_whichever_option_the_evidence_takes():
    question = "Which genus has more species, Fagus or Quercus?"
    evidence = said("Quercus is a genus of about 500 species.", "Fagus has ten species.")
    for draft in ("Fagus does not have more species.", "Quercus does not have more species."):
        slot = Slot(kind="name", text=draft.split()[0], start=0)
        assert compare_slot(question, slot, evidence, sentence=draft) == (
            "choose.compare_amounts", "Quercus")
        assert slot.ruling == "unverified" and slot.chosen is None and "negates" in slot.note


def test_an_answer_worded_the_other_way_round_names_the_other_option():
    # HaluEval extra tuning: "Kim Clijsters is two years younger." for "who is older?" says
    # Mary Pierce is; swapping its name had made it wrong
    question = "Between two tennis players Kim Clijsters and Mary Pierce, who is older?"
    evidence = said("Kim Clijsters (born 8 June 1983) is a Belgian player.",
                    "Mary Pierce (born 15 January 1975) is a French player.")
    draft = "Kim Clijsters is two years younger."
    kept = Slot(kind="name", text="Kim Clijsters", start=0)
    assert compare_slot(question, kept, evidence, sentence=draft) == ("choose.compare",
                                                                      "Mary Pierce")
    assert kept.ruling == "supported" and "other way round" in kept.note
    wrong = Slot(kind="name", text="Mary Pierce", start=0)
    compare_slot(question, wrong, evidence, sentence="Mary Pierce is two years younger.")
    assert wrong.ruling == "contradicted" and wrong.chosen == "Kim Clijsters"


def test_a_slot_that_is_no_option_stands_for_the_option_the_answer_names():
    # HaluEval extra tuning item 165 (once its glued knowledge was cut): the right answer
    # 'H. Bruce "Lucky" Humberstone' had its quoted nickname as its slot, and the decided
    # option was swapped into it ('H. Bruce "H. Bruce Humberstone" Humberstone')
    question = "Who was born first Neil LaBute or H. Bruce Humberstone?"
    evidence = said("Neil N. LaBute (born March 19, 1963) is an American film director.",
                    'H. Bruce "Lucky" Humberstone (November 18, 1901 - 1984) was an actor.')
    right = Slot(kind="name", text="Lucky", start=10)
    assert compare_slot(question, right, evidence, sentence='H. Bruce "Lucky" Humberstone') == (
        "choose.compare", "H. Bruce Humberstone")
    assert right.ruling == "supported" and right.chosen is None
    wrong = Slot(kind="name", text="Neil N. LaBute", start=0)
    compare_slot(question, wrong, evidence, sentence="Neil N. LaBute was born first.")
    assert wrong.ruling == "contradicted" and wrong.chosen == "H. Bruce Humberstone"
