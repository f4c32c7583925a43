"""Check nodes that choose from the evidence (`verdicts="choose"`): slots, candidates, the
choice in two orders, the decision, and the swap as the only edit."""

import re

import dspy
import pytest
from scripted import scripted_lm
from test_serc import handlers

from serc_dspy import SERC, LocalCorpus, StrictJSONAdapter
from serc_dspy.core.trace import Passage, Slot
from serc_dspy.programs.serc.choice import SlotChooser, option_orders
from serc_dspy.rules.slots import (
    about_subject,
    collect_candidates,
    find_slots,
    normal_form,
    spans,
)
from serc_dspy.rules.swaps import only_span_changed, swap, unrepeated

QUESTION = "Tell me a bio of Marie Curie."
DRAFT = ("Marie Curie was born on 7 November 1867 in Kraków. She won the Nobel Prize in "
         "Chemistry in 1903. She died in 1944 of aplastic anaemia.")
FACTS = {
    "Marie Curie was born on 7 November 1867 in Kraków.": [
        "Marie Curie was born on 7 November 1867 in Kraków."],
    "She won the Nobel Prize in Chemistry in 1903.": [
        "Marie Curie won the Nobel Prize in Chemistry in 1903."],
    "She died in 1944 of aplastic anaemia.": ["Marie Curie died in 1944 of aplastic anaemia."],
}
CORPUS = LocalCorpus.from_texts({
    "early.txt": "Maria Skłodowska, later Marie Curie, was born in Warsaw on 7 November 1867. "
                 "She moved to Paris in 1891.",
    "awards.txt": "Marie Curie won the Nobel Prize in Physics in 1903 with Pierre Curie and "
                  "Henri Becquerel. In 1911 she won the Nobel Prize in Chemistry.",
    "death.txt": "Marie Curie died in 1934 of aplastic anaemia at Passy.",
})
READS = {  # what a careful reader of CORPUS puts in each blank
    "Marie Curie was born on ___ in Kraków.": "7 November 1867",
    "Marie Curie was born on 7 November 1867 in ___.": "Warsaw",
    "Marie Curie won the Nobel Prize in Chemistry in ___.": "1903",
    "Marie Curie won the ___ in Chemistry in 1903.": "Nobel Prize",
    "Marie Curie won the Nobel Prize in ___ in 1903.": "Physics",
    "Marie Curie died in ___ of aplastic anaemia.": "1934",
    "Marie Curie died in ___.": "1934",
}


def _options(text: str) -> list[tuple[str, str]]:
    return [(letter, value.split(" (the evidence:")[0])
            for letter, value in re.findall(r"^([A-F])\) (.*)$", text, re.M)]


def reads_evidence(inputs):
    """A reader that fills each blank as the evidence does, else says "not stated"."""
    options = _options(inputs["options"])
    for letter, value in options:
        if value == READS.get(inputs["claim"]):
            return {"choice": letter}
    return {"choice": next(letter for letter, value in options if value == "not stated")}


def decode(draft, facts, corpus=CORPUS, choose=reads_evidence, sentence=None, **options):
    """A scripted run of `verdicts="choose"`: each draft sentence's facts from `facts`."""
    extra = {"AtomicFacts": lambda i: {"facts": facts.get(i["sentence"], [i["sentence"]])},
             "ChooseValue": choose}
    if sentence is not None:
        extra["ChooseSentence"] = sentence
    lm, engine = scripted_lm(handlers(**extra))
    program = SERC(retriever=corpus, top_k=3, verdicts="choose", evidence="passages",
                   queries="facts", reconstruct="minimal", firewall=False, **options)
    with dspy.context(lm=lm, adapter=StrictJSONAdapter()):
        result = program(question=QUESTION, draft=draft)
    return result, engine


def _decode(choose=reads_evidence, sentence=None, **options):
    return decode(DRAFT, FACTS, choose=choose, sentence=sentence, **options)


