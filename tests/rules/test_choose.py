"""`rules.slots`: the `choose.` rules of check nodes that choose from the evidence, each shown
firing and staying quiet (the scenarios are `tests/programs/test_choice.py`'s)."""

import math

import dspy
import rules_helpers  # noqa: F401 (puts tests/ and tests/programs/ on the path)
from scripted import scripted_lm
from test_choice import (
    CORPUS,
    DRAFT,
    FACTS,
    QUESTION,
    READS,
    _decode,
    _options,
    decode,
    pick,
    reads_evidence,
    short,
)
from test_serc import handlers

from serc_dspy import SERC, LocalCorpus, StrictJSONAdapter
from serc_dspy.core.trace import Candidate, Slot

FIRES = {"choose.supported", "choose.uncontested", "choose.swap", "choose.unverified",
         "choose.settle", "choose.propagate", "choose.own_stated", "choose.compare",
         "choose.same_frame", "choose.asked_frame", "choose.rejected",
         "choose.asked_type", "choose.same_unit", "choose.asked_place",
         "choose.asked_person", "choose.third_order", "choose.same_range",
         "choose.counted_noun", "choose.question_echo", "choose.range_order",
         "choose.name_stated", "choose.quoted_title", "choose.both",
         "choose.asked_noun", "choose.after_frame", "choose.pooled",
         "choose.off_type", "choose.asked_gender", "choose.compare_amounts",
         "choose.date_year", "choose.frame_first", "choose.year_bound",
         "choose.place_for_place", "choose.asked_rank", "choose.either",
         "choose.stated_option", "choose.same_value", "choose.read_answer", "choose.read_vote",
         "choose.read_rival", "choose.question_named", "choose.draft_named", "choose.named_answer",
         "choose.shared_value", "choose.both_not", "choose.both_claims", "draft.yes_no_sentence",
         "choose.asked_nationality", "choose.no_option", "choose.option_claims",
         "choose.rival_claims", "choose.own_context"}
QUIET = set(FIRES)

RIGHT = ("Marie Curie won the Nobel Prize in Physics in 1903. She died in 1934 of aplastic "
         "anaemia.")
RIGHT_FACTS = {"Marie Curie won the Nobel Prize in Physics in 1903.":
               ["Marie Curie won the Nobel Prize in Physics in 1903."],
               "She died in 1934 of aplastic anaemia.":
               ["Marie Curie died in 1934 of aplastic anaemia."]}
READS.update({"Marie Curie won the Nobel Prize in Physics in ___.": "1903"})


def test_the_drafts_own_value_is_shown_with_its_words_where_the_evidence_states_it():
    shown = []

    def record(inputs):
        shown.append(inputs["options"])
        return reads_evidence(inputs)

    result, _ = decode(RIGHT, RIGHT_FACTS, choose=record)
    physics = next(o for o in shown if "Chemistry" in o)
    # the own value, stated: with its words, as the rival is; "not stated" stays bare
    assert 'Physics (the evidence: "...Nobel Prize in Physics")' in physics
    assert 'Chemistry (the evidence: "...' in physics and "not stated (" not in physics
    assert result.answer == RIGHT and result.trace.ruled("choose.supported", "f0.0")
    own = next(c for f in result.trace.facts for s in f.slots for c in s.candidates
               if c.origin == "fact" and c.value == "Physics")
    assert own.context == "Nobel Prize in Physics"

    shown.clear()
    decode(RIGHT, RIGHT_FACTS, choose=record, rules={"choose.own_context": False})
    assert any(o.startswith("A) Physics\n") or "\nB) Physics\n" in o for o in shown)
    assert not any("Physics (the evidence" in o for o in shown)
    # an own value the evidence does not state is shown bare (the planted Kraków), and so is
    # one it states only for another event: Chemistry, beside 1911, for "Chemistry in 1903"
    shown.clear()
    result, _ = _decode(choose=record)
    assert any("A) Kraków\n" in o for o in shown)
    assert any("A) Chemistry\n" in o for o in shown)
    assert not any("A) Chemistry (the evidence" in o for o in shown)
    assert "in Physics in 1903" in result.answer and "Warsaw" in result.answer
    # a caller's short answer is shown bare, stated or not: there the words kept wrong answers
    shown.clear()
    question = "Which magazine was started first Arthur's Magazine or First for Women?"
    short(question, "First for Women was started first.",
          lambda inputs: shown.append(inputs["options"]) or pick("Arthur's Magazine")(inputs),
          rules={"choose.compare": False})
    assert shown and all(o.startswith("A) First for Women\n") or
                         "B) First for Women\n" in o for o in shown)


def test_a_right_draft_is_supported_by_choice_or_uncontested_and_left_alone():
    result, engine = decode(RIGHT, RIGHT_FACTS)
    trace = result.trace
    assert result.answer == RIGHT
    assert trace.ruled("choose.supported", "f0.0")     # 1911 and Chemistry were offered
    assert trace.ruled("choose.uncontested", "f1.0")   # the passage offers no other year
    assert not trace.ruled("choose.swap") and not trace.ruled("choose.unverified")
    # its name slot had no rival: supported without a choice, which the rule says too
    assert trace.ruled("choose.uncontested", "f0.0")
    # switched off, an uncontested slot is not supported without a choice: unverified
    off, _ = decode(RIGHT, RIGHT_FACTS, rules={"choose.uncontested": False})
    assert not off.trace.ruled("choose.uncontested") and off.trace.ruled("choose.unverified",
                                                                         "f1.0")
    assert off.answer == RIGHT


def test_a_value_chosen_twice_is_swapped_in_and_a_disagreement_is_not():
    result, _ = _decode()
    assert result.trace.ruled("choose.swap", "f2.0")
    biased, _ = _decode(choose=lambda i: {"choice": "A"})
    assert not biased.trace.ruled("choose.swap") and biased.trace.ruled("choose.unverified")
    off, _ = _decode(rules={"choose.swap": False})
    assert not off.trace.ruled("choose.swap") and off.answer == DRAFT


def test_two_contradicted_slots_are_settled_by_the_rest_of_the_sentence():
    corpus = LocalCorpus.from_texts({"a.txt": "Marie Curie won the Nobel Prize in Physics in "
                                              "1903. She shared it with Pierre Curie.",
                                     "b.txt": "In 1911 Marie Curie won the Nobel Prize in "
                                              "Chemistry alone."})
    draft = "She won the Nobel Prize in Chemistry in 1903 with Pierre Curie."
    facts = {draft: ["Marie Curie won the Nobel Prize in Chemistry in 1903."]}

    def both_wrong(inputs):  # each blank alone is filled to make the claim true
        want = "1911" if "Chemistry" in inputs["claim"] else "Physics"
        options = [(line[0], line[3:].split(" (the evidence:")[0])
                   for line in inputs["options"].splitlines()]
        return {"choice": next(letter for letter, value in options if value == want)}

    # "In 1911 ... won" shares no word with "Prize in Chemistry in 1903": choose.same_frame
    # alone keeps 1911 out; off, both slots stand contradicted and settle decides
    result, _ = decode(draft, facts, corpus=corpus, choose=both_wrong)
    assert result.trace.ruled("choose.same_frame", "f0.0") and \
        result.answer == "She won the Nobel Prize in Physics in 1903 with Pierre Curie."
    result, _ = decode(draft, facts, corpus=corpus, choose=both_wrong,
                       rules={"choose.same_frame": False})
    assert result.trace.ruled("choose.settle", "f0.0")
    assert result.answer == "She won the Nobel Prize in Physics in 1903 with Pierre Curie."
    off, _ = decode(draft, facts, corpus=corpus, choose=both_wrong,
                    rules={"choose.settle": False, "choose.same_frame": False})
    assert not off.trace.ruled("choose.settle") and off.answer == draft


def test_a_swap_propagates_only_while_the_rule_is_on():
    facts = dict(FACTS)
    facts["Marie Curie was born on 7 November 1867 in Kraków."] = [
        "Marie Curie was born on 7 November 1867 in Kraków.", "Marie Curie is from Kraków."]
    on, _ = decode(DRAFT, facts)
    assert on.trace.ruled("choose.propagate", "f0.1")
    off, _ = decode(DRAFT, facts, rules={"choose.propagate": False})
    assert not off.trace.ruled("choose.propagate")
    assert off.trace.fact("f0.1").status == "unverified"
    assert reads_evidence and CORPUS  # the shared scenario


def test_a_rival_is_not_swapped_over_a_value_the_evidence_states_for_the_same_event():
    corpus = LocalCorpus.from_texts({"a.txt": "Marie Curie was born in Warsaw on 7 November "
                                              "1867. She studied in Paris.",
                                     "b.txt": "Marie Curie was born to a family of teachers "
                                              "in Congress Poland."})
    draft = ("Marie Curie was born in Warsaw on 7 November 1867, and she later studied "
             "physics in Paris.")
    facts = {draft: ["Marie Curie was born in Warsaw on 7 November 1867."]}

    def other(inputs):
        options = [(line[0], line[3:].split(" (the evidence:")[0])
                   for line in inputs["options"].splitlines()]
        return {"choice": next(letter for letter, value in options  # never its own value
                               if value not in ("Warsaw", "not stated"))}

    result, _ = decode(draft, facts, corpus=corpus, choose=other)
    assert result.trace.ruled("choose.own_stated", "f0.0") and result.answer == draft
    # (the rival's frame differs too; and `choose.name_stated` holds a stated name as well)
    off, _ = decode(draft, facts, corpus=corpus, choose=other,
                    rules={"choose.own_stated": False, "choose.same_frame": False,
                           "choose.name_stated": False, "choose.place_for_place": False})
    assert not off.trace.ruled("choose.own_stated") and off.answer != draft
    # a planted value the evidence never states is swapped as before
    planted, _ = _decode()
    assert not planted.trace.ruled("choose.own_stated")


def test_a_value_stated_word_for_word_with_its_neighbours_is_never_swapped():
    # the case that motivated it: the README's main job, where "the first woman to win a Nobel
    # Prize" became "person" (from "the first person to win two Nobel Prizes"), a tie on
    # shared event words
    corpus = LocalCorpus.from_texts({"a.txt": "Marie Curie became the first woman to win a "
                                              "Nobel Prize. Marie Curie was the first person "
                                              "to win two Nobel Prizes."})
    draft = "Marie Curie was the first woman to win a Nobel Prize."
    facts = {draft: [draft]}

    person = pick("person")

    kept, _ = decode(draft, facts, corpus=corpus, choose=person)
    assert kept.trace.ruled("choose.own_stated", "f0.0") and kept.answer == draft
    off, _ = decode(draft, facts, corpus=corpus, choose=person,  # (a stated role, too)
                    rules={"choose.own_stated": False, "choose.name_stated": False})
    assert "first person" in off.answer


def test_a_date_comparison_is_decided_by_the_evidences_dates_not_by_the_chooser():
    from test_choice import short

    question = "Which magazine was started first Arthur's Magazine or First for Women?"
    # the chooser would keep the wrong option: the dates (1844, 1989) decide, with no call
    fixed, engine = short(question, "First for Women was started first.",
                          pick("First for Women"))
    assert fixed.answer == "Arthur's Magazine was started first."
    assert fixed.trace.ruled("choose.compare", "f0.0") and not engine.of("ChooseValue")
    # a right answer the chooser would break stays right
    kept, _ = short(question, "Arthur's Magazine", pick("First for Women"))
    assert kept.answer == "Arthur's Magazine" and kept.trace.ruled("choose.compare")
    # off, the chooser decides again; and a comparison of no dates is never decided by it
    off, engine = short(question, "Arthur's Magazine", pick("First for Women"),
                        rules={"choose.compare": False})
    assert not off.trace.ruled("choose.compare") and engine.of("ChooseValue")
    sizes, engine = short("Which is larger, Arthur's Magazine or First for Women?",
                          "Arthur's Magazine", pick("First for Women"))
    assert sizes.answer == "Arthur's Magazine" and not sizes.trace.ruled("choose.compare")
    assert not engine.of("ChooseValue")


