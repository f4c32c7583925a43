"""`rules.guards`: a rewrite or a polish may restate its input, never change it; each refusal
and each fallback is a ruling."""

import pytest
from rules_helpers import every_rule_on, run
from test_serc import S0

from serc_dspy.rules import RuleSet
from serc_dspy.rules.guards import polish_problem, rewrite_problem

FACTS = ["Marie Curie was born in Warsaw.", "Marie Curie studied physics."]
REWRITE = "Marie Curie was born in Warsaw and studied physics."
DRAFT = "Marie Curie was born in Warsaw. She studied physics at the Sorbonne in Paris in 1891."
FIRES = {"rewrite.too_short", "rewrite.runaway", "rewrite.unfaithful", "rewrite.lost_content",
         "rewrite.orphan", "rewrite.in_place", "rewrite.state_facts", "rewrite.keep_sentence",
         "polish.too_short", "polish.refusal", "polish.drift", "polish.unfaithful",
         "polish.lost_content", "polish.runaway", "polish.layout", "polish.in_place",
         "decode.too_short"}
QUIET = set(FIRES)


@pytest.mark.parametrize("rule, text, orphans", [
    ("rewrite.too_short", "Ok.", []),
    ("rewrite.runaway", "Marie Curie was born in Warsaw. " * 20, []),
    ("rewrite.unfaithful", "Marie Curie was born in Warsaw in 1867 and studied physics.", []),
    ("rewrite.lost_content", "Marie Curie was born in Warsaw and studied.", []),
    # the case that motivated it: "1867" of the draft's sentence, in no fact
    ("rewrite.orphan", REWRITE, ["1867"]),
])
def test_each_rewrite_guard_refuses_its_case_and_passes_a_faithful_rewrite(rule, text, orphans):
    assert rewrite_problem(text, FACTS, orphans, "Marie Curie", every_rule_on())[0] == rule
    assert rewrite_problem(REWRITE, FACTS, [], "Marie Curie", every_rule_on()) is None
    off = rewrite_problem(text, FACTS, orphans, "Marie Curie", RuleSet({rule: False}))
    assert off is None or off[0] != rule


@pytest.mark.parametrize("rule, answer", [
    ("polish.too_short", "Marie Curie."),
    ("polish.refusal", "I'm sorry, I cannot help with polishing this text about Marie Curie "
                       "and Warsaw, physics, the Sorbonne, Paris and 1891."),
    ("polish.drift", "The weather in Lyon is mild in spring and the river is calm and wide."),
    ("polish.unfaithful", DRAFT.replace("1891", "1893")),
    ("polish.lost_content", DRAFT.replace("studied physics", "was expelled from physics")),
    ("polish.runaway", DRAFT + " And more." * 40),
])
def test_each_polish_guard_refuses_its_case_and_passes_a_faithful_polish(rule, answer):
    assert polish_problem(answer, DRAFT, "Marie Curie", every_rule_on())[0] == rule
    assert polish_problem(DRAFT.replace(". She", ", and she"), DRAFT, "Marie Curie",
                          every_rule_on()) is None


def test_a_refused_rewrite_is_replaced_by_the_corrections_in_place():
    placed = run(RewriteSentence=lambda i: {"sentence": "Ok."})
    assert placed.ruled("rewrite.too_short", "s0") and placed.ruled("rewrite.in_place", "s0")
    assert placed.sentences[0].rewritten == "Marie Curie was born in Warsaw in 1867."
    assert not run().ruled("rewrite.")


def test_stating_facts_and_keeping_the_sentence_are_the_later_fallbacks():
    from rules_helpers import CountingRetriever

    from serc_dspy import SERC

    program = SERC(retriever=CountingRetriever(), rules={"rewrite.in_place": False})
    stated = run(program=program, RewriteSentence=lambda i: {"sentence": "Ok."})
    assert stated.ruled("rewrite.state_facts", "s0") and not stated.ruled("rewrite.in_place")
    facts = {S0: ["Marie Curie was born in Kraków."]}  # "1867" is in no fact

    def extract(inputs):
        from test_serc import FACTS as ALL

        return {"facts": facts.get(inputs["sentence"]) or ALL.get(inputs["sentence"],
                                                                   [inputs["sentence"]])}

    program = SERC(retriever=CountingRetriever(), rules={"rewrite.in_place": False})
    kept = run(program=program, AtomicFacts=extract,
               RewriteSentence=lambda i: {"sentence": " ".join(i["facts"])})
    assert kept.ruled("rewrite.orphan", "s0") and kept.ruled("rewrite.keep_sentence", "s0")
    assert kept.fact("f0.0").status == "uncorrected"


def test_a_laid_out_draft_is_not_polished_and_a_pruned_one_comes_back():
    laid_out = run(draft="Marie Curie was born in Kraków in 1867.\n\n- She studied at the "
                         "Sorbonne in Paris.\n")
    assert laid_out.ruled("polish.layout")
    assert not run().ruled("polish.layout")
    from rules_helpers import CountingRetriever

    from serc_dspy import SERC

    pruned = run(JudgeFacts=lambda i: {"verdicts": ["NOT_FOUND"] * len(i["claims"])},
                 JudgeFact=lambda i: {"verdict": "NOT_FOUND"},
                 program=SERC(retriever=CountingRetriever(), rules={"agree.not_found": False}))
    assert pruned.ruled("decode.too_short", "answer") and pruned.status == "fallback"
    assert not run().ruled("decode.too_short")