def test_three_planted_errors_are_swapped_back_in_place_with_no_rewrite():
    result, engine = _decode()
    assert result.answer == ("Marie Curie was born on 7 November 1867 in Warsaw. She won the "
                             "Nobel Prize in Physics in 1903. She died in 1934 of aplastic "
                             "anaemia.")
    trace = result.trace
    swaps = [(r.before, r.after) for r in trace.rulings if r.rule == "choose.swap"]
    assert sorted(swaps) == [("1944", "1934"), ("Chemistry", "Physics"), ("Kraków", "Warsaw")]
    # the swap is the edit: no corrector, rewriter or polish call
    for name in ("CorrectFacts", "RewriteSentence", "PolishAnswer", "QuoteAndJudge"):
        assert engine.of(name) == []
    # every choice was asked twice, the option orders reversed
    asked = engine.of("ChooseValue")
    assert len(asked) % 2 == 0 and asked
    claims = [c["inputs"]["claim"] for c in asked]
    assert "Marie Curie was born on 7 November 1867 in ___." in claims
    # the trace holds each slot's candidates, where they were found, and both choices
    born = trace.fact("f0.0")
    place = next(s for s in born.slots if s.text == "Kraków")
    warsaw = next(c for c in place.candidates if c.value == "Warsaw")
    passage = trace.checks[0].passages[warsaw.passage].text
    assert passage[warsaw.offset:warsaw.offset + len("Warsaw")] == "Warsaw"
    assert place.choices == ["Warsaw", "Warsaw"] and place.ruling == "contradicted"
    assert born.status == "corrected" and trace.status == "decoded"


def test_a_position_biased_reader_changes_nothing_and_removes_nothing():
    def always_first(inputs):
        return {"choice": "A"}

    result, _ = _decode(choose=always_first)
    assert result.answer == DRAFT
    trace = result.trace
    assert not [f for f in trace.facts if f.status in ("pruned", "corrected")]
    disagree = [s for f in trace.facts for s in f.slots if "disagree" in s.note]
    assert disagree  # the two orders put a different value first
    assert trace.ruled("choose.unverified", "f0.0")


def test_not_stated_in_both_orders_keeps_the_fact_unverified():
    def not_stated(inputs):
        return {"choice": next(letter for letter, value in _options(inputs["options"])
                               if value == "not stated")}

    result, _ = _decode(choose=not_stated)
    assert result.answer == DRAFT
    assert all(f.status in ("unverified", "kept") for f in result.trace.facts)


def test_a_dead_choice_model_fails_the_run_instead_of_passing_the_draft_as_checked():
    def dead(inputs):
        raise RuntimeError("engine down")

    result, _ = _decode(choose=dead)
    assert result.answer == DRAFT
    assert result.trace.status == "failed"


def test_a_fact_without_slots_gets_a_sentence_choice_held_to_a_second_signal():
    global FACTS
    saved = dict(FACTS)
    FACTS["She died in 1944 of aplastic anaemia."] = ["Marie Curie died of aplastic anaemia."]
    try:
        def opposite(inputs):
            return {"sentence": 1, "stance": "opposite"}

        result, engine = _decode(sentence=opposite)
        fact = result.trace.fact("f2.0")
        assert fact.slots[0].kind == "sentence" and fact.slots[0].choices == ["1: opposite"]
        # one "opposite" is one signal: the second verdict (SUPPORTED) leaves it disputed
        assert fact.status == "disputed" and engine.of("JudgeFact")
        assert "aplastic anaemia" in result.answer

        result, _ = _decode(sentence=lambda i: {"sentence": 1, "stance": "yes"})
        assert result.trace.fact("f2.0").verdict == "SUPPORTED"
    finally:
        FACTS.clear()
        FACTS.update(saved)


def test_a_swap_propagates_to_a_fact_of_its_sentence_that_states_the_same_value():
    global FACTS
    saved = dict(FACTS)
    FACTS["Marie Curie was born on 7 November 1867 in Kraków."] = [
        "Marie Curie was born on 7 November 1867 in Kraków.", "Marie Curie is from Kraków."]
    try:
        result, _ = _decode()
        trace = result.trace
        assert trace.fact("f0.1").correction == "Marie Curie is from Warsaw."
        # "is from ___" shares no word with a passage: no choice of its own, so the swap of
        # its sentence's root fact carries over to it, and the sentence gets one edit
        assert trace.ruled("choose.propagate", "f0.1") and trace.ruled("choose.swap", "f0.0")
        assert result.answer.startswith("Marie Curie was born on 7 November 1867 in Warsaw.")
    finally:
        FACTS.clear()
        FACTS.update(saved)