def test_a_one_sentence_answers_frame_holds_the_question_it_answers():
    """HaluEval tuning item 15's shape: the show an award was won for stands among the award's
    words in its passage, which the question, not the draft sentence, shares."""
    from serc_dspy.rules.rivals import same_frame
    from serc_dspy.rules.slots import EvidenceSentence

    passage = ('Ann Lee is known for playing Mara in the ABC series "Blue Coast" (2001-2004), '
               "for which she won the 2004 Emmy Award.")
    evidence = [EvidenceSentence(text=passage, passage=0, offset=0)]
    fact = "Ann Lee won an award for her role in Dark Harbour."
    slot = Slot(kind="name", text="Dark Harbour", start=fact.index("Dark"))
    rival = Candidate(value="Blue Coast", passage=0, offset=passage.index("Blue"))
    assert not same_frame(slot, fact, evidence, rival, "Ann Lee")
    question = "In what series did Ann Lee win the 2004 Emmy Award?"
    assert same_frame(slot, fact, evidence, rival, "Ann Lee", question)
    # the question's words about other things frame nothing ("what", "Lee" aside)
    assert not same_frame(slot, fact, evidence, rival, "Ann Lee", "What did Ann Lee do?")


def test_a_one_sentence_answer_to_a_question_is_swapped_where_the_question_frames_its_rival():
    corpus = LocalCorpus.from_texts({"a.txt": "Ann Lee is known for playing Mara in Blue "
                                              "Coast (2001-2004), for which she won the 2004 "
                                              "Emmy Award."})
    draft = "Ann Lee, an American actress, won an award for her role in Dark Harbour."

    def answer(question, text=draft):
        lm, _ = scripted_lm(handlers(AtomicFacts=lambda i: {"facts": [i["sentence"]]},
                                     ChooseValue=pick("Blue Coast")))
        program = SERC(retriever=corpus, top_k=3, verdicts="choose", evidence="passages",
                       queries="facts", reconstruct="minimal", firewall=False)
        with dspy.context(lm=lm, adapter=StrictJSONAdapter()):
            return program(question=question, draft=text)

    question = "In what series did Ann Lee win the 2004 Emmy Award?"
    asked = answer(question)
    assert asked.answer == draft.replace("Dark Harbour", "Blue Coast")
    assert not asked.trace.ruled("choose.same_frame")
    # no question ("Tell me ..."), or a draft of more than one sentence: the fact's own words
    # alone frame it, and the rival stands among others
    told = answer("Tell me about Ann Lee and her 2004 Emmy Award series.")
    assert told.answer == draft and told.trace.ruled("choose.same_frame", "f0.0")
    longer = answer(question, draft + " She was born in 1970.")
    assert "Dark Harbour" in longer.answer and longer.trace.ruled("choose.same_frame")


def test_a_rival_among_another_events_words_is_not_swapped_in():
    """The tuning split's clean Sörenstam bio: "another four times" was chosen over 72 LPGA
    tournaments, ten majors and 24 other tournaments; none shares the words around it."""
    corpus = LocalCorpus.from_texts({"a.txt": "Annika Sörenstam is a Swedish golfer. She won "
                                              "the tournament twice herself during those years "
                                              "and another four times before that."})
    draft = "Annika Sörenstam has won 72 official LPGA tournaments."

    def other(inputs):
        options = [(line[0], line[3:].split(" (the evidence:")[0])
                   for line in inputs["options"].splitlines()]
        return {"choice": next(letter for letter, value in options if value == "four")}

    def run(text, **rules):
        return decode(text, {text: [text]}, corpus=corpus, choose=other, rules=rules)[0]

    result = run(draft)
    assert result.answer == draft and result.trace.ruled("choose.same_frame", "f0.0")
    assert result.trace.fact("f0.0").status == "unverified"
    off = run(draft, **{"choose.same_frame": False, "choose.same_unit": False})
    assert not off.trace.ruled("choose.same_frame") and "four" in off.answer
    # (with `choose.same_unit` on, "four times" counts no tournaments either)
    unit = run(draft, **{"choose.same_frame": False})
    assert unit.trace.ruled("choose.same_unit", "f0.0") and unit.answer == draft
    # a rival among the same words is swapped in: "won 72 ... times" against "four times"
    same = "Annika Sörenstam won the tournament 72 times before that."
    fixed = run(same)
    assert not fixed.trace.ruled("choose.same_frame")
    assert fixed.answer == "Annika Sörenstam won the tournament four times before that."
    # and the planted errors of the shared scenario are all swapped back as before
    planted, _ = _decode()
    assert not planted.trace.ruled("choose.same_frame")
    assert planted.trace.ruled("choose.swap", "f2.0")


def test_a_stated_short_answer_yields_to_a_rival_the_questions_words_stand_around():
    from test_choice import short

    question = "Beowulf, a 2007 epic fantasy film, was directed by who?"
    fixed, _ = short(question, "Neil Gaiman", pick("Robert Zemeckis"))
    assert fixed.answer == "Robert Zemeckis"
    assert fixed.trace.ruled("choose.asked_frame", "f0.0")
    off, _ = short(question, "Neil Gaiman", pick("Robert Zemeckis"),
                   rules={"choose.asked_frame": False})
    assert off.answer == "Neil Gaiman" and off.trace.ruled("choose.own_stated", "f0.0")
    # "born in Warsaw": the question's words stand around the answer as much as the rival
    kept, _ = short("Where was Marie Curie born?", "Warsaw", pick("Maria Skłodowska"))
    assert kept.answer == "Warsaw" and not kept.trace.ruled("choose.asked_frame")
    # a question that ends on a quoted title ends on no wh-word (HaluEval extra tuning item
    # 243: 'was in "Doctor Who"?' swapped the right host for his character)
    from serc_dspy.rules.asked import asked_relation

    assert asked_relation('What host of The Voice UK was in "Doctor Who"?') == set()
    assert asked_relation(question) == {"direc"}


def test_a_value_passed_over_for_two_rivals_is_one_contradiction_signal_held_to_a_second():
    """The tuning stance pairs' "4.5 billion parameters" against "7 billion to 65 billion":
    the claim's value refused in both orders, for a different rival each time."""
    import dspy
    from scripted import scripted_lm
    from test_serc import handlers

    from serc_dspy import SERC, StrictJSONAdapter

    corpus = LocalCorpus.from_texts({"a.txt": "Marie Curie died in 1934 of aplastic anaemia. "
                                              "Reports in 1935 said she died of aplastic "
                                              "anaemia."})
    draft = "Marie Curie was a physicist. She died in 1944 of aplastic anaemia."
    died = "Marie Curie died in 1944 of aplastic anaemia."

    def rival(inputs):  # the first value that is neither the claim's nor "not stated"
        options = [(line[0], line[3:].split(" (the evidence:")[0])
                   for line in inputs["options"].splitlines()]
        return {"choice": next(letter for letter, value in options
                               if value not in ("1944", "not stated"))}

    def run(second, **rules):
        lm, engine = scripted_lm(handlers(AtomicFacts=lambda i: {"facts": [
                                              died if "died" in i["sentence"] else
                                              i["sentence"]]},
                                          ChooseValue=rival,
                                          JudgeFact=lambda i: {"verdict": second}))
        program = SERC(retriever=corpus, top_k=3, verdicts="choose", evidence="passages",
                       queries="facts", reconstruct="minimal", firewall=False,
                       rules={"choose.rejected": True, **rules})  # off by default
        with dspy.context(lm=lm, adapter=StrictJSONAdapter()):
            return program(question=QUESTION, draft=draft), engine

    alone, engine = run("NOT_FOUND")
    fact = alone.trace.fact("f1.0")
    assert alone.trace.ruled("choose.rejected", "f1.0")
    assert [s.ruling for s in fact.slots if s.kind == "year"] == ["rejected"]
    # one signal: the second vote was asked, disagreed, and the fact stays in the draft's words
    assert len(engine.of("JudgeFact")) == 1 and fact.status == "disputed"
    assert alone.trace.ruled("agree.contradiction", "f1.0") and alone.answer == draft
    # confirmed by the second vote, it is CONTRADICTED, yet no value of the evidence fits:
    # no corrector or rewriter invents one, and the fact is kept as disputed
    agreed, engine = run("CONTRADICTED")
    fact = agreed.trace.fact("f1.0")
    assert fact.verdict == "CONTRADICTED" and fact.status == "disputed"
    assert not agreed.trace.ruled("agree.contradiction", "f1.0")
    assert [r.after for r in agreed.trace.rulings if r.rule == "choose.rejected"] == \
        ["CONTRADICTED", "disputed"]
    assert agreed.answer == draft
    assert not engine.of("CorrectFacts") and not engine.of("RewriteSentence")
    off, engine = run("CONTRADICTED", **{"choose.rejected": False})
    assert not off.trace.ruled("choose.rejected") and off.answer == draft
    assert off.trace.fact("f1.0").status == "unverified" and not engine.of("JudgeFact")


BOOK_CORPUS = LocalCorpus.from_texts({
    "w.txt": "Widsith is an Old English poem preserved in the Exeter Book, a tenth-century "
             "anthology kept at Exeter Cathedral. The English scholar Kemp Malone edited it.",
})


def _answer(corpus, question, draft, choose, read=None, **rules):
    """A short answer decoded against `corpus`, the chooser picking `choose` (a value, or one
    value for each call in turn), each claim read by `read` if given; (result, engine)."""
    if isinstance(choose, list):
        turns = iter(choose)
        chooser = lambda inputs: pick(next(turns))(inputs)  # noqa: E731
    else:
        chooser = pick(choose)
    lm, engine = scripted_lm(handlers(ChooseValue=chooser, **(
        {"ChooseSentence": read} if read else {})))
    program = SERC(retriever=corpus, top_k=3, verdicts="choose", evidence="passages",
                   queries="facts", reconstruct="minimal", rules=rules)
    with dspy.context(lm=lm, adapter=StrictJSONAdapter()):
        return program(question=question, draft=draft), engine


def _book(choose, **rules):
    return _answer(BOOK_CORPUS, "What book preserves the poem Widsith?",
                   "The Canterbury Tales.", choose, **rules)


def test_a_short_answer_to_what_book_is_offered_the_evidences_books():
    # the case that motivated it: HaluEval tuning item 27, offered only nationalities
    from serc_dspy.rules.questions import head_noun, question_kind

    assert head_noun("What American country music singer-songwriter, born in 1942, sang?") == \
        "singer-songwriter"
    assert question_kind("Which state does the chain, whose CEO is Warren Bryant, serve?") == \
        "place"
    assert head_noun("Which organization presents the award?") == ""  # "award" is not asked
    fixed, engine = _book("Exeter Book")
    assert fixed.answer == "The Exeter Book." and fixed.trace.ruled("choose.asked_type", "f0.0")
    shown = engine.of("ChooseValue")[0]["inputs"]["options"]
    assert "Exeter Book" in shown and "English" not in shown
    off, engine = _book("Exeter Book", **{"choose.asked_type": False})
    assert not off.trace.ruled("choose.asked_type")
    assert "Old English" in engine.of("ChooseValue")[0]["inputs"]["options"]


def test_a_number_rival_that_counts_something_else_is_not_swapped_in():
    # the case that motivated it: Factcheck-Bench tuning item 9, "38 chromosomes" became 19
    from serc_dspy.rules.units import unit_of

    assert unit_of("38 chromosomes in each cell", 2) == unit_of("7 chromosome in", 1)
    assert unit_of("19 chromosome pairs for", 2) != unit_of("38 chromosomes in", 2)
    corpus = LocalCorpus.from_texts({"p.txt": "Marie Curie kept 19 chromosome pairs for a "
                                              "total of 38 chromosomes in her notes on pigs. "
                                              "Marie Curie kept 12 notebooks of pig data."})
    draft = "Marie Curie kept 40 chromosomes in her notes on pigs."
    facts = {draft: [draft]}

    pick_19 = pick("19")

    held, _ = decode(draft, facts, corpus=corpus, choose=pick_19,
                     rules={"choose.same_frame": False})
    assert held.trace.ruled("choose.same_unit", "f0.0") and held.answer == draft
    off, _ = decode(draft, facts, corpus=corpus, choose=pick_19,
                    rules={"choose.same_frame": False, "choose.same_unit": False})
    assert not off.trace.ruled("choose.same_unit") and "19 chromosomes" in off.answer


