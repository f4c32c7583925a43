"""`rules.draft`: a caller's short draft is checked as one claim."""

import dspy
from rules_helpers import CountingRetriever, run
from scripted import scripted_lm
from test_choice import pick
from test_serc import handlers

from serc_dspy import SERC, LocalCorpus, StrictJSONAdapter
from serc_dspy.rules.draft import (
    adds_nothing,
    denies_premise,
    gives_no_value,
    says_more,
    states_no_name,
    states_no_value,
)

FIRES = {"draft.short_claim", "draft.answer_sentence", "draft.read_sentence",
         "draft.sentence_as_prose", "draft.says_more",
         "draft.cold_start", "draft.no_info", "draft.shared_sentence",
         "draft.denies_premise", "draft.no_value", "draft.no_name"}
QUIET = set(FIRES)


def test_a_short_caller_draft_is_one_claim_and_a_long_one_is_not():
    trace = run(draft="Warsaw", question="Where was Marie Curie born?")
    ruling = trace.ruled("draft.short_claim", "answer")[0]
    assert ruling.before == "Warsaw" and "Where was Marie Curie born?" in ruling.after
    assert trace.short_draft and not trace.cold_start
    assert not run().ruled("draft.short_claim")
    off = run(draft="Warsaw", question="Where was Marie Curie born?",
              program=SERC(retriever=CountingRetriever(), rules={"draft.short_claim": False}))
    assert not off.ruled("draft.short_claim") and off.cold_start  # the paper's cold start


def test_the_models_refusal_is_grounded_by_the_cold_start_unless_the_rule_is_off():
    refusal = {"AnswerQuestion": lambda i: {"answer": "I don't know."}}
    trace = run(draft=None, **refusal)
    ruling = trace.ruled("draft.cold_start", "answer")[0]
    assert ruling.before == "I don't know." and "born in Warsaw" in ruling.after
    assert trace.cold_start and "born in Warsaw" in trace.received
    assert not run(draft=None).ruled("draft.cold_start")  # a long first answer: decoded
    off = run(draft=None, program=SERC(retriever=CountingRetriever(),
                                       rules={"draft.cold_start": False}), **refusal)
    assert not off.ruled("draft.cold_start") and not off.cold_start


def test_an_ungroundable_refusal_becomes_the_no_information_answer_unless_the_rule_is_off():
    refusing = {"AnswerQuestion": lambda i: {"answer": "I don't know."},
                "GroundedAnswer": lambda i: {"answer": "I don't know."}}
    trace = run(draft=None, **refusing)
    assert trace.status == "no_info" and trace.ruled("draft.no_info", "answer")
    assert trace.answer != "I don't know."
    assert not run(draft=None).ruled("draft.no_info")
    off = run(draft=None, program=SERC(retriever=CountingRetriever(),
                                       rules={"draft.no_info": False}), **refusing)
    assert off.status == "no_info" and off.answer == "I don't know."
    assert not off.ruled("draft.no_info")


def test_a_draft_denying_the_questions_premise_is_answered_from_the_passages():
    # HaluEval multi-turn tuning drafts 21 and 38: they deny the premise and state no value
    question = "In which city was Marie Curie, the physicist, born?"
    denial = "Marie Curie was not a physicist."
    trace = run(draft=denial, question=question)
    ruling = trace.ruled("draft.denies_premise", "answer")[0]
    assert ruling.before == denial and "born in Warsaw" in ruling.after
    assert trace.cold_start and "born in Warsaw" in trace.received
    # a grounded answer that denies too, or refuses, keeps the caller's draft
    for grounded in ("Marie Curie was not a physicist at all.", "I don't know."):
        kept = run(draft=denial, question=question,
                   GroundedAnswer=lambda i, g=grounded: {"answer": g})
        assert not kept.ruled("draft.denies_premise") and not kept.cold_start
        assert kept.received == denial and kept.status != "no_info"
    off = run(draft=denial, question=question, program=SERC(retriever=CountingRetriever(),
              rules={"draft.denies_premise": False, "draft.no_value": False}))
    assert not off.ruled("draft.denies_premise") and not off.cold_start
    # with only the premise rule off, the draft still names no city: `draft.no_value`
    other = run(draft=denial, question=question, program=SERC(
        retriever=CountingRetriever(), rules={"draft.denies_premise": False}))
    assert other.ruled("draft.no_value", "answer") and other.cold_start