def test_the_choice_alone_as_a_module():
    lm, engine = scripted_lm(handlers(ChooseValue=reads_evidence))
    with dspy.context(lm=lm, adapter=StrictJSONAdapter()):
        result = SlotChooser()(subject="Marie Curie", claim="Marie Curie died in 1944.",
                               passages=["Marie Curie died in 1934 at Passy."])
    assert result.verdict == "CONTRADICTED"
    assert result.correction == "Marie Curie died in 1934."


def test_a_claim_without_a_subject_reads_every_sentence_when_its_first_word_names_nothing():
    """A claim's capitalised first word stands in for its subject; "Compressed" is no name,
    and as one it hid the sentence that states the claim's 21%."""
    lm, _ = scripted_lm(handlers())
    passages = ["Divers breathe air, which holds 21% oxygen."]
    with dspy.context(lm=lm, adapter=StrictJSONAdapter()):
        result = SlotChooser()(subject="", claim="Compressed air holds 21% oxygen.",
                               passages=passages)
        named = SlotChooser()(subject="", claim="Marie Curie died in 1934.",
                              passages=["Two divers died in 1911.", "Pierre Curie died in 1906."])
    assert result.verdict == "SUPPORTED" and result.slots[0].text == "21%"
    # a stand-in the passages do name still keeps the evidence to its sentences
    year = next(s for s in named.slots if s.kind == "year")
    assert [c.value for c in year.candidates] == ["1934", "1906", "not stated"]
    assert result.trace.ruled("choose.uncontested")


# -- the deterministic half -------------------------------------------------------------------
def test_slots_are_the_facts_details_that_stand_once_in_the_sentence():
    fact = "Marie Curie was born on 7 November 1867 in Kraków"
    kinds = {s.kind: s.text for s in spans(fact, "Marie Curie")}
    assert kinds == {"date": "7 November 1867", "name": "Kraków"}
    assert [s.kind for s in spans("He was an American composer with three sons.")] == \
        ["name", "role", "number"]
    # a detail the sentence does not carry cannot be swapped there: it is no slot
    assert [s.text for s in find_slots(fact, "She was born in Kraków.", "Marie Curie")] == \
        ["Kraków"]


def test_a_name_is_offered_without_the_title_it_opens_with_and_is_not_cut_at_it():
    # multi-turn tuning draft 268: "by then-First Lady Hillary Clinton" offered "Lady Hillary
    # Clinton", and the swap printed "published by Lady Hillary Clinton"
    assert [(s.kind, s.text) for s in spans("The book by then-First Lady Hillary Clinton.")] \
        == [("name", "Hillary Clinton")]
    assert [s.text for s in spans("Sir Walter Scott met Lady Gaga.")] == ["Walter Scott",
                                                                          "Lady Gaga"]
    # a title's full stop does not end the name (multi-turn tuning draft 276: the slot was "Mr")
    assert [s.text for s in spans("Mr. Probz was born Albert Johnson.")] == ["Mr. Probz",
                                                                             "Albert Johnson"]
    assert [s.text for s in spans("Dr. Martin Luther King spoke.")] == ["Martin Luther King"]