def test_a_number_rival_with_no_counted_noun_on_either_side_is_not_swapped_in():
    # the case that motivated it: a tuning bio's clean "at the age of 11" became nine, from
    # an article that gives both ages; every such bare-number swap on the tuning split was wrong
    from serc_dspy.rules.units import unit_of

    assert unit_of("at the age of 11 to study", 17) == ""      # a function word follows
    corpus = LocalCorpus.from_texts({"p.txt": "Marie Curie decided at the age of nine to "
                                              "study physics in Paris."})
    draft = "Marie Curie decided at the age of 11 to study physics."
    facts = {draft: [draft]}
    held, _ = decode(draft, facts, corpus=corpus, choose=pick("nine"))
    assert held.trace.ruled("choose.counted_noun", "f0.0") and held.answer == draft
    off, _ = decode(draft, facts, corpus=corpus, choose=pick("nine"),
                    rules={"choose.counted_noun": False})
    assert not off.trace.ruled("choose.counted_noun") and "age of nine" in off.answer
    # both numbers count a noun: `choose.same_unit` compares them, and this rule is quiet
    counted = LocalCorpus.from_texts({"p.txt": "Marie Curie kept 12 notebooks of her work "
                                               "on physics in Paris."})
    draft = "Marie Curie kept 14 notebooks of her work on physics."
    swapped, _ = decode(draft, {draft: [draft]}, corpus=counted, choose=pick("12"))
    assert not swapped.trace.ruled("choose.counted_noun") and "kept 12 notebooks" in \
        swapped.answer


def test_a_year_rival_at_the_other_end_of_a_range_is_not_swapped_in():
    # the case that motivated it: a tuning bio's clean "1969 to 1972" became "1969 to 1967",
    # from a vice-governorship "(1967–1969)" that ended as the fact's term began
    from serc_dspy.rules.rivals import range_end

    text = "governor of Zambales (1967–1969), before his first term from 1969 to 1972"
    assert [range_end(text, text.find(y), text.find(y) + 4) for y in ("1967", "1972")] == \
        ["start", "end"]
    assert range_end("born on 3 March 1951 in Paris", 16, 20) == ""
    draft = "Marie Curie directed the lab of her institute in Paris from 1969 to 1972."

    def end_year(rival):  # the rival for the range's end, the own value elsewhere
        return lambda i: pick(rival if "to ___" in i["claim"] else "not stated")(i)

    def run(text, rival, **rules):
        corpus = LocalCorpus.from_texts({"p.txt": text})
        return decode(draft, {draft: [draft]}, corpus=corpus, choose=end_year(rival),
                      rules={"choose.same_frame": False, **rules})[0]
    other_end = "Marie Curie was vice director of the lab (1967–1969) before she directed it."
    held = run(other_end, "1967")
    assert held.trace.ruled("choose.same_range", "f0.0") and held.answer == draft
    # (with it off, `choose.range_order` still holds the swap: 1967 would end a range
    # that starts in 1969)
    order = run(other_end, "1967", **{"choose.same_range": False})
    assert order.trace.ruled("choose.range_order", "f0.0") and order.answer == draft
    off = run(other_end, "1967", **{"choose.same_range": False, "choose.range_order": False})
    assert not off.trace.ruled("choose.same_range") and "1969 to 1967" in off.answer
    # a rival at the same end is no concern of this rule
    moved = run("Marie Curie directed the lab from 1969 to 1974.", "1974")
    assert not moved.trace.ruled("choose.same_range") and "1969 to 1974" in moved.answer


def test_a_date_rival_that_would_put_the_drafts_range_out_of_order_is_not_swapped_in():
    # the case that motivated it: a tuning bio's "(September 4, 1931 – October 17, 2024)",
    # whose death date became the birth date that opens the same range
    from serc_dspy.rules.rivals import date_key

    assert date_key("September 4, 1931") == date_key("4 September 1931") == (1931, 9, 4)
    assert date_key("1931") == (1931,) and date_key("in May") == ()
    draft = "Marie Curie (7 November 1867 – 4 July 1934) was a physicist."
    facts = {draft: ["Marie Curie died on 4 July 1934."]}
    corpus = LocalCorpus.from_texts({"p.txt": "Marie Curie, who was born on 7 November 1867, "
                                              "died of aplastic anaemia in Passy."})
    held, _ = decode(draft, facts, corpus=corpus, choose=pick("7 November 1867"))
    assert held.trace.ruled("choose.range_order", "f0.0") and held.answer == draft
    off, _ = decode(draft, facts, corpus=corpus, choose=pick("7 November 1867"),
                    rules={"choose.range_order": False})
    assert not off.trace.ruled("choose.range_order") and "1867 – 7 November 1867" in off.answer
    # a rival that keeps the range in order is no concern of this rule
    later = LocalCorpus.from_texts({"p.txt": "Marie Curie, who was born on 7 November 1867, "
                                             "died of aplastic anaemia on 4 July 1935."})
    moved, _ = decode(draft, facts, corpus=later, choose=pick("4 July 1935"))
    assert not moved.trace.ruled("choose.range_order") and "4 July 1935)" in moved.answer


def test_a_name_the_evidence_states_is_not_swapped_for_another_of_its_names():
    # the case that motivated it: a tuning bio's clean "his Sister bandmate Lizzie Grey"
    # became "Blackie Lawless", another bandmate the article names
    draft = "Marie Curie worked in Paris with her colleague Paul Langevin."
    facts = {draft: [draft]}
    corpus = LocalCorpus.from_texts({"p.txt": "Marie Curie worked in Paris with her colleague "
                                              "Georges Sagnac. Her colleague Paul Langevin "
                                              "was a physicist."})
    held, _ = decode(draft, facts, corpus=corpus, choose=pick("Georges Sagnac"))
    assert held.trace.ruled("choose.name_stated", "f0.0") and held.answer == draft
    off, _ = decode(draft, facts, corpus=corpus, choose=pick("Georges Sagnac"),
                    rules={"choose.name_stated": False})
    assert not off.trace.ruled("choose.name_stated") and "Georges Sagnac." in off.answer
    # a name stated only beside no year of the fact, or another year, is no statement of the
    # fact's event: the README main job's "Chemistry in 1903" is swapped to Physics
    from serc_dspy.core.trace import Passage, Slot
    from serc_dspy.rules.rivals import stated_alone
    from serc_dspy.rules.slots import about_subject

    prizes = [Passage(text="Marie Curie won Nobel Prizes in two sciences, physics and "
                           "chemistry. She won the Nobel Prize in Chemistry in 1911.")]
    evidence = about_subject(prizes, "Marie Curie")
    chemistry = Slot(kind="name", text="Chemistry", start=0)
    assert not stated_alone(chemistry, [Slot(kind="year", text="1903", start=0)], evidence)
    assert stated_alone(chemistry, [Slot(kind="year", text="1911", start=0)], evidence)
    assert stated_alone(chemistry, [], evidence)
    # a name stated nowhere (a planted one) is swapped as before
    planted = "Marie Curie worked in Paris with her colleague Louis Pasteur."
    fixed, _ = decode(planted, {planted: [planted]}, corpus=corpus,
                      choose=pick("Georges Sagnac"))
    assert not fixed.trace.ruled("choose.name_stated") and "Georges Sagnac." in fixed.answer


TOWER_CORPUS = LocalCorpus.from_texts({
    "t.txt": "The Galata Tower (Turkish: \"Galata Kulesi\") is a medieval stone tower in the "
             "Beyoğlu district of Istanbul, Turkey. Genoese builders raised it in 1348.",
})


def _tower(choose, **rules):
    return _answer(TOWER_CORPUS, "The Galata Tower is located in which country?",
                   "The Galata Tower is located in Greece, a land of old towers.", choose,
                   **{"draft.answer_sentence": True, **rules})


def test_a_place_question_is_offered_the_evidences_places_of_the_asked_kind():
    # the case that motivated it: HaluEval tuning item 26, offered a park's Turkish name and
    # a language for "which country", and never the country
    fixed, engine = _tower("Turkey")
    assert fixed.trace.ruled("draft.answer_sentence", "answer")
    assert fixed.answer == "The Galata Tower is located in Turkey, a land of old towers."
    assert fixed.trace.ruled("choose.asked_place", "f0.0")
    assert _offered(engine) == ["Greece", "Turkey", "not stated"]  # no city, no language
    off, engine = _tower("Turkey", **{"choose.asked_place": False})
    assert not off.trace.ruled("choose.asked_place")
    assert off.answer == "The Galata Tower is located in Greece, a land of old towers."
    assert "Turkish" in _offered(engine) and "Turkey" not in _offered(engine)  # capped out


def _offered(engine) -> list[str]:
    """The option values of the first choice asked."""
    shown = engine.of("ChooseValue")[0]["inputs"]["options"]
    return [line.split(") ", 1)[1].split(" (the evidence")[0] for line in shown.splitlines()]


AUTHOR_CORPUS = LocalCorpus.from_texts({
    "a.txt": "The essayist wrote for \"New Statesman\" and \"The Nation\" from Portsmouth. The "
             "American writer Tom Reed was born in 1949 and wrote for weeklies.",
})


def _author(choose, **rules):
    return _answer(AUTHOR_CORPUS, "What author, born in 1949, wrote for weeklies?",
                   "Paul Grant", choose, **rules)


def test_a_person_question_is_offered_the_evidences_full_names_only():
    # the case that motivated it: HaluEval tuning item 19, where a quoted magazine was chosen
    # in both orders for "What author ...?"
    fixed, engine = _author("Tom Reed")
    assert fixed.answer == "Tom Reed" and fixed.trace.ruled("choose.asked_person", "f0.0")
    assert _offered(engine) == ["Paul Grant", "Tom Reed", "not stated"]
    off, engine = _author("New Statesman", **{"choose.asked_person": False})
    assert not off.trace.ruled("choose.asked_person") and off.answer == "New Statesman"
    assert {"New Statesman", "American", "Tom Reed"} <= set(_offered(engine))


FILM_CORPUS = LocalCorpus.from_texts({
    "f.txt": "Beowulf is a 2007 film directed by Robert Zemeckis. Its screenplay is by Neil "
             "Gaiman and Roger Avary.",
})


def _film(turns, **rules):  # (`choose.third_order` is off by default; `choose.question_echo`
    # would settle the orders' disagreement by itself: "directed" stands by Zemeckis alone)
    return _answer(FILM_CORPUS, "Beowulf, a 2007 film, was directed by who?", "Steven Spielberg",
                   turns, **{"choose.third_order": True, "choose.question_echo": False, **rules})


def test_a_short_answer_whose_two_orders_disagree_is_asked_in_a_third_order():
    # the orders disagree: the first option of the first order, then the right value
    fixed, engine = _film(["Neil Gaiman", "Robert Zemeckis", "Robert Zemeckis"])
    assert fixed.answer == "Robert Zemeckis"
    assert fixed.trace.ruled("choose.third_order", "f0.0")[0].after == "Robert Zemeckis"
    orders = [[line.split(") ", 1)[1].split(" (the")[0] for line in
               call["inputs"]["options"].splitlines()] for call in engine.of("ChooseValue")]
    assert orders[2] == ["Neil Gaiman", "Roger Avary", "Steven Spielberg", "Robert Zemeckis",
                         "not stated"] == orders[0][2:4] + orders[0][:2] + ["not stated"]
    split, _ = _film(["Neil Gaiman", "Robert Zemeckis", "Roger Avary"])
    assert split.answer == "Steven Spielberg" and not split.trace.ruled("choose.third_order")
    assert split.trace.fact("f0.0").slots[0].note.startswith("the three orders disagree")
    off, engine = _film(["Neil Gaiman", "Robert Zemeckis"], **{"choose.third_order": False})
    assert off.answer == "Steven Spielberg" and len(engine.of("ChooseValue")) == 2
    assert not off.trace.ruled("choose.third_order")