def test_a_draft_stating_no_value_of_the_asked_kind_is_answered_from_the_passages():
    # HaluEval multi-turn tuning drafts 74 and 78: "who?" answered with no name at all
    question = "Which city was the physicist who won two Nobel Prizes born in?"
    empty = "The physicist was born in a large city."
    trace = run(draft=empty, question=question)
    ruling = trace.ruled("draft.no_value", "answer")[0]
    assert ruling.before == empty and "born in Warsaw" in ruling.after
    assert trace.cold_start and "Warsaw" in trace.answer
    # a grounded answer that names no city either keeps the caller's draft
    kept = run(draft=empty, question=question, GroundedAnswer=lambda i: {
        "answer": "The physicist was born in a city."})
    assert not kept.ruled("draft.no_value") and not kept.cold_start and kept.received == empty
    # nor does a short one with no city in it (extra tuning item 339: "Merimbula" to a
    # population question replaced the caller's sentence)
    kept = run(draft=empty, question=question, GroundedAnswer=lambda i: {
        "answer": "The capital."})
    assert not kept.ruled("draft.no_value") and not kept.cold_start and kept.received == empty
    # nor does one that only repeats the question's words (extra tuning item 283: "The
    # Libertine" to "What television series did the actor ... in The Libertine star in?")
    kept = run(draft=empty, question=question, GroundedAnswer=lambda i: {
        "answer": "The physicist who won two Nobel Prizes."})
    assert not kept.ruled("draft.no_value") and not kept.cold_start and kept.received == empty
    off = run(draft=empty, question=question, program=SERC(
        retriever=CountingRetriever(), rules={"draft.no_value": False}))
    assert not off.ruled("draft.no_value") and not off.cold_start


def test_an_answer_of_the_questions_own_words_adds_nothing():
    question = ("What television series did the actor that Penny Layden performed with in The "
                "Libertine star in?")
    assert adds_nothing(question, "The Libertine")
    assert adds_nothing(question, "The actor Penny Layden performed with.")
    assert not adds_nothing(question, "21 Jump Street")


def test_an_answer_of_any_length_gives_the_asked_value_or_does_not():
    population = ("Tura Beach, New South Wales is a suburb of a town that had what population "
                  "at the 2016 census?")
    assert gives_no_value(population, "Merimbula")
    assert not states_no_value(population, "Merimbula")  # a bare value to a caller's draft
    assert not gives_no_value(population, "3,544")
    assert not gives_no_value(population, "About three thousand.")
    assert not gives_no_value("Which city was Marie Curie born in?", "Warsaw")
    # a question of another kind, or naming two options, is not read
    assert not gives_no_value("What network aired the show?", "The show")
    assert not gives_no_value("Who was born first, Ann Lee or Bob Ray?", "The first")


def test_a_sentence_states_the_asked_value_or_does_not():
    who = "Who funds the bowling team that includes the school bus driver?"
    assert states_no_value(who, "The school teachers funded the bowling team.")
    assert not states_no_value(who, "Mr. Burns funds the bowling team.")
    assert not states_no_value(who, "Mr. Burns")  # a value, not a sentence around one
    when = "In what year was the creator of the Simpsons theme born?"
    assert states_no_value(when, "Alf Clausen composed the theme.")  # a name, no year
    assert not states_no_value(when, "Alf Clausen was born in 1941.")
    many = "How many weeks did the single spend at number one?"
    assert not states_no_value(many, "The single spent ten weeks at number one.")
    assert states_no_value(many, "The lead single never charted.")
    # a name the question gives is no answer to it; a two-option question is answered by one
    assert states_no_value("Who is associated with Max Volmer?", "Max Volmer won a prize.")
    assert not states_no_value("Which musician, Edwyn Collins or Jimmie Ross, played bass?",
                               "Edwyn Collins played the bass guitar.")
    assert not states_no_value("What genre is the band?", "The band plays loud music.")
    # a kind of person is no one's name (multi-turn tuning drafts 272 and 49); an
    # organisation after "the" is a name
    assert states_no_value("Which artist is from Columbus, Ohio?", "The artist is an Ohioan.")
    assert states_no_value("What actor starred in The Messenger?",
                           "The Messenger starred an Irish actor.")
    assert not states_no_value("Who published the journal?",
                               "It was published by the American Chemical Society.")


