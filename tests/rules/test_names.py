"""`rules.names`: when the firewall takes two descriptors for one entity without the judge."""

import pytest
from rules_helpers import CountingRetriever, run
from scripted import entity

from serc_dspy import SERC, LocalCorpus
from serc_dspy.rules import RuleSet
from serc_dspy.rules.names import asks_for_answer_entity, mentions, same_name

FIRES = {"firewall.placeholder", "firewall.same_name", "firewall.short_given_name",
         "firewall.asked_entity", "firewall.known_as", "firewall.named_subject",
         "firewall.evidence_in_answer", "firewall.refused_reset", "firewall.asked_answer",
         "firewall.echoed_reset", "firewall.query_on_demand", "firewall.asked_subject"}
QUIET = set(FIRES)


def test_the_same_name_passes_without_the_judge():
    trace = run()  # both descriptors say Marie Curie
    assert trace.ruled("firewall.same_name", "firewall") and not trace.firewall.reset
    other = run(EvidenceEntity=lambda i: entity("Pierre Curie", "physicist"))
    assert not other.ruled("firewall.same_name")


def test_the_questions_descriptor_is_read_only_where_a_rule_needs_it():
    # two descriptors with one name pass on their own: the question's would decide nothing
    same = run()
    assert same.ruled("firewall.query_on_demand") and not same.firewall.query_entity
    assert "query_entity" not in same.usage.steps and "answer_entity" in same.usage.steps
    other = run(EvidenceEntity=lambda i: entity("Pierre Curie", "physicist"))
    assert not other.ruled("firewall.query_on_demand") and other.firewall.query_entity
    assert other.usage.steps["query_entity"].calls == 1
    eager = run(program=SERC(retriever=CountingRetriever(),
                             rules={"firewall.query_on_demand": False}))
    assert eager.firewall.query_entity and eager.usage.steps["query_entity"].calls == 1
    assert eager.firewall.decision == same.firewall.decision and eager.subject == same.subject


def test_a_placeholder_descriptor_passes():
    trace = run(EvidenceEntity=lambda i: entity("Name", "Characteristic"))
    assert trace.ruled("firewall.placeholder") and not trace.firewall.reset
    assert not run().ruled("firewall.placeholder")


SHORT_ON = RuleSet({"firewall.short_given_name": True})
KNOWN_ON = RuleSet({"firewall.known_as": True})


def test_the_one_bio_name_rule_is_off_by_default_and_the_short_given_name_on():
    # found on one tuning-split bio, `firewall.known_as` decided nothing on 54 report-split
    # answers; `firewall.short_given_name` was found again on a second tuning bio
    assert not RuleSet().on("firewall.known_as")
    assert not mentions("Shon Seung-wan, known professionally as Wendy, is a singer.", "Wendy")
    assert RuleSet().on("firewall.short_given_name")
    assert same_name("Kim Burrell", "Kimberly Jean Burrell")


def test_mike_trivisonno_is_michael_joseph_trivisonno():
    # the case that motivated the nickname table: a clean bio of "Mike Trivisonno" opening
    # with "Michael Joseph Trivisonno" was reset; "Mike" does not begin "Michael"
    assert same_name("Mike Trivisonno", "Michael Joseph Trivisonno")
    assert same_name("Joey Vieira", "Joseph Douglas Vieira")
    assert not same_name("Mike Trivisonno", "Michael Joseph Trivisonno",
                         RuleSet({"firewall.short_given_name": False}))
    assert not same_name("Mike Trivisonno", "Mitchell Trivisonno")  # not its nickname
    assert not same_name("Mike Trivisonno", "Michael Jones")          # another surname