def weighed(chosen, weights):
    """A chooser that picks `chosen` and reports each option letter's log-probability from
    `weights` ({value: probability}; an unlisted value is unlikely), as a server does."""
    def choose(inputs):
        reply = pick(chosen)(inputs)
        reply["_logprobs"] = {letter: math.log(weights.get(value, 0.001))
                              for letter, value in _options(inputs["options"])}
        return reply
    return choose


def _weighed_film(weights, **rules):
    """The film question's two orders disagreeing (the first option of each), with `weights`
    behind both choices."""
    turns = iter(["Neil Gaiman", "Steven Spielberg"])
    lm, engine = scripted_lm(handlers(ChooseValue=lambda i: weighed(next(turns), weights)(i)))
    program = SERC(retriever=FILM_CORPUS, top_k=3, verdicts="choose", evidence="passages",
                   queries="facts", reconstruct="minimal",
                   rules={"choose.question_echo": False, **rules})
    with dspy.context(lm=lm, adapter=StrictJSONAdapter()):
        return program(question="Beowulf, a 2007 film, was directed by who?",
                       draft="Steven Spielberg"), engine


def test_a_short_answer_whose_orders_disagree_is_decided_by_their_pooled_probabilities():
    # each order wrote its first letter, but both weighed Zemeckis highly: averaged over the
    # two orders he leads by more than the margin, at no extra call
    lead = {"Robert Zemeckis": 0.6, "Neil Gaiman": 0.25, "Steven Spielberg": 0.1}
    fixed, engine = _weighed_film(lead)
    assert fixed.answer == "Robert Zemeckis" and len(engine.of("ChooseValue")) == 2
    ruling = fixed.trace.ruled("choose.pooled", "f0.0")[0]
    assert ruling.after == "Robert Zemeckis" and ruling.before == "Steven Spielberg"
    slot = fixed.trace.fact("f0.0").slots[0]
    assert slot.choices == ["Neil Gaiman", "Steven Spielberg"]
    assert max(slot.confidence, key=slot.confidence.get) == "Robert Zemeckis"
    assert abs(sum(slot.confidence.values()) - 1) < 0.01
    # every guard still applies: the swap is the rule that changes the answer
    assert fixed.trace.ruled("choose.swap", "f0.0")
    # a lead under the margin decides nothing: the answer stays, unverified
    close = {"Robert Zemeckis": 0.4, "Neil Gaiman": 0.35, "Steven Spielberg": 0.2}
    kept, _ = _weighed_film(close)
    assert kept.answer == "Steven Spielberg" and not kept.trace.ruled("choose.pooled")
    assert kept.trace.fact("f0.0").slots[0].note.startswith("the two orders disagree")
    off, _ = _weighed_film(lead, **{"choose.pooled": False})
    assert off.answer == "Steven Spielberg" and not off.trace.ruled("choose.pooled")
    # a backend with no log-probabilities: no confidence, and the rule is silent
    plain, _ = _film(["Neil Gaiman", "Steven Spielberg"], **{"choose.third_order": False})
    assert plain.trace.fact("f0.0").slots[0].confidence == {}
    assert not plain.trace.ruled("choose.pooled") and plain.answer == "Steven Spielberg"


KICK_CORPUS = LocalCorpus.from_texts({
    "k.txt": "The promotion's roster includes Badr Hari, Peter Aerts and Peter Graham. Badr "
             "Hari is a Dutch kickboxer from Amsterdam, fighting out of a gym in Oostzaan. "
             "Hari was once rated the best kickboxer in the world, though controversies "
             "followed his unsportsmanlike conduct in the ring.",
})
KICK = ("Who was once rated the best kickboxer in the world, though controversies followed "
        "his unsportsmanlike conduct?")


GYM_CORPUS = LocalCorpus.from_texts({
    "g.txt": "The promotion's roster includes Badr Hari and Peter Aerts. Badr Hari trains at "
             "Mike's Gym in Oostzaan. Hari was once rated the best kickboxer in the world.",
})


def test_a_person_question_answered_by_no_persons_name_yields_to_a_full_name():
    # the case that motivated it: HaluEval tuning item 2, answered with the fighter's gym,
    # which the evidence names, so `choose.own_stated` kept the right fighter out
    from serc_dspy.rules.asked import off_type

    fixed, _ = _answer(GYM_CORPUS, KICK, "Mike's Gym in Oostzaan", "Badr Hari")
    assert fixed.answer == "Badr Hari"
    assert fixed.trace.ruled("choose.off_type", "f0.0")[0].after == "Badr Hari"
    off, _ = _answer(GYM_CORPUS, KICK, "Mike's Gym in Oostzaan", "Badr Hari",
                     **{"choose.off_type": False})
    assert off.answer == "Mike's Gym in Oostzaan" and off.trace.ruled("choose.own_stated")
    # a person's name, or a bare surname (which may be one), is still held by its statement
    kept, _ = _answer(GYM_CORPUS, KICK, "Peter Aerts", "Badr Hari")
    assert kept.answer == "Peter Aerts" and not kept.trace.ruled("choose.off_type")
    slot = Slot(kind="name", text="Aerts", candidates=[
        Candidate(value="Aerts", origin="fact"), Candidate(value="Badr Hari", origin="evidence")])
    assert not off_type(KICK, slot)
    # nor a plain run of capitalised words whose given name no list knows (HaluEval extra
    # tuning item 51: a right "Zooey Deschanel" was replaced)
    slot = Slot(kind="name", text="Zooey Deschanel", candidates=[
        Candidate(value="Zooey Deschanel", origin="fact"),
        Candidate(value="Jane Alexander", origin="evidence")])
    assert not off_type(KICK, slot)
    # another kind of question: quiet
    assert not off_type("Where does Badr Hari train?", slot.model_copy(update={
        "text": "Mike's Gym in Oostzaan"}))



BAND_CORPUS = LocalCorpus.from_texts({
    "k.txt": "The Kingsmen recorded a cover of the song. Richard Berry wrote the song in 1955.",
})


def test_a_name_the_answer_puts_after_the_is_no_persons_name():
    # HaluEval extra tuning item 245: "Who wrote the song ...?" answered "The Kingsmen wrote
    # the song.": a band, which the evidence names, so `choose.own_stated` held the writer
    from serc_dspy.rules.asked import off_type

    question = "Who wrote the song that the Kingsmen covered?"
    # (the draft names only the question's band: `draft.no_value` would answer it afresh)
    fixed, _ = _answer(BAND_CORPUS, question, "The Kingsmen wrote the song.", "Richard Berry",
                       **{"draft.no_value": False})
    assert fixed.trace.ruled("choose.off_type", "f0.0")
    assert fixed.answer == "Richard Berry wrote the song."
    slot = Slot(kind="name", text="Kingsmen", candidates=[
        Candidate(value="Kingsmen", origin="fact"),
        Candidate(value="Richard Berry", origin="evidence")])
    assert off_type(question, slot, "The Kingsmen wrote the song.")
    # without "the" a one-word name may be a surname: held, as before
    assert not off_type(question, slot, "Kingsmen wrote the song.")


DUET_CORPUS = LocalCorpus.from_texts({
    "d.txt": "Tammy Wynette was an American country music singer-songwriter born in May 1942. "
             "She recorded the duet Golden Ring in 1976 with her ex-husband George Jones, the "
             "year he released The Battle.",
})
DUET = ("What American country music singer-songwriter, born in May of 1942, sang a duet with "
        "her ex-husband the same year that he released the song The Battle?")


def test_a_person_question_about_a_woman_is_not_offered_mens_names():
    # the case that motivated it: HaluEval tuning item 12, whose orders split between the
    # singer and her ex-husband
    from serc_dspy.rules.people import asked_gender, other_gender

    assert asked_gender(DUET) == "female"  # "her" comes first; "he" is the husband
    assert asked_gender("Who directed Jaws?") is None
    assert other_gender("George Jones", "female") and not other_gender("Tammy Wynette", "female")
    assert not other_gender("Kim Novak", "male")  # a name given to both is never dropped

    def offered(engine):
        return [line.split(") ", 1)[1].split(" (the")[0]
                for line in engine.of("ChooseValue")[0]["inputs"]["options"].splitlines()]
    fixed, engine = _answer(DUET_CORPUS, DUET, "Loretta Lynn", "Tammy Wynette")
    assert fixed.answer == "Tammy Wynette" and "George Jones" not in offered(engine)
    assert "a woman" in fixed.trace.ruled("choose.asked_gender", "f0.0")[0].detail
    off, engine = _answer(DUET_CORPUS, DUET, "Loretta Lynn", "Tammy Wynette",
                          **{"choose.asked_gender": False})
    assert off.answer == "Tammy Wynette" and "George Jones" in offered(engine)
    assert not off.trace.ruled("choose.asked_gender")
    plain, _ = _answer(GYM_CORPUS, "Which kickboxer trains at Mike's Gym?", "Peter Aerts",
                       "Peter Aerts")
    assert not plain.trace.ruled("choose.asked_gender")  # no gendered word: quiet


def test_a_short_answer_passed_over_takes_the_rival_the_question_echoes():
    # the case that motivated it: HaluEval tuning item 2, whose question restates the
    # evidence about its answer; the orders chose two different rivals and the draft stayed.
    # Off by default: on HaluEval's report split it broke 4 right answers and fixed none.
    from serc_dspy.rules.asked import question_echo
    from serc_dspy.rules.base import RuleSet

    assert not RuleSet().on("choose.question_echo")
    assert question_echo(KICK, "Badr Hari", []) == 0
    default, _ = _answer(KICK_CORPUS, KICK, "Ernesto Hoost", ["Badr Hari", "Peter Graham"])
    assert default.answer == "Ernesto Hoost" and not default.trace.ruled("choose.question_echo")
    on = {"choose.question_echo": True}
    split, _ = _answer(KICK_CORPUS, KICK, "Ernesto Hoost", ["Badr Hari", "Peter Graham"], **on)
    assert split.answer == "Badr Hari"
    assert split.trace.ruled("choose.question_echo", "f0.0")[0].after == "Badr Hari"
    off, _ = _answer(KICK_CORPUS, KICK, "Ernesto Hoost", ["Badr Hari", "Peter Graham"],
                     **{"choose.question_echo": False})
    assert off.answer == "Ernesto Hoost" and not off.trace.ruled("choose.question_echo")
    # an answer the evidence states ("Peter Aerts", on the roster) yields to a rival chosen
    # in both orders only when the question echoes the rival by the margin
    stated, _ = _answer(KICK_CORPUS, KICK, "Peter Aerts", "Badr Hari", **on)
    assert stated.answer == "Badr Hari" and stated.trace.ruled("choose.question_echo", "f0.0")
    held, _ = _answer(KICK_CORPUS, KICK, "Peter Aerts", "Badr Hari",
                      **{"choose.question_echo": False})
    assert held.answer == "Peter Aerts" and held.trace.ruled("choose.own_stated", "f0.0")
    # the answer chosen in both orders: nothing to weigh
    right, _ = _answer(KICK_CORPUS, KICK, "Badr Hari", "Badr Hari", **on)
    assert right.answer == "Badr Hari" and not right.trace.ruled("choose.question_echo")


SHOW_CORPUS = LocalCorpus.from_texts({
    "s.txt": "Nixon won an Emmy Award for her performance. She is known for playing Miranda "
             "Hobbes in the HBO series \"Sex and the City\" (1998-2004), for which she won the "
             "2004 Emmy Award for Outstanding Supporting Actress in a Comedy Series.",
})
SHOW_QUESTION = "In what show did Cynthia Nixon win the 2004 Emmy Award for her performance?"