def test_a_premise_denial_says_no_more_than_the_questions_words_and_a_negation():
    asked = "Which state are the drug stores, of which the CEO is Warren Bryant, located in?"
    assert denies_premise(asked, "Warren Bryant was not a CEO.")
    assert denies_premise("Which New York county has the school's sister school?",
                          "There is no sister school.")
    assert not denies_premise(asked, "Warren Bryant was not a CEO in Hawaii or Ohio.")
    assert not denies_premise(asked, "Hawaii.")  # no negation
    assert not denies_premise("Was Warren Bryant a CEO?", "Warren Bryant was not a CEO.")
    assert not denies_premise(asked, "No, Warren Bryant was not a CEO.")
    # to a question of what two things share, "different" denies it (multi-turn draft 158)
    shared = "Jane's Addiction and Weeping Willows, play which genre of music?"
    assert denies_premise(shared, "Jane's Addiction and Weeping Willows play completely "
                                  "different genres.")
    assert not denies_premise("Which genre of music does Jane's Addiction play?",
                              "Jane's Addiction plays a different genre.")
    # a negation word inside a title is no denial
    assert not denies_premise("Who composed the music of Nakayama Miho no Tokimeki High "
                              "School?", "Nakayama Miho no Tokimeki High School had music.")


def test_a_one_sentence_draft_stating_the_asked_value_is_checked_as_the_answer():
    question = "In what year was Marie Curie born?"
    sentence = "Marie Curie, the physicist and chemist, was born in the city of Warsaw in 1868."

    def on(draft, asked=question):  # (the prose fallback off: the sentence check alone)
        return run(draft=draft, question=asked, program=SERC(
            retriever=CountingRetriever(), rules={"draft.sentence_as_prose": False}))
    trace = on(sentence)
    ruling = trace.ruled("draft.answer_sentence", "answer")[0]
    assert ruling.before == sentence and trace.short_draft and not trace.cold_start
    assert trace.firewall.error.startswith("skipped")
    # prose that states no value of the asked kind, only a year the question gives itself,
    # or a sentence of over 25 words is decoded as prose
    for draft, asked in (
            ("Marie Curie, the physicist and chemist, was born in the city of Warsaw.", question),
            (sentence, "In what year did Marie Curie, born in 1868, move to Paris?"),
            (sentence[:-1] + ", the capital of Poland, to a family of teachers who had lost "
             "their property in the uprisings.", question)):
        prose = on(draft, asked)
        assert not prose.ruled("draft.answer_sentence") and not prose.short_draft
    off = run(draft=sentence, question=question, program=SERC(
        retriever=CountingRetriever(), rules={"draft.answer_sentence": False}))
    assert not off.ruled("draft.answer_sentence") and not off.short_draft


RACE = LocalCorpus.from_texts({"r.txt": "The 1976 German Grand Prix was won by James Hunt. "
                                        "Hunt retired from racing in 1979."})
RACE_QUESTION = "The 1976 German Grand Prix was won by a driver who retired in what year?"
RACE_DRAFT = "The 1976 German Grand Prix was won by a driver who retired in 1980."


def _race(choose, **rules):
    lm, engine = scripted_lm(handlers(ChooseValue=choose))
    program = SERC(retriever=RACE, top_k=3, verdicts="choose", evidence="passages",
                   queries="facts", reconstruct="minimal", rules=rules)
    with dspy.context(lm=lm, adapter=StrictJSONAdapter()):
        return program(question=RACE_QUESTION, draft=RACE_DRAFT), engine


