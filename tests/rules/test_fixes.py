"""`rules.fixes`: which corrections a contradicted fact accepts, each refusal a ruling."""

import pytest
from rules_helpers import cited, run
from scripted import CountingRetriever
from test_serc import FACTS, S0, VERDICTS

from serc_dspy import SERC

FIRES = {"fix.quote_evidence", "fix.restates", "fix.rewords", "fix.keeps_contradicted", "fix.empty",
         "fix.propagated_delete", "fix.retry", "fix.join_pieces", "fix.positional",
         "fix.swap_back", "fix.collateral"}
QUIET = set(FIRES)
BORN = "Marie Curie was born in Kraków."


def retrying():
    """SERC with the warmer retry switched on (off by default since its ablation)."""
    return SERC(retriever=CountingRetriever(), rules={"fix.retry": True})


def fixes(fixed, related=None):
    """A corrector that answers `fixed(fact)` for each erroneous fact."""
    def correct(inputs):
        out = [{"original": f, "fixed": fixed(f)} for f in inputs["erroneous_facts"]]
        out += [{"original": f, "fixed": related(f)} for f in inputs["related_facts"]
                if related is not None]
        return {"corrections": out}
    return correct


@pytest.mark.parametrize("rule, fixed", [
    ("fix.restates", lambda f: f),
    ("fix.rewords", lambda f: f.replace(" in ", " at ")),  # "born in 1923" -> "born on 1923"
    ("fix.empty", lambda f: ""),
])
def test_a_fix_that_changes_nothing_is_refused_and_retried(rule, fixed):
    trace = run(program=retrying(), CorrectFacts=fixes(fixed))
    assert trace.ruled(rule, "f0.0") and trace.ruled("fix.retry")
    assert trace.fact("f0.0").status == "uncorrected"
    good = run(program=retrying())
    assert not good.ruled(rule) and not good.ruled("fix.retry")


def test_the_warmer_retry_is_off_by_default_and_costs_no_call():
    # off since its ablation on the Factcheck-Bench report split (docs/rules.md)
    def corrector(calls):
        def count(inputs):
            calls.append(inputs)
            return fixes(lambda f: f)(inputs)
        return count

    default, retried = [], []
    trace = run(CorrectFacts=corrector(default))
    assert trace.ruled("fix.restates", "f0.0") and not trace.ruled("fix.retry")
    assert trace.fact("f0.0").status == "uncorrected" and "fix.retry" in trace.rules_off
    on = run(program=retrying(), CorrectFacts=corrector(retried))
    assert len(retried) - len(default) == len(on.ruled("fix.retry")) > 0


def test_a_fix_that_keeps_the_contradicted_detail_is_refused_and_swapped_back():
    # "Knight of the Thistle in 2009" -> "knighted in 2009" kept the contradicted year
    trace = cited(CorrectFacts=fixes(lambda f: "Marie Curie was born in Kraków, Poland."))
    assert trace.ruled("fix.keeps_contradicted")
    assert trace.ruled("fix.swap_back")  # the quote's one swapped detail is the correction
    assert trace.fact("f0.0").correction == "Marie Curie was born in Warsaw."


def test_a_fix_that_copies_the_quote_over_the_fact_is_swapped_back():
    # the main job's death year: the fix copied the evidence sentence, the cause of death lost
    trace = cited(CorrectFacts=fixes(lambda f: "Curie was a teacher's daughter."))
    ruling = trace.ruled("fix.swap_back")[0]
    assert ruling.after == "Marie Curie was born in Warsaw."
    off = cited(CorrectFacts=fixes(lambda f: "Curie was a teacher's daughter."),
                rules={"fix.swap_back": False})
    assert not off.ruled("fix.swap_back")
    assert not cited(CorrectFacts=fixes(lambda f: f.replace("Kraków", "Warsaw"))).ruled(
        "fix.swap_back")


def test_a_propagated_empty_change_never_deletes_the_fact():
    trace = run(CorrectFacts=fixes(lambda f: f.replace("Kraków", "Warsaw").replace(
        "Chemistry", "Physics"), related=lambda f: ""))
    assert trace.ruled("fix.propagated_delete")
    assert not [f for f in trace.facts if f.status == "pruned" and f.verdict == "SUPPORTED"]
    assert not run().ruled("fix.propagated_delete")