def test_a_role_is_its_head_noun_and_a_title_or_list_marker_is_no_number():
    # Factcheck-Bench tuning answers: "prominent" was swapped for "dazzling", "Square One" for
    # "Square 24", and a list's "1." for "three"
    def texts(text):
        return [(s.kind, s.text) for s in spans(text)]

    assert ("role", "figure") in texts("He was a prominent figure in music.")
    assert ("role", "engineer") in texts("She is a software engineer at a bank.")
    assert ("role", "painter") in texts("He was a French painter and sculptor.")
    # an "-ly" word modifies (multi-turn tuning draft 146: "founder" swapped for "monthly")
    assert not any(k == "role" for k, _ in texts("ACS Nano is a monthly, peer-reviewed journal."))
    assert ("role", "family") in texts("It is a large family of plants.")
    assert not any(k == "number" for k, _ in texts("The show Square One aired."))
    assert not any(k == "number" for k, _ in texts("Cities:\n1. Paris is large."))
    assert not any(k == "number" for k, _ in texts("Here is a list of their albums: 1."))
    assert not any(k == "number" for k, _ in texts("It is one of the best restaurants."))
    assert ("number", "three") in texts("He had three sons.")
    assert ("number", "38") in texts("It has 38 chromosomes.")
    # a possessive names its owner: "Jordan's" is a slot for Puerto Rico ("Puerto Rico's")
    assert ("name", "Jordan") in texts("He was Jordan's 15th Secretary of State.")
    assert ("name", "Arthur's Magazine") in texts("Arthur's Magazine was first.")


def test_normal_forms_make_one_value_of_its_spellings():
    assert normal_form("date", "7 November 1867") == normal_form("date", "November 7, 1867")
    assert normal_form("number", "three") == normal_form("number", "3")
    assert normal_form("number", "1,200") == normal_form("number", "1200")
    assert normal_form("name", "Kraków") == normal_form("name", "krakow")
    assert normal_form("year", "7 November 1867") == "1867"


def test_candidates_come_from_sentences_about_the_facts_event_once_each():
    passages = [Passage(text="Curie died on 4 July 1934 in Passy. She was born in 1867. "
                             "Curie died in 1934, as her papers record.")]
    evidence = about_subject(passages, "Marie Curie")
    slot = find_slots("Marie Curie died in 1944.", "Marie Curie died in 1944.", "Marie Curie")[0]
    values = [c.value for c in collect_candidates(slot, "Marie Curie died in 1944.", evidence,
                                                  "Marie Curie")]
    assert values == ["1944", "1934", "not stated"]  # the date's year once; not the birth year
    # a passage that never names the subject offers nothing
    assert about_subject([Passage(text="Someone died in 1934.")], "Marie Curie") == []
    orders = option_orders(collect_candidates(slot, "Marie Curie died in 1944.", evidence,
                                              "Marie Curie"))
    assert [c.value for c in orders[1]] == ["1934", "1944", "not stated"]


def test_a_swap_changes_its_span_and_the_article_before_it_and_nothing_else():
    assert swap("He was an actor in Rome.", "actor", "painter") == "He was a painter in Rome."
    assert swap("born in Kraków, in Kraków", "Kraków", "Warsaw") is None  # not one place
    assert only_span_changed("He was an actor.", "He was a painter.", "actor", "painter")
    assert not only_span_changed("He was an actor in 1900.", "He was a painter in 1901.",
                                 "actor", "painter")


def test_a_swap_to_a_value_with_its_own_article_keeps_one_article():
    # HaluEval tuning items 192 and 21 printed "The The Soldier's Tale", "The the Chien-gris"
    for before, old, new, after in (
            ("The Golden Goose", "Golden Goose", "The Soldier's Tale", "The Soldier's Tale"),
            ("The Chinese dog is extinct.", "Chinese dog", "the Chien-gris",
             "The Chien-gris is extinct."),
            ("He saw an ox.", "ox", "The Beatles", "He saw The Beatles."),
            ("It is in Paris.", "Paris", "The Hague", "It is in The Hague.")):
        assert swap(before, old, new) == after
        assert only_span_changed(before, after, old, new)
    assert not only_span_changed("He was the actor.", "He was painter.", "actor", "painter")
    assert not only_span_changed("He saw an ox.", "He saw painter.", "ox", "painter")
    assert not only_span_changed("The Golden Goose", "A Soldier's Tale", "Golden Goose",
                                 "The Soldier's Tale")