def test_kim_burrell_is_kimberly_jean_burrell():
    # the case that motivated it: a 1.5B judge called them two people
    assert same_name("Kim Burrell", "Kimberly Jean Burrell", SHORT_ON)
    assert not same_name("Kim Burrell", "Kimberly Jean Burrell",
                         RuleSet({"firewall.short_given_name": False}))
    assert not same_name("Kim Burrell", "Kimberly Jean Smith", SHORT_ON)
    decided_by: list[str] = []
    assert same_name("Kim Burrell", "Kimberly Jean Burrell", SHORT_ON, decided_by)
    assert decided_by == ["firewall.short_given_name"]
    decided_by.clear()  # a full name contained in the other needs no short form
    assert same_name("Marie Curie", "Marie Skłodowska Curie", SHORT_ON, decided_by)
    assert decided_by == []


def test_the_short_given_name_leaves_its_own_ruling_in_the_firewall():
    # it decides inside `firewall.same_name`, and its firing is recorded beside that one
    trace = run(program=SERC(retriever=CountingRetriever(),
                                 rules={"firewall.short_given_name": True}),
                AnswerEntity=lambda i: entity("Kim Burrell", "singer"),
                EvidenceEntity=lambda i: entity("Kimberly Jean Burrell", "singer"))
    assert trace.ruled("firewall.same_name", "firewall")
    assert trace.ruled("firewall.short_given_name", "firewall") and not trace.firewall.reset
    assert not run().ruled("firewall.short_given_name")


def test_beenie_man_named_by_his_birth_name_passes_as_the_asked_entity():
    # the case that motivated it: a draft opening with the subject's birth name was reset
    draft = ("Moses Anthony Davis, known professionally as Beenie Man, is a Jamaican deejay. "
             "He was born in Kingston in 1973.")
    corpus = LocalCorpus.from_texts({"b.txt": "Beenie Man is a Jamaican deejay born in "
                                              "Kingston in 1973 as Moses Anthony Davis."})
    trace = run(draft=draft, question="Tell me a bio of Beenie Man.",
                program=SERC(retriever=corpus),
                QueryEntity=lambda i: entity("Beenie Man"),
                AnswerEntity=lambda i: entity("Moses Anthony Davis", "deejay"),
                EvidenceEntity=lambda i: entity("Beenie Man", "Jamaican deejay"),
                SameEntity=lambda i: {"analysis": "", "same": "NO"})
    assert trace.ruled("firewall.asked_entity") and not trace.firewall.reset
    assert not run().ruled("firewall.asked_entity")


def test_wendy_counts_where_the_draft_gives_it_as_her_name():
    # the case that motivated it: a true bio of the singer Wendy, opening with her birth name
    text = "Shon Seung-wan, known professionally as Wendy, is a South Korean singer."
    assert mentions(text, "Wendy", KNOWN_ON)
    assert not mentions(text, "Wendy", RuleSet({"firewall.known_as": False}))
    assert not mentions("Wendy bought a house.", "Wendy", KNOWN_ON)  # a bare word: no
    decided_by: list[str] = []
    assert mentions(text, "Wendy", KNOWN_ON, decided_by)
    assert decided_by == ["firewall.known_as"]


def test_wendy_leaves_a_known_as_ruling_when_the_asked_entity_passes():
    draft = ("Shon Seung-wan, known professionally as Wendy, is a South Korean singer. "
             "She was born in Seongbuk District in 1994.")
    corpus = LocalCorpus.from_texts({"w.txt": "Wendy is a South Korean singer, born Shon "
                                              "Seung-wan in Seongbuk District in 1994."})
    trace = run(draft=draft, question="Tell me a bio of Wendy.", program=SERC(
                    retriever=corpus, rules={"firewall.known_as": True}),
                QueryEntity=lambda i: entity("Wendy"),
                AnswerEntity=lambda i: entity("Shon Seung-wan", "singer"),
                EvidenceEntity=lambda i: entity("Wendy", "South Korean singer"),
                SameEntity=lambda i: {"analysis": "", "same": "NO"})
    assert trace.ruled("firewall.asked_entity") and trace.ruled("firewall.known_as")
    assert not trace.firewall.reset
    off = run(draft=draft, question="Tell me a bio of Wendy.", program=SERC(
                  retriever=corpus, rules={"firewall.known_as": False}),
              QueryEntity=lambda i: entity("Wendy"),
              AnswerEntity=lambda i: entity("Shon Seung-wan", "singer"),
              EvidenceEntity=lambda i: entity("Wendy", "South Korean singer"),
              SameEntity=lambda i: {"analysis": "", "same": "NO"})
    assert not off.ruled("firewall.known_as") and not off.ruled("firewall.asked_entity")