def test_a_quoted_short_answer_is_offered_the_titles_the_evidence_quotes():
    # the short-answer path of HaluEval tuning item 15's case: the quoted title is no run of
    # capitalised words ("and the"), so the network and the award's category were offered
    draft = "She starred in \"Desperate Housewives\"."
    fixed, engine = _answer(SHOW_CORPUS, SHOW_QUESTION, draft, "Sex and the City")
    assert fixed.trace.short_draft
    assert fixed.answer == "She starred in \"Sex and the City\"."
    assert fixed.trace.ruled("choose.quoted_title", "f0.0")
    assert _offered(engine) == ["Desperate Housewives", "Sex and the City", "not stated"]
    # unquoted, the same name is offered the evidence's names, as before
    bare, engine = _answer(SHOW_CORPUS, SHOW_QUESTION, "Desperate Housewives", "HBO")
    assert not bare.trace.ruled("choose.quoted_title")
    assert "Sex and the City" not in _offered(engine)
    off, engine = _answer(SHOW_CORPUS, SHOW_QUESTION, draft, "HBO",  # the options as before
                          **{"choose.quoted_title": False, "choose.asked_rank": False})
    assert not off.trace.ruled("choose.quoted_title")
    assert "Sex and the City" not in _offered(engine) and "HBO" in _offered(engine)


BOOK_TITLE_CORPUS = LocalCorpus.from_texts({
    "b.txt": "In 1910 Marie Curie published \"Treatise on Radioactivity\" with Gauthier-Villars "
             "in Paris.",
})


def test_a_quoted_title_in_prose_is_offered_the_titles_the_evidence_quotes():
    # the long-form path of HaluEval tuning item 15: the fact drops the draft's quotes, the
    # draft sentence keeps them; the quoted title has lower-case words, so no name span
    draft = ("Marie Curie was a physicist and chemist of great renown. She wrote \"Radium "
             "Days\" in 1910.")
    facts = {"She wrote \"Radium Days\" in 1910.": ["Marie Curie wrote Radium Days in 1910."]}
    fixed, engine = decode(draft, facts, corpus=BOOK_TITLE_CORPUS,
                           choose=pick("Treatise on Radioactivity"))
    assert fixed.answer == draft.replace("Radium Days", "Treatise on Radioactivity")
    assert fixed.trace.ruled("choose.quoted_title", "f1.0")
    assert fixed.trace.ruled("choose.swap", "f1.0")
    off, engine = decode(draft, facts, corpus=BOOK_TITLE_CORPUS,
                         choose=pick("Treatise on Radioactivity"),
                         rules={"choose.quoted_title": False})
    assert off.answer == draft and not off.trace.ruled("choose.quoted_title")
    assert all("Treatise on Radioactivity" not in call["inputs"]["options"]
               for call in engine.of("ChooseValue"))


CITIES_CORPUS = LocalCorpus.from_texts({
    "c.txt": "Wenling (Wenling dialect: Uen-lin) is a coastal county-level city in Zhejiang "
             "province, China. Xinzheng is a small county-level city of Zhengzhou in Henan "
             "province of Central China. Osaka is a city in Japan.",
})
BOTH = "Are Wenling and Xinzheng both in China?"


def test_a_both_question_is_answered_yes_where_the_evidence_states_it_of_each():
    # HaluEval tuning item 23: "yes" stands in no passage, so nothing was chosen and the
    # wrong answer stood; each city's own sentence says China
    fixed, engine = _answer(CITIES_CORPUS, BOTH, "Wenling is in Japan.", "not stated")
    assert fixed.answer == "Yes, Wenling and Xinzheng are both in China."
    assert fixed.trace.ruled("choose.both", "f0.0") and fixed.trace.ruled("choose.swap")
    assert engine.of("ChooseValue") == []  # the passages decide it, not the model
    assert "decided by the passages, not chosen" in fixed.trace.ruled("choose.swap")[0].detail
    kept, _ = _answer(CITIES_CORPUS, BOTH, "Yes.", "not stated")
    assert kept.answer == "Yes." and kept.trace.ruled("choose.both", "f0.0")
    assert kept.trace.fact("f0.0").verdict == "SUPPORTED"
    # a property the evidence does not state of each: no "no" is inferred, the answer stays
    osaka, _ = _answer(CITIES_CORPUS, "Are Wenling and Osaka both in China?", "No.",
                       "not stated")
    assert osaka.answer == "No." and not osaka.trace.ruled("choose.both")
    off, _ = _answer(CITIES_CORPUS, BOTH, "Wenling is in Japan.", "not stated",
                     **{"choose.both": False})
    assert off.answer == "Wenling is in Japan." and not off.trace.ruled("choose.both")


PLANTS_CORPUS = LocalCorpus.from_texts({
    "p.txt": "Calochone is a genus of flowering plants in the Rubiaceae family. Adlumia is a "
             "genus of two species in the Papaveraceae family. The tuna is a fish.",
})
PLANTS = "Are Calochone and Adlumia both plants?"


def _both_read(question, draft, stances, **rules):
    """`PLANTS_CORPUS` asked `question`, each option's claim read with the stance `stances`
    gives the first option its claim names; (result, engine)."""
    def read(inputs):
        name = next(n for n in stances if inputs["claim"].startswith(n))
        if stances[name] == "dead":
            raise ConnectionError("the LM server went away")
        return {"sentence": 1, "stance": stances[name]}

    return _answer(PLANTS_CORPUS, question, draft, "not stated", read=read, **rules)


def test_a_both_question_the_words_do_not_decide_is_read_as_one_claim_per_option():
    # HaluEval extra tuning item 218: "a genus of two species in the Papaveraceae family"
    # states no "plants", so `choose.both` read nothing and "No, ... a fish." stood
    draft = "No, Calochone is a type of fish."
    yes = {"Calochone": "yes", "Adlumia": "yes"}
    fixed, engine = _both_read(PLANTS, draft, yes)
    assert fixed.answer == "Yes, Calochone and Adlumia are both plants."
    ruling = fixed.trace.ruled("choose.both_claims", "f0.0")
    assert ruling and ruling[0].after == fixed.answer and fixed.trace.ruled("choose.swap")
    calls = engine.of("ChooseSentence")
    assert [c["inputs"]["claim"] for c in calls] == ["Calochone is a plant.",
                                                     "Adlumia is a plant."]
    assert "Papaveraceae" in calls[1]["inputs"]["sentences"]
    assert "Rubiaceae" not in calls[1]["inputs"]["sentences"]  # each its own sentences
    kept, _ = _both_read(PLANTS, "Yes.", yes)
    assert kept.answer == "Yes." and kept.trace.fact("f0.0").verdict == "SUPPORTED"
    # "Are both A and B P?": B ends where the evidence's name does, so P keeps "Mexican"
    fixed, _ = _both_read("Are both Calochone and Adlumia Mexican plants?", draft, yes)
    assert fixed.answer == "Yes, Calochone and Adlumia are both Mexican plants."
    # one option read as the opposite: the answer is no, and says of which option
    tuna = "Are Calochone and the tuna both plants?"
    no = {"Calochone": "yes", "the tuna": "opposite"}
    fixed, _ = _both_read(tuna, "Yes, both are plants.", no)
    assert fixed.answer == "No, the tuna is not a plant."
    kept, _ = _both_read(tuna, "No.", no)
    assert kept.answer == "No." and kept.trace.fact("f0.0").verdict == "SUPPORTED"
    # a claim not stated (or a failed call): no yes and no no, the answer stays unverified
    for stances in ({"Calochone": "yes", "Adlumia": "not stated"},
                    {"Calochone": "opposite", "Adlumia": "opposite"}):
        kept, _ = _both_read(PLANTS, draft, stances)
        assert kept.answer == draft and kept.trace.ruled("choose.both_claims", "f0.0")
        assert kept.trace.fact("f0.0").status == "unverified"
    # a dead LM is no reading: the answer stays, with no verdict, and the run says so
    dead, _ = _both_read(PLANTS, draft, {"Calochone": "yes", "Adlumia": "dead"})
    assert dead.answer == draft and dead.trace.fact("f0.0").verdict is None
    assert dead.trace.status == "failed" and dead.trace.errors
    # an answer that says neither yes nor no is not read; nor with the rule off
    for answer, rules in (("Calochone is a fish.", {}), (draft, {"choose.both_claims": False})):
        kept, engine = _both_read(PLANTS, answer, yes, **rules)
        assert kept.answer == answer and not engine.of("ChooseSentence")
        assert not kept.trace.ruled("choose.both_claims")


def test_a_one_sentence_answer_to_a_both_question_has_its_yes_or_no_read_from_the_passages():
    # HaluEval multi-turn tuning items 68 and 248: a sentence too long for a short claim took
    # the prose path, which checks its names and never its yes or no
    sentence = "Wenling is a coastal city of Japan, but Xinzheng is a small city of Henan."
    fixed, engine = _answer(CITIES_CORPUS, BOTH, sentence, "not stated")
    assert fixed.trace.ruled("draft.yes_no_sentence", "answer")
    assert fixed.answer == "Yes, Wenling and Xinzheng are both in China."
    assert fixed.trace.ruled("choose.both", "f0.0") and engine.of("ChooseValue") == []
    assert engine.of("AtomicFacts") == [] and engine.of("AnswerEntity") == []  # no prose path
    off, engine = _answer(CITIES_CORPUS, BOTH, sentence, "not stated",
                          **{"draft.yes_no_sentence": False})
    assert not off.trace.ruled("draft.yes_no_sentence") and not off.trace.ruled("choose.both")
    assert engine.of("AtomicFacts")  # the prose path, as before
    # a yes the passages support, or no reading at all: decoded as prose, as before
    for draft, question in (("Wenling and Xinzheng are both in China, on the coast.", BOTH),
                            (sentence, "Are Wenling and Xinzheng both in Korea?")):
        prose, _ = _answer(CITIES_CORPUS, question, draft, "not stated")
        assert prose.trace.ruled("draft.yes_no_sentence") and \
            prose.trace.ruled("draft.sentence_as_prose")
    # a question of another form is not taken
    other, _ = _answer(CITIES_CORPUS, "Is Wenling in China?", sentence, "not stated")
    assert not other.trace.ruled("draft.yes_no_sentence")


FILMMAKERS_CORPUS = LocalCorpus.from_texts({
    "c.txt": "Chris Carter (born October 13, 1956) is an American television and film producer.",
    "t.txt": "Theo van Gogh (23 July 1957 - 2 November 2004) was a Dutch film director.",
})
SAME_NATIONALITY = "Do filmmakers Chris Carter and Theo van Gogh share the same nationality?"


def test_a_same_question_is_answered_by_the_value_each_options_opening_states():
    # HaluEval extra tuning item 367: "no" stands in no passage, but "American" and "Dutch" do
    fixed, engine = _answer(FILMMAKERS_CORPUS, SAME_NATIONALITY, "Yes, both were born in "
                            "America.", "not stated")
    assert fixed.answer == "No, Chris Carter is American and Theo van Gogh is Dutch."
    assert fixed.trace.ruled("choose.same_value", "f0.0") and engine.of("ChooseValue") == []
    kept, _ = _answer(FILMMAKERS_CORPUS, SAME_NATIONALITY, "No.", "not stated")
    assert kept.answer == "No." and kept.trace.fact("f0.0").verdict == "SUPPORTED"
    off, _ = _answer(FILMMAKERS_CORPUS, SAME_NATIONALITY, "Yes.", "not stated",
                     **{"choose.same_value": False})
    assert off.answer == "Yes." and not off.trace.ruled("choose.same_value")


BANDS_CORPUS = LocalCorpus.from_texts({
    "n.txt": "The New Pornographers is a Canadian indie rock band formed in 1997 in Vancouver.",
    "k.txt": "Kings of Leon is an American rock band that formed in Nashville, Tennessee.",
    "j.txt": "Junipers are coniferous plants in the genus Juniperus of the cypress family "
             "Cupressaceae. Indigofera is a large genus of flowering plants belonging to the "
             "family Fabaceae.",
})
BOTH_BANDS = "Are both The New Pornographers and Kings of Leon American rock bands?"