def test_a_swap_to_a_value_opening_on_the_words_before_the_span_writes_them_once():
    # HaluEval multi-turn tuning draft 15 printed "The historic U.S. Highway U.S. Highway 60."
    for before, old, new, after in (
            ("The historic U.S. Highway 70.", "70", "U.S. Highway 60", "The historic U.S. "
             "Highway 60."),
            ("It is in New York.", "York", "New Haven", "It is in New Haven."),
            ("He was born in New York.", "New York", "New Jersey", "He was born in New Jersey.")):
        assert swap(before, old, new) == after
        assert only_span_changed(before, after, old, new)
    assert unrepeated("The historic U.S. Highway ", "U.S. Highway") == "U.S. Highway"  # all
    assert not only_span_changed("The historic U.S. Highway 70.", "The historic 60.", "70",
                                 "U.S. Highway 60")


# -- short answers ------------------------------------------------------------------------------
SHORT_CORPUS = LocalCorpus.from_texts({
    "a.txt": "Arthur's Magazine (1844-1846) was an American literary periodical published in "
             "Philadelphia. First for Women is a woman's magazine first published in 1989.",
    "b.txt": "Maria Skłodowska, later Marie Curie, was born in Warsaw on 7 November 1867.",
    "c.txt": "Beowulf is a 2007 epic fantasy film directed by Robert Zemeckis and written by "
             "Neil Gaiman and Roger Avary.",
})


def short(question, draft, choose, retriever=SHORT_CORPUS, **options):
    lm, engine = scripted_lm(handlers(ChooseValue=choose))
    program = SERC(retriever=retriever, top_k=3, verdicts="choose", evidence="passages",
                   queries="facts", reconstruct="minimal", **options)
    with dspy.context(lm=lm, adapter=StrictJSONAdapter()):
        return program(question=question, draft=draft), engine


def pick(value):
    def choose(inputs):
        for letter, shown_value in _options(inputs["options"]):
            if shown_value == value:
                return {"choice": letter}
        return {"choice": next(letter for letter, v in _options(inputs["options"])
                               if v == "not stated")}
    return choose


def test_a_wrong_short_answer_becomes_the_evidence_value_in_the_drafts_own_form():
    question = "Which magazine was started first Arthur's Magazine or First for Women?"
    # (a comparison's dates decide it by rule: `choose.compare`, off here to show the choice)
    result, engine = short(question, "First for Women was started first.",
                           pick("Arthur's Magazine"), rules={"choose.compare": False})
    assert result.answer == "Arthur's Magazine was started first."
    asked = engine.of("ChooseValue")
    assert len(asked) == 2 and "Answer: ___ was started first." in asked[0]["inputs"]["claim"]
    assert {v for _, v in _options(asked[0]["inputs"]["options"])} == {
        "First for Women", "Arthur's Magazine", "not stated"}
    # a right short answer chosen in both orders is kept, word for word
    kept, _ = short(question, "Arthur's Magazine", pick("Arthur's Magazine"),
                    rules={"choose.compare": False})
    assert kept.answer == "Arthur's Magazine" and kept.trace.fact("f0.0").verdict == \
        "SUPPORTED"


def test_every_part_of_a_multi_part_short_draft_is_its_own_slot_and_every_fix_is_printed():
    question = "Where and when was Marie Curie born?"
    truth = {"Where and when was Marie Curie born? Answer: ___.": None}

    def reads(inputs):
        value = "Warsaw" if "Warsaw" in inputs["options"] and "Kraków" in inputs["options"] \
            else "1867"
        truth[inputs["claim"]] = value
        return pick(value)(inputs)

    result, _ = short(question, "Kraków. Born 1868.", reads)
    assert result.answer == "Warsaw. Born 1867."
    corrected = [f for f in result.trace.facts if f.status == "corrected"]
    assert len(corrected) == 2  # the summary's count is what the answer carries


def test_a_yes_no_short_answer_has_nothing_to_choose_and_is_kept():
    result, engine = short("Was Marie Curie born in Warsaw?", "No.", pick("Warsaw"))
    assert result.answer == "No." and not engine.of("ChooseValue")
    assert result.trace.ruled("choose.unverified", "f0.0")