def test_a_sentence_answer_the_slot_check_leaves_open_is_decoded_again_as_prose():
    def by_position(inputs):  # the first option in each order: the two orders disagree
        return {"choice": "A"}
    result, engine = _race(by_position)
    trace = result.trace
    ruling = trace.ruled("draft.sentence_as_prose", "answer")[0]
    assert "'1980'" in ruling.detail and "disagree" in ruling.detail
    assert not trace.short_draft and trace.ruled("draft.answer_sentence", "answer")
    # the prose decoder ran: the fact extractor after the two choices, its own facts in the
    # trace, and the sentence check's rulings moved to the answer node with where they were
    names = [call["signature"] for call in engine.calls]
    assert names.index("AtomicFacts") > names.index("ChooseValue")
    assert trace.facts and all(not s.note.startswith("the two orders") for f in trace.facts
                               for s in f.slots)
    moved = [r for r in trace.ruled("choose.") if "(the sentence check, on f0.0)" in r.detail]
    assert moved and all(r.node == "answer" for r in moved)
    kept, _ = _race(by_position, **{"draft.sentence_as_prose": False})
    assert kept.answer == RACE_DRAFT and kept.trace.short_draft
    assert not kept.trace.ruled("draft.sentence_as_prose")


def test_a_sentence_answer_the_slot_check_corrects_is_not_decoded_again():
    result, engine = _race(pick("1979"))
    assert result.answer == RACE_DRAFT.replace("1980", "1979")
    assert not result.trace.ruled("draft.sentence_as_prose") and result.trace.short_draft
    assert "AtomicFacts" not in {call["signature"] for call in engine.calls}


def test_a_supported_answer_that_says_more_is_decoded_again_as_prose():
    # HaluEval extra tuning item 151: "Martha Coolidge, a Canadian director with over 50
    # years of experience ..." names the right person; its slot check supported her and
    # printed the rest
    more = "Hunt retired in 1979 after losing his licence to the stewards."

    def ask(draft, **rules):
        lm, engine = scripted_lm(handlers(ChooseValue=pick("1979")))
        program = SERC(retriever=RACE, top_k=3, verdicts="choose", evidence="passages",
                       queries="facts", reconstruct="minimal", rules=rules)
        with dspy.context(lm=lm, adapter=StrictJSONAdapter()):
            return program(question=RACE_QUESTION, draft=draft), engine
    result, engine = ask(more)
    ruling = result.trace.ruled("draft.says_more", "answer")[0]
    assert "'1979'" in ruling.detail and not result.trace.short_draft
    assert engine.of("AtomicFacts")  # the prose decoder ran after the supported slot
    # its value is the evidence's: the firewall passes it, and no reset throws it away
    # (multi-turn tuning draft 108: a supported birth date reset to a wrong name)
    assert result.trace.firewall.decision.startswith("passed: the slot check supported")
    assert not engine.of("SameEntity") and not engine.of("GroundedAnswer")
    # not for a question of another kind, whose slot may be any name in the draft
    assert says_more(RACE_QUESTION, more, ["1979"])
    assert not says_more("Hunt drove for which team in 1979?", more, ["1979"])
    # a draft that says its value and the question's words only, or the rule off: kept
    for draft, rules in ((RACE_DRAFT.replace("1980", "1979"), {}),
                         ("Hunt retired in 1979.", {}),
                         (more, {"draft.says_more": False})):
        kept, engine = ask(draft, **rules)
        assert kept.answer == draft and kept.trace.short_draft
        assert not kept.trace.ruled("draft.says_more") and not engine.of("AtomicFacts")


FILMS = LocalCorpus.from_texts({"f.txt": "Salaam Bombay is a 1988 film written by Sooni "
                                         "Taraporevala. It was nominated for the Academy "
                                         "Award for Best Foreign Language Film."})
FILM_QUESTION = "Which Oscar-nominated film was written by Sooni Taraporevala?"
FILM_DRAFT = "The Namesake was an Oscar-nominated film written by Sooni Taraporevala."


def _film(reading, **rules):
    lm, engine = scripted_lm(handlers(ChooseValue=pick("Salaam Bombay"),
                                      ReadAnswer=lambda i: {"answer": reading}))
    program = SERC(retriever=FILMS, top_k=3, verdicts="choose", evidence="passages",
                   queries="facts", reconstruct="minimal", rules=rules)
    with dspy.context(lm=lm, adapter=StrictJSONAdapter()):
        result = program(question=FILM_QUESTION, draft=FILM_DRAFT)
    return result, [call["signature"] for call in engine.calls]