def test_a_both_question_is_answered_no_where_one_option_states_another_value_of_its_kind():
    # HaluEval multi-turn tuning drafts 29 and 438: one option's own sentence states the
    # asked nationality or family, the other's another one
    fixed, engine = _answer(BANDS_CORPUS, BOTH_BANDS, "Yes, both are popular rock bands.",
                            "not stated")
    assert fixed.answer == "No, The New Pornographers is Canadian."
    assert fixed.trace.ruled("choose.both_not", "f0.0") and engine.of("ChooseValue") == []
    family, _ = _answer(BANDS_CORPUS, "Do both Juniper and Indigofera belong to the cypress "
                        "family Cupressaceae?", "Yes, both do.", "not stated")
    assert family.answer == "No, Indigofera is in the family Fabaceae."
    kept, _ = _answer(BANDS_CORPUS, BOTH_BANDS, "No.", "not stated")
    assert kept.answer == "No." and kept.trace.fact("f0.0").verdict == "SUPPORTED"
    # no option states the asked value: the property may be of another kind, no "no"
    other, _ = _answer(BANDS_CORPUS, "Are both The New Pornographers and Kings of Leon "
                       "Catholic rock bands?", "Yes.", "not stated")
    assert other.answer == "Yes." and not other.trace.ruled("choose.both_not")
    off, _ = _answer(BANDS_CORPUS, BOTH_BANDS, "Yes.", "not stated",
                     **{"choose.both_not": False})
    assert off.answer == "Yes." and not off.trace.ruled("choose.both_not")


DIRECTORS_CORPUS = LocalCorpus.from_texts({
    "h.txt": "Charles Hutchison (December 3, 1879 - May 30, 1949) was an American film actor, "
             "director and screenwriter.",
    "b.txt": "Reginald C. Barker (April 2, 1886 - February 23, 1945) was a pioneer film "
             "director.",
})
MUTUAL = "Charles Hutchison and Reginald Barker, have which mutual occupation?"


def test_what_two_people_share_is_the_kind_both_openings_give():
    # HaluEval extra tuning item 338: the answer's value is neither's, the shared kind is both
    fixed, engine = _answer(DIRECTORS_CORPUS, MUTUAL, "Both actors were also writers.",
                            "not stated")
    assert fixed.answer == "Charles Hutchison and Reginald Barker are both film directors."
    assert fixed.trace.ruled("choose.shared_value", "f0.0") and engine.of("ChooseValue") == []
    kept, _ = _answer(DIRECTORS_CORPUS, MUTUAL, "film director", "not stated")
    assert kept.answer == "film director" and kept.trace.fact("f0.0").verdict == "SUPPORTED"
    off, _ = _answer(DIRECTORS_CORPUS, MUTUAL, "Both actors were also writers.", "not stated",
                     **{"choose.shared_value": False})
    assert off.answer == "Both actors were also writers."
    assert not off.trace.ruled("choose.shared_value")


def test_a_one_sentence_answer_to_what_two_things_share_is_checked_as_a_short_answer():
    # HaluEval extra tuning item 371: a sentence draft took the prose path, which kept it
    sentence = "Charles Hutchison and Reginald Barker both worked as stage magicians in Ohio."
    fixed, engine = _answer(DIRECTORS_CORPUS, MUTUAL, sentence, "not stated")
    assert fixed.trace.ruled("draft.shared_sentence", "answer")
    assert fixed.answer == "Charles Hutchison and Reginald Barker are both film directors."
    assert fixed.trace.ruled("choose.shared_value") and engine.of("ChooseValue") == []
    assert engine.of("AtomicFacts") == [] and engine.of("AnswerEntity") == []  # no prose path
    off, _ = _answer(DIRECTORS_CORPUS, MUTUAL, sentence, "not stated",
                     **{"draft.shared_sentence": False})
    assert not off.trace.ruled("draft.shared_sentence") and off.answer == sentence
    # no shared kind in the openings: decoded as prose, as before
    apart = LocalCorpus.from_texts({"h.txt": "Charles Hutchison was a Welsh harpist.",
                                    "b.txt": "Reginald Barker was a Scottish chemist."})
    prose, _ = _answer(apart, MUTUAL, sentence, "not stated")
    assert prose.trace.ruled("draft.shared_sentence") and \
        prose.trace.ruled("draft.sentence_as_prose")


STORES_CORPUS = LocalCorpus.from_texts({
    "d.txt": "Tom Reed was the CEO of Kona Drugs out of California before its sale. Kona Drugs "
             "is a chain of 40 drug stores throughout the state of Hawaii.",
})
STORES = "Which state are the drug stores located in, of which Tom Reed was the CEO?"


def test_a_rival_the_evidence_calls_by_the_asked_type_word_outweighs_a_stated_answer():
    # HaluEval tuning item 5: "California" is stated (the CEO's company came from there), so
    # `choose.own_stated` held back "Hawaii", which the evidence calls "the state of Hawaii"
    fixed, _ = _answer(STORES_CORPUS, STORES, "California", "Hawaii")
    assert fixed.answer == "Hawaii" and fixed.trace.ruled("choose.asked_noun", "f0.0")
    assert not fixed.trace.ruled("choose.own_stated")
    off, _ = _answer(STORES_CORPUS, STORES, "California", "Hawaii",
                     **{"choose.asked_noun": False})
    assert off.answer == "California" and off.trace.ruled("choose.own_stated", "f0.0")
    # the right answer, passed over for the stated California, is not replaced: the
    # evidence calls California by no "state"
    kept, _ = _answer(STORES_CORPUS, STORES, "Hawaii", "California")
    assert kept.answer == "Hawaii" and not kept.trace.ruled("choose.asked_noun")


COUNTY_CORPUS = LocalCorpus.from_texts({
    "k.txt": "Betzy Kjelsberg was a Norwegian politician. Kjelsberg was born in Svelvik, "
             "Vestfold. Vestfold is a county in Norway, bordering Buskerud and Telemark.",
})
COUNTY = "The first female board member for the Liberal Party, she was born in which county?"


def test_a_rival_defined_as_the_asked_type_in_a_sentence_of_its_own_outweighs_a_stated_answer():
    # multi-turn tuning draft 298: Buskerud is stated (as Vestfold's neighbour), so
    # `choose.own_stated` held back "Vestfold", which the evidence defines as a county
    draft = "Betzy Kjelsberg was born in Buskerud."
    fixed, _ = _answer(COUNTY_CORPUS, COUNTY, draft, "Vestfold")
    assert fixed.answer == "Betzy Kjelsberg was born in Vestfold."
    assert fixed.trace.ruled("choose.asked_noun", "f0.0")
    off, _ = _answer(COUNTY_CORPUS, COUNTY, draft, "Vestfold", **{"choose.asked_noun": False})
    assert off.answer == draft and off.trace.ruled("choose.own_stated", "f0.0")
    # the right county, passed over for Buskerud, is kept: Buskerud is defined as no county
    kept, _ = _answer(COUNTY_CORPUS, COUNTY, "Betzy Kjelsberg was born in Vestfold.",
                      "Buskerud")
    assert kept.answer == "Betzy Kjelsberg was born in Vestfold."


LAUREATE_CORPUS = LocalCorpus.from_texts({
    "l.txt": "In 1903 Marie Curie became France's youngest Nobel laureate, with Pierre Curie.",
})


def test_a_name_is_offered_in_the_frame_after_it_too():
    # wikipedia_dev.json, Baltasar Corrada del Río: "Jordan's 15th Secretary of State" had no
    # rival, the evidence's "Puerto Rico's 15th ..." following "as", not "was"
    draft = "Marie Curie was a physicist of great renown. She was Austria's youngest Nobel " \
            "laureate."
    facts = {"She was Austria's youngest Nobel laureate.":
             ["Marie Curie was Austria's youngest Nobel laureate."]}
    fixed, engine = decode(draft, facts, corpus=LAUREATE_CORPUS, choose=pick("France"))
    assert fixed.answer == draft.replace("Austria", "France")
    assert fixed.trace.ruled("choose.swap", "f1.0")[0].after == "France"
    assert "'France'" in fixed.trace.ruled("choose.after_frame", "f1.0")[0].detail
    assert "Pierre Curie" not in str(fixed.trace.fact("f1.0").slots)  # "with": no frame
    off, engine = decode(draft, facts, corpus=LAUREATE_CORPUS, choose=pick("France"),
                         rules={"choose.after_frame": False})
    assert off.answer == draft and not off.trace.ruled("choose.swap")
    assert not off.trace.ruled("choose.after_frame")


BORN = LocalCorpus.from_texts({"a.txt": "Moses Davis is a Jamaican musician. Davis was born in "
                                        "the Waterhouse district of Kingston in 1973. He "
                                        "married in 2006."})


def test_a_dates_wrong_year_is_swapped_where_the_evidence_gives_the_year_alone():
    """wikipedia_dev.json, Beenie Man, K = 2: the evidence gives the birth year, no birth
    date, and names the birth far from its year ("born in the Waterhouse district of Kingston
    in 1973")."""
    from serc_dspy.rules.base import RuleSet

    draft = "Moses Davis is a Jamaican musician. Moses Davis was born on 22 August 1966."
    facts = {}

    def run(corpus=BORN, **rules):  # (`choose.frame_first` is off by default)
        rules = {"choose.frame_first": True, **rules}
        return decode(draft, facts, corpus=corpus, choose=pick("1973"), rules=rules)[0]

    fixed = run()
    assert fixed.answer == draft.replace("1966", "1973")
    assert fixed.trace.ruled("choose.date_year", "f1.0")[0].after == "1966"
    assert fixed.trace.ruled("choose.frame_first", "f1.0")[0].after == "1973"
    assert fixed.trace.ruled("choose.swap", "f1.0")[0].before == "1966"
    # off: the date is offered no date, and stays unverified in the draft's words
    no_year = run(**{"choose.date_year": False})
    assert no_year.answer == draft and not no_year.trace.ruled("choose.date_year")
    assert no_year.trace.fact("f1.0").status == "unverified"
    # off (the default): "born" is seven words before the year, outside the five
    # `choose.same_frame` reads
    assert not RuleSet().on("choose.frame_first")
    held = run(**{"choose.frame_first": False})
    assert held.answer == draft and held.trace.ruled("choose.same_frame", "f1.0")
    assert not held.trace.ruled("choose.frame_first")
    # a clause between the birth and the year: another event's year, held back
    moved = LocalCorpus.from_texts({"a.txt": "Davis was born in the Waterhouse district of "
                                             "Kingston, and moved to Spanish Town in 1973."})
    other = run(corpus=moved)
    assert other.answer == draft and other.trace.ruled("choose.same_frame", "f1.0")
    # the evidence states the draft's year: its year is not what is wrong, and is not asked
    stated = LocalCorpus.from_texts({"a.txt": "Davis was born in Kingston in 1966. He moved "
                                              "to Spanish Town in 1973."})
    kept = run(corpus=stated)
    assert kept.answer == draft and not kept.trace.ruled("choose.date_year")


def test_a_year_the_passage_gives_as_a_bound_is_not_swapped_in():
    """wikipedia_dev.json, Gerardo Fernandez Fe, K = 2: a birth year became the 1959 of an
    anthology of "writers born after 1959"."""
    corpus = LocalCorpus.from_texts({"a.txt": "Moses Davis is a Jamaican musician. His songs "
                                              "were collected with those of writers born after "
                                              "1973."})
    draft = "Moses Davis is a Jamaican musician. Moses Davis was born on 22 August 1966."

    def run(**rules):
        return decode(draft, {}, corpus=corpus, choose=pick("1973"), rules=rules)[0]

    held = run()
    assert held.answer == draft and held.trace.ruled("choose.year_bound", "f1.0")
    off = run(**{"choose.year_bound": False})
    assert off.answer == draft.replace("1966", "1973") and not off.trace.ruled("choose.year_bound")


def test_a_place_is_not_swapped_for_a_name_that_is_no_place():
    """wikipedia_dev.json, Mike Trivisonno, K = 2: "on Cleveland radio station WTAM" became
    "on Sportsline radio station", from "a caller on the Sportsline radio show on WTAM"."""
    corpus = LocalCorpus.from_texts({"a.txt": "Mike Trivisonno was a radio host. He was a "
                                              "frequent caller on the Sportsline radio show on "
                                              "WTAM. Later he hosted a show on Cleveland "
                                              "radio."})
    draft = "Mike Trivisonno was a radio host. He hosted a show on Toledo radio station WTAM."
    facts = {"He hosted a show on Toledo radio station WTAM.":
             ["Mike Trivisonno hosted a show on Toledo radio station WTAM."]}

    def run(value, **rules):
        return decode(draft, facts, corpus=corpus, choose=pick(value), rules=rules)[0]

    held = run("Sportsline")
    assert held.answer == draft and held.trace.ruled("choose.place_for_place", "f1.0")
    off = run("Sportsline", **{"choose.place_for_place": False})
    assert "on Sportsline radio" in off.answer and not off.trace.ruled("choose.place_for_place")
    # a place for a place is swapped in as before
    fixed = run("Cleveland")
    assert "on Cleveland radio" in fixed.answer
    assert not fixed.trace.ruled("choose.place_for_place")