def test_no_rival_is_the_subject_a_value_of_the_fact_itself_or_another_wording():
    # the subject by a longer name is no slot (a tuning-split bio swapped it for a birthplace)
    assert [s.text for s in spans("Félix-Alexandre Guilmant was born in Boulogne-sur-Mer.",
                                  "Alexandre Guilmant")] == ["Boulogne-sur-Mer"]
    # lower-case words with accents are no names ("différents" gave "érents")
    assert [s.text for s in spans("Il a écrit des pièces dans différents styles.")] == ["Il"]
    evidence = about_subject([Passage(text="La Trinité was painted by Guilmant from 1871 "
                                           "until 1901. Wong was born to Chinese Americans.")],
                             "Guilmant")
    fact = "La Trinité was painted from 1871 until 1901."
    year = next(s for s in find_slots(fact, fact) if s.text == "1901")
    assert [c.value for c in collect_candidates(year, fact, evidence, "Guilmant")] == \
        ["1901", "not stated"]  # 1871 is the fact's own other year
    fact = "Wong was born to Taishanese Chinese American parents."
    name = next(s for s in find_slots(fact, fact, "Wong") if s.kind == "name")
    assert [c.value for c in collect_candidates(name, fact, about_subject(
        [Passage(text="Wong was born to Chinese Americans in 1905.")], "Wong"), "Wong",
        frame="to")] == ["Taishanese Chinese American", "not stated"]


def test_a_names_frame_passes_over_the_article():
    from serc_dspy.rules.frames import preceding_word

    text = "He sat in the House of Representatives of the Philippines."
    assert preceding_word(text, text.index("Philippines")) == "of"
    assert preceding_word("Mass at the Iba Cathedral", 12) == "at"
    text = "She is a Swedish and American golfer."
    assert preceding_word(text, text.index("American")) == "swedish"


def test_a_correction_carries_to_the_fact_that_depends_on_it_the_papers_table_6():
    """A detail no slot can hold ("cricket", a common noun) goes through the sentence choice:
    "the opposite", held to a second verdict, then the corrector, which carries the fix to the
    dependent fact of the sentence ("fast bowling" belongs to cricket, not to rugby)."""
    draft = "Gareth Thomas played cricket, and he was known for his fast bowling."
    facts = {draft: ["Gareth Thomas played cricket.",
                     "Gareth Thomas was known for his fast bowling."]}
    corpus = LocalCorpus.from_texts({"t.txt": "Gareth Thomas played rugby union for Wales. "
                                              "Thomas was known for his ball-carrying."})

    def sentence(inputs):
        if "cricket" in inputs["claim"]:
            return {"sentence": 1, "stance": "opposite"}
        return {"sentence": 0, "stance": "not stated"}

    def correct(inputs):
        fixes = [{"original": "Gareth Thomas played cricket.",
                  "fixed": "Gareth Thomas played rugby."}]
        if "Gareth Thomas was known for his fast bowling." in inputs["related_facts"]:
            fixes.append({"original": "Gareth Thomas was known for his fast bowling.",
                          "fixed": "Gareth Thomas was known for his ball-carrying."})
        return {"corrections": fixes}

    lm, engine = scripted_lm(handlers(
        AtomicFacts=lambda i: {"facts": facts.get(i["sentence"], [i["sentence"]])},
        ChooseValue=reads_evidence, ChooseSentence=sentence, CorrectFacts=correct,
        JudgeFact=lambda i: {"verdict": "CONTRADICTED"}))
    program = SERC(retriever=corpus, top_k=2, verdicts="choose", evidence="passages",
                   queries="facts", reconstruct="minimal", firewall=False)
    with dspy.context(lm=lm, adapter=StrictJSONAdapter()):
        result = program(question="Tell me a bio of Gareth Thomas.", draft=draft)
    trace = result.trace
    assert result.answer == "Gareth Thomas played rugby, and he was known for his " \
                            "ball-carrying."
    dependent = next(c for c in trace.corrections if c.propagated)
    assert dependent.fixed.endswith("ball-carrying.") and trace.fact("f0.1").status == \
        "corrected"
    assert trace.fact("f0.0").votes == {"sentence": "CONTRADICTED", "second": "CONTRADICTED"}