def test_a_question_about_a_concept_skips_the_firewall():
    # the case that motivated it: "giant planets" and the passages' "Uranus", a reset answer
    trace = run(question="Why do the giant planets rotate faster than the terrestrial ones?")
    assert trace.ruled("firewall.named_subject") and not trace.firewall.reset
    assert not run().ruled("firewall.named_subject")  # "Tell me a bio of Marie Curie."


def test_an_answer_that_names_the_evidences_entity_passes():
    # the case that motivated it: Mondeca's tools, and passages about one of them
    draft = ("Mondeca develops tools for knowledge management. One of them is Intellilink, a "
             "tool for linking data from many sources.")
    corpus = LocalCorpus.from_texts({"i.txt": "Intellilink is a tool developed by Mondeca for "
                                              "linking data from many sources."})
    trace = run(draft=draft, question="What are the tools developed by Mondeca?",
                program=SERC(retriever=corpus), QueryEntity=lambda i: entity("Mondeca"),
                AnswerEntity=lambda i: entity("Mondeca", "software company"),
                EvidenceEntity=lambda i: entity("Intellilink", "a software company"),
                SameEntity=lambda i: {"analysis": "", "same": "NO"})
    assert trace.ruled("firewall.evidence_in_answer") and not trace.firewall.reset
    assert not run().ruled("firewall.evidence_in_answer")


PAPER_RESET = {"firewall.asked_subject": False}
"""The paper's reset of an answer about the asked entity (Marie Curie) for evidence about
another, which `firewall.asked_subject` would pass."""
MISMATCH = {"EvidenceEntity": lambda i: entity("Pierre Curie", "physicist"),
            "SameEntity": lambda i: {"analysis": "Another person.", "same": "NO"}}


@pytest.mark.parametrize(("grounded", "rule", "why"), [
    ("No verified information was found.", "firewall.refused_reset", "grounded answer refused"),
    # HaluEval extra tuning items 283, 311: "The Libertine" answered what The Libertine's
    # actor starred in
    ("Marie Curie.", "firewall.echoed_reset", "only repeats a name the question gives"),
])
def test_a_reset_whose_grounded_answer_says_nothing_keeps_the_answer_it_would_replace(
        grounded, rule, why):
    mismatch = {**MISMATCH, "GroundedAnswer": lambda i: {"answer": grounded}}
    trace = run(program=SERC(retriever=CountingRetriever(), rules=PAPER_RESET), **mismatch)
    assert trace.ruled(rule, "firewall") and not trace.firewall.reset
    assert why in trace.firewall.decision
    assert trace.fact("f0.0") is not None  # the draft was decoded, not the grounded answer
    # off, the grounded answer replaces the draft, as the paper's reset would
    off = run(program=SERC(retriever=CountingRetriever(), rules={rule: False, **PAPER_RESET}),
              **mismatch)
    assert off.firewall.reset and off.firewall.replaced_answer and not off.ruled(rule)
    # a grounded answer that says something is the reset's
    told = run(program=SERC(retriever=CountingRetriever(), rules=PAPER_RESET),
               **{**MISMATCH, "GroundedAnswer": lambda i: {
                   "answer": "Marie Curie was born in Warsaw in 1867."}})
    assert told.firewall.reset and not told.ruled(rule)


COLING = ("The general chair of COLING 2020 was Dan Jurafsky. He is a professor of linguistics "
          "at Stanford University. He has written a textbook on speech and language processing.")
COLING_CORPUS = {"c.txt": "Xiaodan Zhu was a co-chair at COLING 2020, the 28th International "
                          "Conference on Computational Linguistics, held online."}