TEAM_CORPUS = LocalCorpus.from_texts({
    "a.txt": "In 1990 the school team of the county played with Tom Reed, Joe Park, Sam Lord, "
             "Lee Grant, Bob Hale and Kim West. Kim West, famous chess champion of Ohio.",
})
TEAM_QUESTION = "Which famous chess champion of Ohio played in the school team of the county?"


def test_a_short_answers_options_are_ranked_by_the_question_words_around_them():
    # the case that motivated it: HaluEval extra tuning item 20, whose answer was the fifth
    # name of a list and no option, while the question described it in the next sentence
    fixed, engine = _answer(TEAM_CORPUS, TEAM_QUESTION, "Ann Bell", "Kim West",
                            **{"choose.asked_rank": True})  # off by default
    assert fixed.answer == "Kim West" and fixed.trace.ruled("choose.asked_rank", "f0.0")
    assert _offered(engine)[:2] == ["Ann Bell", "Kim West"] and len(_offered(engine)) == 6
    off, engine = _answer(TEAM_CORPUS, TEAM_QUESTION, "Ann Bell", "Tom Reed")
    assert not off.trace.ruled("choose.asked_rank") and "Kim West" not in _offered(engine)


DIRECTOR_CORPUS = LocalCorpus.from_texts({
    "a.txt": "Mark Lester is an American film director. Ken Loach is an English film director.",
})
DIRECTOR_QUESTION = "Which director is American, Mark Lester or Ken Loach?"


def test_a_question_of_which_option_a_statement_holds_for_is_chosen_between_its_options():
    # the case that motivated it: HaluEval extra tuning items 27 and 28, typed by their head
    # word and offered the evidence's other names
    from serc_dspy.rules.two_options import either_question

    assert either_question(DIRECTOR_QUESTION)
    assert not either_question("Which airport is closer to Cleveland, Ohio, A Airport or B?")
    assert not either_question("Which band has more members, Saint Motel or Curve?")
    assert not either_question("Which film is the latest, Jaws or Alien?")
    assert either_question("Which forest is in Ohio, Wayne National Forest or Black Forest?")
    on = {"choose.either": True, "choose.stated_option": False}  # the chooser, not the words
    fixed, engine = _answer(DIRECTOR_CORPUS, DIRECTOR_QUESTION, "Ken Loach", "Mark Lester", **on)
    assert fixed.answer == "Mark Lester" and fixed.trace.ruled("choose.either", "f0.0")
    assert _offered(engine) == ["Ken Loach", "Mark Lester", "not stated"]
    kept, _ = _answer(DIRECTOR_CORPUS, DIRECTOR_QUESTION, "Mark Lester", "Mark Lester", **on)
    assert kept.answer == "Mark Lester" and kept.trace.facts[0].slots[0].ruling == "supported"
    off, engine = _answer(DIRECTOR_CORPUS, DIRECTOR_QUESTION, "Ken Loach", "Mark Lester",
                          **{"choose.stated_option": False})
    assert off.answer == "Ken Loach" and not off.trace.ruled("choose.either")
    assert not engine.of("ChooseValue")


UNIVERSITY_CORPUS = LocalCorpus.from_texts({
    "bc.txt": "Boston College is a private Jesuit research university located in the village of "
              "Chestnut Hill, Massachusetts. It has about 9,300 students.",
    "su.txt": "Stanford University is a private research university in Stanford, California. It "
              "was founded in 1885.",
})
UNIVERSITY_QUESTION = "Which private research university is located in Chestnut Hill, " \
                      "Massachusetts Boston College or Stanford University?"


def test_which_option_a_statement_holds_for_is_decided_by_the_question_words_each_states():
    # the case that motivated it: HaluEval extra tuning item 45 (the chooser fixed none of
    # such answers and broke a right one: `choose.either`, off)
    draft = "Stanford University is located in Chestnut Hill."
    on = {"choose.stated_option": True}  # off by default
    fixed, engine = _answer(UNIVERSITY_CORPUS, UNIVERSITY_QUESTION, draft, "Stanford University",
                            **on)
    assert fixed.answer == "Boston College is located in Chestnut Hill."
    assert fixed.trace.ruled("choose.stated_option", "f0.0") and not engine.of("ChooseValue")
    kept, engine = _answer(UNIVERSITY_CORPUS, UNIVERSITY_QUESTION, "Boston College",
                           "Stanford University", **on)
    assert kept.answer == "Boston College" and not engine.of("ChooseValue")
    assert kept.trace.facts[0].slots[0].ruling == "supported"
    denied = "Stanford University is not in Massachusetts."
    negated, _ = _answer(UNIVERSITY_CORPUS, UNIVERSITY_QUESTION, denied, "Stanford University",
                         **on)
    assert negated.answer == denied and negated.trace.facts[0].slots[0].ruling == "unverified"
    off, _ = _answer(UNIVERSITY_CORPUS, UNIVERSITY_QUESTION, draft, "Stanford University")
    assert off.answer == draft and not off.trace.ruled("choose.stated_option")



def _read_options(corpus, question, draft, stated, dead=(), **rules):
    """A short answer decoded with each option's claim read as stated ("yes") where it is
    answered by an option in `stated`, as "opposite" otherwise, and its call failing where
    the option is in `dead`; (result, engine)."""
    def read(inputs):
        claim = inputs["claim"].rsplit("Answer: ", 1)[-1]  # a bare name's claim is the question
        if any(claim.startswith(option) for option in dead):
            raise ConnectionError("the LM server went away")
        yes = any(claim.startswith(option) for option in stated)
        return {"sentence": 1, "stance": "yes" if yes else "opposite"}

    return _answer(corpus, question, draft, "not stated", read=read, **rules)


def test_which_option_a_statement_holds_for_is_read_against_each_options_own_sentences():
    # the case that motivated it: HaluEval comparison tuning drafts (cmp51), undecided by
    # dates, amounts or the question's words counted
    on = {"choose.option_claims": True}  # on by default
    draft = "Stanford University is located in Chestnut Hill."
    fixed, engine = _read_options(UNIVERSITY_CORPUS, UNIVERSITY_QUESTION, draft,
                                  {"Boston College"}, **on)
    assert fixed.answer == "Boston College is located in Chestnut Hill."
    assert fixed.trace.ruled("choose.option_claims", "f0.0")
    # the answer's sentence, and the same sentence with the other option in its slot
    claims = [call["inputs"]["claim"] for call in engine.of("ChooseSentence")]
    assert claims == [draft, "Boston College is located in Chestnut Hill."]
    assert not engine.of("ChooseValue")
    # each claim is read against its own option's sentences only
    shown = [call["inputs"]["sentences"] for call in engine.of("ChooseSentence")]
    assert "Stanford, California" in shown[0] and "Chestnut Hill" not in shown[0]
    assert "Chestnut Hill" in shown[1] and "Stanford" not in shown[1]
    kept, engine = _read_options(UNIVERSITY_CORPUS, UNIVERSITY_QUESTION, "Boston College",
                                 {"Boston College"}, **on)
    assert kept.answer == "Boston College" and kept.trace.facts[0].slots[0].ruling == "supported"
    # a bare name has no sentence: its claims are the question answered by each option
    claims = [call["inputs"]["claim"] for call in engine.of("ChooseSentence")]
    assert claims == [f"{UNIVERSITY_QUESTION} Answer: {o}." for o in ("Boston College",
                                                                       "Stanford University")]
    # the other option's reading failed: no support from half a reading, and no verdict
    dead, _ = _read_options(UNIVERSITY_CORPUS, UNIVERSITY_QUESTION, "Boston College",
                            {"Boston College"}, dead={"Stanford University"}, **on)
    assert dead.answer == "Boston College" and dead.trace.facts[0].verdict is None
    both, _ = _read_options(UNIVERSITY_CORPUS, UNIVERSITY_QUESTION, draft,
                            {"Boston College", "Stanford University"}, **on)
    assert both.answer == draft and both.trace.facts[0].slots[0].ruling == "unverified"
    neither, _ = _read_options(UNIVERSITY_CORPUS, UNIVERSITY_QUESTION, draft, set(), **on)
    assert neither.answer == draft and neither.trace.ruled("choose.option_claims", "f0.0")
    denied = "Stanford University is not in Massachusetts."
    negated, engine = _read_options(UNIVERSITY_CORPUS, UNIVERSITY_QUESTION, denied,
                                    {"Boston College"}, **on)
    assert negated.answer == denied and not engine.of("ChooseSentence")
    off, engine = _read_options(UNIVERSITY_CORPUS, UNIVERSITY_QUESTION, draft,
                                {"Boston College"}, **{"choose.option_claims": False})
    assert off.answer == draft and not off.trace.ruled("choose.option_claims")
    assert not engine.of("ChooseSentence")


MUSIC_CORPUS = LocalCorpus.from_texts({
    "a.txt": "Blue Sky was recorded in 1971 by The Hollows of Hessen. The Hollows played "
             "skiffle blues, a music born in the Mississippi Delta.",
})
MUSIC_QUESTION = "What music did the band that recorded Blue Sky play?"


def _music(reading, choose, draft="Jazz.", **rules):
    """A short answer to `MUSIC_QUESTION`, the model reading `reading` as its answer."""
    turns = iter(choose if isinstance(choose, list) else [choose] * 9)
    lm, engine = scripted_lm(handlers(ChooseValue=lambda inputs: pick(next(turns))(inputs),
                                      ReadAnswer=lambda inputs: {"answer": reading}))
    program = SERC(retriever=MUSIC_CORPUS, top_k=3, verdicts="choose", evidence="passages",
                   queries="facts", reconstruct="minimal", rules=rules)
    with dspy.context(lm=lm, adapter=StrictJSONAdapter()):
        return program(question=MUSIC_QUESTION, draft=draft), engine


def test_a_short_answers_options_hold_the_words_the_model_reads_as_its_answer():
    # the case that motivated it: HaluEval extra tuning items 26, 48 and 57, whose right
    # value was no pattern's option (a lower-case kind of thing; a city with its state)
    fixed, engine = _music("Skiffle Blues.", "skiffle blues")
    assert fixed.trace.ruled("choose.read_answer", "f0.0")
    # offered in the passage's spelling, right after the draft's own value
    assert _offered(engine)[:2] == ["Jazz", "skiffle blues"]
    assert fixed.trace.ruled("choose.swap", "f0.0") and "skiffle blues" in fixed.answer
    assert [c["inputs"]["question"] for c in engine.of("ReadAnswer")] == [MUSIC_QUESTION]
    # off: no reading is asked, and the patterns' options stand alone
    off, engine = _music("Skiffle Blues.", "skiffle blues", **{"choose.read_answer": False})
    assert not off.trace.ruled("choose.read_answer") and not engine.of("ReadAnswer")
    assert "skiffle blues" not in _offered(engine) and off.answer == "Jazz."


def test_a_reading_the_evidence_does_not_hold_adds_no_option():
    # a reading from the model's memory, not from the passages, is never an option
    kept, engine = _music("bebop", "bebop")
    ruling = next(r for r in kept.trace.rulings if r.rule == "choose.read_answer")
    assert "not found in the evidence" in ruling.detail
    assert "bebop" not in _offered(engine) and kept.answer == "Jazz."


def test_a_short_answer_the_evidence_states_is_not_read_again():
    # a right answer (its value stands in a passage) costs no reading call
    right, engine = _music("skiffle blues", "skiffle blues", draft="Skiffle blues.")
    assert not engine.of("ReadAnswer") and not right.trace.ruled("choose.read_answer")