def test_a_one_sentence_draft_is_read_and_its_one_detail_of_the_readings_kind_is_its_slot():
    # the question's type word ("film") names no kind of value the draft's title is, so
    # `draft.answer_sentence` does not take it; the reading does
    result, calls = _film("Salaam Bombay")
    ruling = result.trace.ruled("draft.read_sentence", "answer")[0]
    assert (ruling.before, ruling.after) == ("The Namesake", "Salaam Bombay")
    assert result.trace.short_draft and not result.trace.ruled("draft.answer_sentence")
    assert result.answer == FILM_DRAFT.replace("The Namesake", "Salaam Bombay")
    # one reading, reused by the choice: no second call, and no prose decoder
    assert calls.count("ReadAnswer") == 1 and "AtomicFacts" not in calls
    read = result.trace.ruled("choose.read_answer")[0]
    assert read.after == "Salaam Bombay" and "offered" in read.detail


def test_a_reading_in_no_passage_or_the_rule_off_leaves_the_draft_to_the_prose_path():
    for reading in ("not stated", "Mississippi Masala"):  # no passage holds the second
        result, calls = _film(reading)
        assert not result.trace.ruled("draft.read_sentence") and not result.trace.short_draft
        assert calls.count("ReadAnswer") == 1 and "AtomicFacts" in calls
        assert any("decoded as prose" in e.message for e in result.trace.events)
    def dead(inputs):
        raise RuntimeError("the reading's server is down")
    lm, _ = scripted_lm(handlers(ReadAnswer=dead))
    with dspy.context(lm=lm, adapter=StrictJSONAdapter()):
        failed = SERC(retriever=FILMS, top_k=3, verdicts="choose", evidence="passages",
                      queries="facts")(question=FILM_QUESTION, draft=FILM_DRAFT)
    assert not failed.trace.ruled("draft.read_sentence") and not failed.trace.short_draft
    assert any("the draft's reading failed" in e.message for e in failed.trace.events)
    assert not any("read as" in e.message for e in failed.trace.events)
    off, calls = _film("Salaam Bombay", **{"draft.read_sentence": False})
    assert "ReadAnswer" not in calls and not off.trace.ruled("draft.read_sentence")


def test_a_sentence_naming_nothing_to_a_what_question_is_answered_from_the_passages():
    # HaluEval multi-turn tuning draft 54: "In what show ...?" answered "... in a popular
    # romantic comedy series.", which named no show for the checks to choose against
    question = "In what show did the physicist who won two Nobel Prizes appear?"
    empty = "The physicist appeared in a popular documentary series about science."
    assert states_no_name(question, empty)
    trace = run(draft=empty, question=question)
    ruling = trace.ruled("draft.no_name", "answer")[0]
    assert ruling.before == empty and trace.cold_start and trace.received != empty
    # a grounded answer that names nothing either keeps the caller's draft
    kept = run(draft=empty, question=question, GroundedAnswer=lambda i: {
        "answer": "The physicist appeared in a series."})
    assert not kept.ruled("draft.no_name") and kept.received == empty
    off = run(draft=empty, question=question, program=SERC(
        retriever=CountingRetriever(), rules={"draft.no_name": False}))
    assert not off.ruled("draft.no_name") and not off.cold_start


def test_what_a_sentence_to_a_what_question_names():
    show = "In what show did Cynthia Nixon win the 2004 Emmy Award?"
    assert states_no_name(show, "Cynthia Nixon won the 2004 Emmy Award for a popular comedy.")
    assert not states_no_name(show, "Cynthia Nixon won the 2004 Emmy for Sex and the City.")
    # a kind is no name; a title may open on "A"
    assert states_no_name(show, "Cynthia Nixon won it for a British comedy series.")
    assert not states_no_name("What novel is dedicated to Lynne Spears?", "A Mother's Gift")
    # a short phrase with no verb is a value of a sort; a common-noun type, a shared value
    # and the typed kinds (`draft.no_value`) are asked otherwise
    assert not states_no_name("What is the historical name of the acid?", "oil of vitriol")
    assert not states_no_name("What genre is the band?", "The band plays very loud music.")
    assert not states_no_name("What profession do Nicholas Ray and Elia Kazan have in "
                              "common?", "They were both known for their own styles.")
    assert not states_no_name("Who wrote the song?", "The song was written by a local band.")