def _coling(draft=COLING, **rules):
    return run(draft=draft, question="Who was the general chair of COLING 2020?",
               program=SERC(retriever=LocalCorpus.from_texts(COLING_CORPUS), rules=rules),
               QueryEntity=lambda i: entity("General Chair", "COLING 2020"),
               AnswerEntity=lambda i: entity("Dan Jurafsky", "professor"),
               EvidenceEntity=lambda i: entity("Xiaodan Zhu", "co-chair"),
               SameEntity=lambda i: {"analysis": "", "same": "NO"},
               GroundedAnswer=lambda i: {"answer": "Xiaodan Zhu."})


def test_a_long_answer_naming_the_asked_for_entity_is_not_reset_for_a_rival():
    # the case that motivated it: Factcheck-Bench tuning item 14, whose evidence was about
    # another chair; the reset threw every claim of the answer away
    assert asks_for_answer_entity("Who was the general chair of COLING 2020?", "Dan Jurafsky")
    assert not asks_for_answer_entity("Tell me a bio of Dan Jurafsky.", "Dan Jurafsky")
    assert not asks_for_answer_entity("Who is Dan Jurafsky?", "Dan Jurafsky")
    trace = _coling()
    assert trace.ruled("firewall.asked_answer", "firewall") and not trace.firewall.reset
    assert trace.received == COLING and "Xiaodan Zhu" in trace.firewall.decision
    off = _coling(**{"firewall.asked_answer": False})
    assert off.firewall.reset and not off.ruled("firewall.asked_answer")
    # with `draft.answer_sentence` on, a one-sentence answer is checked as the answer, not by
    # the firewall; read as prose, it is too short for this rule
    sentence = "The general chair of COLING 2020 was Dan Jurafsky."
    assert _coling(draft=sentence, **{"draft.answer_sentence": True}).ruled(
        "draft.answer_sentence")
    short = _coling(draft=sentence)  # the rule is off by default
    assert short.firewall.reset and not short.ruled("firewall.asked_answer")
    assert not run().ruled("firewall.asked_answer")  # a bio question names its subject


MONDECA = ("Mondeca develops software for managing knowledge. Its tools include a thesaurus "
           "manager and a semantic annotation platform. They are used by publishers.")
MONDECA_CORPUS = {"m.txt": "Intellilink Technologies developed data integration tools for banks."}


def _mondeca(draft=MONDECA, query="Mondeca", **rules):
    return run(draft=draft, question="What are the tools developed by Mondeca?",
               program=SERC(retriever=LocalCorpus.from_texts(MONDECA_CORPUS), rules=rules),
               QueryEntity=lambda i: entity(query, "tools"),
               AnswerEntity=lambda i: entity("Mondeca", "software company"),
               EvidenceEntity=lambda i: entity("Intellilink Technologies", "company"),
               SameEntity=lambda i: {"analysis": "", "same": "NO"},
               GroundedAnswer=lambda i: {"answer": "Intellilink Technologies sells software."})


def test_a_long_answer_about_the_entity_the_question_names_is_not_reset_for_the_evidences():
    # the case that motivated it: Factcheck-Bench tuning items 6 and 19, whose evidence was
    # about another entity than the one asked about and answered
    trace = _mondeca()
    assert trace.ruled("firewall.asked_subject", "firewall") and not trace.firewall.reset
    assert trace.received == MONDECA and "Intellilink" in trace.firewall.decision
    off = _mondeca(**{"firewall.asked_subject": False})
    assert off.firewall.reset and not off.ruled("firewall.asked_subject")
    assert off.received.startswith("Intellilink")
    # a short answer is the value asked for, which a reset may put right
    short = _mondeca(draft="Mondeca develops a thesaurus manager. It is used by publishers.")
    assert short.firewall.reset and not short.ruled("firewall.asked_subject")
    # the question's descriptor names another entity: the answer may be about the wrong one
    other = _mondeca(query="Mondeca Labs Group")
    assert other.firewall.reset and not other.ruled("firewall.asked_subject")