def test_two_orders_that_disagree_take_the_value_the_model_read_as_the_answer():
    split = ["skiffle blues", "The Hollows"]  # the first order, then the second
    fixed, _ = _music("skiffle blues", split)
    assert fixed.trace.ruled("choose.read_vote", "f0.0") and "skiffle blues" in fixed.answer
    # off: the orders' disagreement leaves the answer unverified, in its own words
    off, _ = _music("skiffle blues", split, **{"choose.read_vote": False})
    assert not off.trace.ruled("choose.read_vote") and off.answer == "Jazz."
    # neither order chose the reading: no vote
    other, _ = _music("skiffle blues", ["Hessen", "The Hollows"])
    assert not other.trace.ruled("choose.read_vote") and other.answer == "Jazz."


def test_a_stated_answer_yields_to_a_rival_chosen_twice_that_the_model_also_reads():
    # HaluEval extra tuning items 60, 72, 73, 88: a hallucinated answer is another value the
    # same evidence states, so `choose.own_stated` held back the right rival chosen twice
    draft, ON = "Mississippi Delta.", {"choose.read_rival": True}  # off by default
    rival = "Hollows of Hessen"
    fixed, engine = _music("The Hollows of Hessen.", rival, draft=draft, **ON)
    assert fixed.trace.ruled("choose.read_rival", "f0.0") and fixed.answer == rival + "."
    assert not fixed.trace.ruled("choose.own_stated") and len(engine.of("ReadAnswer")) == 1
    # the model reads the answer's own value, or a third: the answer stays, held back
    for reading in ("the Mississippi Delta", "skiffle blues", "not stated"):
        kept, _ = _music(reading, rival, draft=draft, **ON)
        assert kept.trace.ruled("choose.own_stated") and kept.answer == draft
        assert not kept.trace.ruled("choose.read_rival")
    # off (the default): no reading is asked
    off, engine = _music("The Hollows of Hessen", rival, draft=draft)
    assert off.trace.ruled("choose.own_stated") and not engine.of("ReadAnswer")


def _rival_read(stated, draft="The band played Mississippi Delta.", dead=(), **rules):
    """`MUSIC_QUESTION` answered by `draft`, whose value the evidence states, with "Hollows
    of Hessen" chosen in both orders; each claim read as stated ("yes") where its value is
    in `stated`, else "opposite", and its call failing where it is in `dead`; (result,
    engine)."""
    def read(inputs):
        if any(value in inputs["claim"] for value in dead):
            raise ConnectionError("the LM server went away")
        yes = any(value in inputs["claim"] for value in stated)
        return {"sentence": 1, "stance": "yes" if yes else "opposite"}

    lm, engine = scripted_lm(handlers(ChooseValue=pick("Hollows of Hessen"),
                                      ChooseSentence=read))
    program = SERC(retriever=MUSIC_CORPUS, top_k=3, verdicts="choose", evidence="passages",
                   queries="facts", reconstruct="minimal", rules=rules)
    with dspy.context(lm=lm, adapter=StrictJSONAdapter()):
        return program(question=MUSIC_QUESTION, draft=draft), engine


def test_a_held_rival_replaces_a_stated_answer_only_where_its_claim_alone_is_stated():
    # HaluEval extra tuning items 242, 243, 376, 380: the evidence states a wrong answer in
    # another role, so `choose.own_stated` held back the right rival chosen in both orders
    draft = "The band played Mississippi Delta."
    fixed, engine = _rival_read({"Hollows of Hessen"})
    assert fixed.answer == "The band played Hollows of Hessen."
    ruling = fixed.trace.ruled("choose.rival_claims", "f0.0")
    assert ruling and ruling[0].after == "Hollows of Hessen"
    assert not fixed.trace.ruled("choose.own_stated")
    # the claims: the answer's sentence, and the same with the rival in its slot, each read
    # against the sentences naming its own value
    calls = engine.of("ChooseSentence")
    assert [c["inputs"]["claim"] for c in calls] == [draft, "The band played Hollows of Hessen."]
    assert "Mississippi Delta" in calls[0]["inputs"]["sentences"]
    assert "Hollows of Hessen" in calls[1]["inputs"]["sentences"]
    # both claims stated, or neither: the answer is held, and the reading is on the trace
    for stated in ({"Hollows of Hessen", "Mississippi Delta"}, set()):
        kept, _ = _rival_read(stated)
        assert kept.answer == draft and kept.trace.ruled("choose.own_stated")
        assert kept.trace.ruled("choose.rival_claims", "f0.0")[0].after is None
    # the answer's reading failed: no reading says it is not stated, so it is held
    kept, _ = _rival_read({"Hollows of Hessen"}, dead={"Mississippi Delta"})
    assert kept.answer == draft and kept.trace.ruled("choose.own_stated")
    assert "failed" in kept.trace.ruled("choose.rival_claims", "f0.0")[0].detail
    # a bare value is not read (its claim would be the question itself), nor an answer that
    # negates something
    for bare in ("Mississippi Delta.", "The band never played the Mississippi Delta."):
        kept, engine = _rival_read({"Hollows of Hessen"}, draft=bare)
        assert kept.answer == bare and not engine.of("ChooseSentence")
        assert not kept.trace.ruled("choose.rival_claims")
    off, engine = _rival_read({"Hollows of Hessen"}, **{"choose.rival_claims": False})
    assert off.answer == draft and not engine.of("ChooseSentence")
    assert off.trace.ruled("choose.own_stated")


def test_a_name_the_question_gives_is_not_offered_as_its_answer():
    # HaluEval extra tuning item 160: "... which former member of the Eagles?" had the answer
    # "Glenn Frey." swapped for "Eagles." (read and chosen in both orders)
    kept, engine = _music("Blue Sky", "Blue Sky")
    ruling = kept.trace.ruled("choose.question_named", "f0.0")
    assert ruling and "'Blue Sky'" in ruling[0].detail
    assert "Blue Sky" not in _offered(engine) and kept.answer == "Jazz."
    # off: the question's own name is offered, chosen, and swapped in
    off, engine = _music("Blue Sky", "Blue Sky", **{"choose.question_named": False})
    assert "Blue Sky" in _offered(engine) and off.answer == "Blue Sky."


NETWORK_CORPUS = LocalCorpus.from_texts({
    "s.txt": "Bonds on Bonds is a reality show about the baseball player Barry Bonds. The show "
             "aired on ESPN in 2006.",
})


def _network(choose, **rules):
    """A short answer naming the show as its subject, the model reading the show's name as
    the network asked for."""
    lm, engine = scripted_lm(handlers(ChooseValue=pick(choose),
                                      ReadAnswer=lambda inputs: {"answer": "Bonds on Bonds"}))
    program = SERC(retriever=NETWORK_CORPUS, top_k=3, verdicts="choose", evidence="passages",
                   queries="facts", reconstruct="minimal", rules=rules)
    with dspy.context(lm=lm, adapter=StrictJSONAdapter()):
        return program(question="What network aired the reality show about the baseball "
                                "player who played for the Pirates?",
                       draft="Bonds on Bonds was aired on TNT."), engine


def test_a_value_the_draft_states_around_its_answer_is_not_offered_for_it():
    # HaluEval multi-turn tuning item 256: the show's name, read as the network, was chosen
    # in both orders and printed "Bonds on Bonds was aired on Bonds on Bonds."
    fixed, engine = _network("ESPN")
    ruling = fixed.trace.ruled("choose.draft_named", "f0.0")
    assert ruling and "'Bonds on Bonds'" in ruling[0].detail
    assert "Bonds on Bonds" not in _offered(engine) and "Barry Bonds" in _offered(engine)
    assert fixed.answer == "Bonds on Bonds was aired on ESPN."
    # off: the subject is offered, chosen, and swapped in for its own network
    off, engine = _network("Bonds on Bonds", **{"choose.draft_named": False})
    assert "Bonds on Bonds" in _offered(engine)
    assert off.answer == "Bonds on Bonds was aired on Bonds on Bonds."


NOBEL_CORPUS = LocalCorpus.from_texts({
    "n.txt": "Max Volmer was a German physical chemist. He worked with Otto Stern, who won the "
             "Nobel Prize in Physics in 1943.",
})


def test_an_answer_the_question_names_does_not_hold_back_a_rival():
    # HaluEval extra tuning item 164: "... associated with Max Volmer?" answered "Max Volmer
    # won the Nobel Prize in 1943.": the evidence states Max Volmer, as the question's subject
    question = "Who won a Nobel Prize in 1943 and is associated with Max Volmer?"
    draft = "Max Volmer won the Nobel Prize in 1943."
    # (the draft names only the question's names: `draft.no_value` would answer it afresh)
    fixed, _ = _answer(NOBEL_CORPUS, question, draft, "Otto Stern", **{"draft.no_value": False})
    assert fixed.trace.ruled("choose.named_answer", "f0.0")
    assert fixed.answer == "Otto Stern won the Nobel Prize in 1943."
    assert not fixed.trace.ruled("choose.own_stated")
    # off: the stated answer holds the rival back, and the answer stays as it was
    off, _ = _answer(NOBEL_CORPUS, question, draft, "Otto Stern",
                     **{"choose.named_answer": False, "draft.no_value": False})
    assert off.trace.ruled("choose.own_stated") and off.answer == draft
    # a question that offers options names both, and the answer is one of them: held back
    from serc_dspy.rules.asked import names_answer
    assert not names_answer("Who is older, Max Volmer or Otto Stern?", "Max Volmer")
    # an "other" question's slot may be its subject, not an answer ("Superheaven and
    # Oceansize have unique genres."): not this rule's
    assert not names_answer("Superheaven and Oceansize, are bands of which shared genre?",
                            "Superheaven")


def test_a_question_that_offers_options_keeps_them():
    from serc_dspy.core.trace import Candidate
    from serc_dspy.rules.asked import question_named
    options = [Candidate(value="Glenn Frey", origin="fact"), Candidate(value="Eagles")]
    assert question_named("Which former member of the Eagles sang it?", options) == ["Eagles"]
    for question in ("Which one sang it, Glenn Frey or the Eagles?",
                     "Which former member of the Eagles, Glenn Frey, sang it?"):
        assert question_named(question, options) == []
    # HaluEval extra tuning item 363: an "or" between verbs offers nothing
    assert question_named("Which policy favours those who suffer or have suffered from "
                          "discrimination, of which the Eagles is a form?", options) == ["Eagles"]
    assert question_named("Was the singer of it a democrat or a republican?", options) == []


POET_CORPUS = LocalCorpus.from_texts({
    "p.txt": "Patti Smith is an American singer-songwriter and poet. Her poetry collection "
             "Early Work appeared in 1994.",
})


def test_a_nationality_question_swaps_the_drafts_nationality_word():
    # HaluEval extra tuning item 200: "Patti Smith" was the slot, so "American", chosen in
    # both orders, was held back by `choose.own_stated` (the evidence names the singer)
    question = "What is the nationality of the singer who wrote the poetry collection Early Work?"
    fixed, _ = _answer(POET_CORPUS, question, "Patti Smith is Irish-American.", "American")
    assert fixed.answer == "Patti Smith is American."
    assert fixed.trace.ruled("choose.asked_nationality")
    off, _ = _answer(POET_CORPUS, question, "Patti Smith is Irish-American.", "American",
                     **{"choose.asked_nationality": False})
    assert off.answer == "Patti Smith is Irish-American."


def test_an_option_its_passage_names_in_full_is_read_against_that_passage():
    # cmp51 tuning item 14: the passage says "Kenneth Charles Loach", the question "Ken Loach"
    corpus = LocalCorpus.from_texts({
        "lester.txt": "Mark L. Lester (born November 26, 1946) is an American film director.",
        "loach.txt": "Kenneth Charles Loach (born 17 June 1936) is an English director.",
    })
    question = "Which director is American, Mark L. Lester or Ken Loach?"
    draft = "Ken Loach is the American director."
    fixed, engine = _read_options(corpus, question, draft, {"Mark L. Lester"})
    assert fixed.answer == "Mark L. Lester is the American director."
    shown = [call["inputs"]["sentences"] for call in engine.of("ChooseSentence")]
    assert "Kenneth Charles Loach" in shown[0] and "Lester" not in shown[0]