def test_pieces_of_one_fix_are_joined():
    def pieces(inputs):
        if BORN not in inputs["erroneous_facts"]:
            return fixes(lambda f: f.replace("Chemistry", "Physics"))(inputs)
        return {"corrections": [{"original": "x", "fixed": "Marie Curie was born in Warsaw"},
                                {"original": "y", "fixed": "in the Russian Empire"}]}

    trace = run(CorrectFacts=pieces)
    assert trace.ruled("fix.join_pieces", "f0.0")
    assert not run().ruled("fix.join_pieces")


def test_a_fix_that_names_no_fact_is_mapped_by_position():
    def unnamed(inputs):  # `original` quotes nothing the facts say
        return {"corrections": [{"original": "the first one", "fixed": f.replace(
            "Kraków", "Warsaw").replace("Chemistry", "Physics")}
            for f in inputs["erroneous_facts"]]}

    trace = run(CorrectFacts=unnamed)
    assert trace.ruled("fix.positional", "f0.0")
    assert trace.fact("f0.0").correction == "Marie Curie was born in Warsaw."
    assert not run().ruled("fix.positional")


WHOLE = "Marie Curie was born in Kraków in 1867."


def whole_sentence(fixed):
    """A run whose first sentence is one contradicted fact (Kraków wrong, 1867 true), fixed
    by `fixed`; the evidence is the passage "born in Warsaw in 1867 ...", with no negation."""
    facts = {**FACTS, S0: [WHOLE]}
    verdicts = {**VERDICTS, WHOLE: "CONTRADICTED"}
    return run(AtomicFacts=lambda i: {"facts": facts.get(i["sentence"], [i["sentence"]])},
               JudgeFacts=lambda i: {"verdicts": [verdicts.get(c, "SUPPORTED")
                                                  for c in i["claims"]]},
               JudgeFact=lambda i: {"verdict": verdicts.get(i["claim"], "SUPPORTED")},
               CorrectFacts=fixes(lambda f: fixed if f == WHOLE else f))


@pytest.mark.parametrize("fixed, why", [
    ("Marie Curie was born in Warsaw.", "drops 1867"),  # the true year dropped
    ("Marie Curie was born in Warsaw in 1999.", "adds 1999"),  # the true year changed
    ("Marie Curie was killed in Warsaw in 1867.", "adds killed"),  # the verb swapped
    ("Marie Curie was not born in Warsaw in 1867.", "negation"),  # the fact negated
    ("Marie Curie was born in Warsaw in 1867, and she was a convicted fraudster.",
     "adds convicted, fraudster"),  # an unsupported clause appended
])
def test_a_fix_that_changes_more_than_its_contradicted_detail_is_refused(fixed, why):
    trace = whole_sentence(fixed)
    ruling = trace.ruled("fix.collateral", "f0.0")
    assert ruling and why in ruling[0].detail, [r.detail for r in trace.rulings]
    fact = trace.fact("f0.0")
    assert fact.status == "uncorrected" and fact.correction is None
    assert "Kraków in 1867" in trace.answer and fixed not in trace.answer


def test_a_fix_of_its_contradicted_detail_alone_is_a_correction():
    trace = whole_sentence("Marie Curie was born in Warsaw in 1867.")
    assert not trace.ruled("fix.collateral") and trace.fact("f0.0").status == "corrected"
    assert "Warsaw in 1867" in trace.answer
    off = run(program=SERC(retriever=CountingRetriever(), rules={"fix.collateral": False}),
              CorrectFacts=fixes(lambda f: f.replace("Kraków", "Warsaw") + " She was evil."))
    assert not off.ruled("fix.collateral") and "fix.collateral" in off.rules_off


def test_a_cited_contradiction_is_corrected_from_its_quote_unless_the_rule_is_off():
    seen = []

    def record(inputs):
        seen.append(inputs["evidence"])
        return {"corrections": [{"original": f, "fixed": f.replace("Kraków", "Warsaw")}
                                for f in inputs["erroneous_facts"]]}

    quote = "Marie Curie was born in Warsaw in 1867."
    trace = cited(CorrectFacts=record)
    assert trace.ruled("fix.quote_evidence") and seen[-1] == quote
    seen.clear()
    off = cited(CorrectFacts=record, rules={"fix.quote_evidence": False})
    assert not off.ruled("fix.quote_evidence") and seen and seen[-1] != quote
    assert not run().ruled("fix.quote_evidence")  # uncited verdicts: no quote to read