def test_a_short_answer_the_evidence_states_is_never_replaced_by_a_choice():
    # the model misreads: it picks another name, but the evidence names the caller's answer
    result, _ = short("Where was Marie Curie born?", "Warsaw", pick("Maria Skłodowska"))
    assert result.answer == "Warsaw"
    assert result.trace.ruled("choose.own_stated", "f0.0")
    # a caller's value the evidence never states can still be replaced
    fixed, _ = short("Where was Marie Curie born?", "Kraków", pick("Warsaw"))
    assert fixed.answer == "Warsaw" and not fixed.trace.ruled("choose.own_stated")


@pytest.mark.parametrize("question, draft, slot", [
    # the value the question names is no answer; the new one is
    ("What author was associated with Dysteleology?", "Dysteleology is associated with Orwell.",
     "Orwell"),
    # a quoted title comes after an unquoted name
    ("What singer sang a duet with her ex-husband?", 'The duet "Golden Ring" was sung by '
     "Loretta Lynn.", "Loretta Lynn"),
    # "..., released in what year?" asks for a date
    ('The single "New Rules" by Dua Lipa was released in what year?',
     '"New Rules" was released in 2018.', "2018"),
    # a comparison whose first option is followed by an apposition
    ("Which band was founded first, Hole, the rock band that Courtney Love fronted, or The "
     "Wolfhounds?", "Hole was the first band founded.", "Hole"),
])
def test_a_short_answers_slot_is_the_value_that_answers_the_question(question, draft, slot):
    from serc_dspy.rules.answers import answer_slots
    from serc_dspy.rules.two_options import comparison_options

    assert [s.text for s in answer_slots(question, draft)] == [slot]
    if "Hole" in question:
        assert comparison_options(question) == ["Hole", "The Wolfhounds"]


def test_the_subjects_own_name_is_never_a_rival_for_another_of_its_names():
    fact = "Moses Anthony Davis was born in Kingston."
    evidence = about_subject([Passage(text="Beenie Man was born in Kingston as Moses "
                                           "Davis. Beenie Man grew up in Kingston.")],
                             "Beenie Man")
    name = next(s for s in find_slots(fact, fact, "Beenie Man") if s.text.startswith("Moses"))
    values = [c.value for c in collect_candidates(name, fact, evidence, "Beenie Man")]
    assert "Beenie Man" not in values


def test_a_day_and_month_without_a_year_is_a_date_slot():
    # HaluEval extra tuning item 280: "born on June 25." had its number 25 as its slot, and
    # the swap for "25 June 1961" wrote "born on June 25 June 1961."
    for text, value in (("Ricky Gervais was born on June 25.", "June 25"),
                        ("He was born on 25 June.", "25 June"),
                        ("He died on 3 May, aged 40.", "3 May")):
        assert [(s.kind, s.text) for s in spans(text) if s.kind == "date"] == [("date", value)]
    assert [s.text for s in spans("He was born on June 25, 1961.")] == ["June 25, 1961"]
    assert normal_form("date", "June 25") != normal_form("date", "25 June 1961")
    assert swap("Ricky Gervais was born on June 25.", "June 25", "25 June 1961") == \
        "Ricky Gervais was born on 25 June 1961."


def test_a_date_with_its_year_is_never_offered_a_day_and_month_alone():
    # the report bios at 8c3e0e8: once a day and month were dates, two true birth dates were
    # swapped for another event's "5 February" (two false alarms, counted)
    evidence = about_subject([Passage(text="Icardi was born on 19 February 1993 in Rosario. He "
                                           "scored on 5 February against Roma.")], "Icardi")
    dated = Slot(kind="date", text="19 February 1994", start=19)
    assert [c.value for c in collect_candidates(
        dated, "Icardi was born on 19 February 1994.", evidence, "Icardi")] == [
        "19 February 1994", "19 February 1993", "not stated"]
    # a day and month alone may take the evidence's full date
    evidence = about_subject([Passage(text="Gervais was born on 25 June 1961.")], "Gervais")
    bare = Slot(kind="date", text="June 25", start=20)
    assert [c.value for c in collect_candidates(
        bare, "Gervais was born on June 25.", evidence, "Gervais")] == [
        "June 25", "25 June 1961", "not stated"]
