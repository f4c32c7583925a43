"""`rules.quotes`: a cited verdict held to its quote; each change of verdict is a ruling."""

from rules_helpers import QUOTE, cited

from serc_dspy.rules import RuleSet
from serc_dspy.rules.quotes import hold_to_quote

EVIDENCE = f"{QUOTE} She studied at the Sorbonne in Paris."
SUBJECT = "Marie Curie"
FIRES = {"quote.absent", "quote.echo", "quote.overrule", "quote.witness", "quote.second_vote"}
QUIET = set(FIRES)


def test_a_quote_not_in_the_evidence_is_set_aside():
    held = hold_to_quote("SUPPORTED", "Marie Curie studied in Lyon.", "She studied in Lyon.",
                         EVIDENCE, SUBJECT)
    assert (held.verdict, held.rule) == ("SUPPORTED", "quote.absent")
    assert hold_to_quote("SUPPORTED", "Marie Curie studied at the Sorbonne.",
                         "She studied at the Sorbonne in Paris.", EVIDENCE, SUBJECT).rule is None


def test_an_echoed_contradiction_is_not_found():
    claim = "Marie Curie was a chemist."
    held = hold_to_quote("CONTRADICTED", claim, claim, EVIDENCE, SUBJECT)
    assert (held.verdict, held.rule) == ("NOT_FOUND", "quote.echo")
    off = hold_to_quote("CONTRADICTED", claim, claim, EVIDENCE, SUBJECT,
                        RuleSet({"quote.echo": False}))
    assert off.rule != "quote.echo" and off.verdict == "CONTRADICTED"


def test_a_supported_verdict_whose_quote_swaps_a_detail_is_overruled():
    # the main job's case: a quote that says Warsaw under a verdict of SUPPORTED for Kraków
    claim = "Marie Curie was born in Kraków."
    held = hold_to_quote("SUPPORTED", claim, QUOTE, EVIDENCE, SUBJECT)
    assert (held.verdict, held.rule) == ("CONTRADICTED", "quote.overrule")
    assert (held.witness.old, held.witness.new) == ("Kraków", "Warsaw")
    assert hold_to_quote("SUPPORTED", "Marie Curie was born in Warsaw.", QUOTE, EVIDENCE,
                         SUBJECT).rule is None
    off = hold_to_quote("SUPPORTED", claim, QUOTE, EVIDENCE, SUBJECT,
                        RuleSet({"quote.overrule": False}))
    assert (off.verdict, off.rule) == ("SUPPORTED", None)


def test_a_contradiction_keeps_its_witness_or_is_unwitnessed():
    held = hold_to_quote("CONTRADICTED", "Marie Curie was born in 1868.", QUOTE, EVIDENCE,
                         SUBJECT)
    assert held.rule == "quote.witness" and (held.witness.old, held.witness.new) == (
        "1868", "1867")
    unrelated = hold_to_quote("CONTRADICTED", "Marie Curie was a chemist.", QUOTE, EVIDENCE,
                              SUBJECT)
    assert unrelated.rule is None and unrelated.unwitnessed


def test_an_unwitnessed_contradiction_gets_a_second_vote_when_switched_on():
    # the held-out case ("born on April 8, 1944" -> "April 7"): such a fact is never rewritten
    def contradict_study(inputs):
        study = "Sorbonne" in inputs["claim"]
        return {"quote": "" if study else QUOTE, "verdict":
                "CONTRADICTED" if study else "SUPPORTED"}

    trace = cited(QuoteAndJudge=contradict_study, rules={"quote.second_vote": True})
    ruling = trace.ruled("quote.second_vote")[0]
    assert (ruling.before, ruling.after) == ("CONTRADICTED", "SUPPORTED")
    fact = trace.fact(ruling.node)
    assert fact.lm_verdict == "CONTRADICTED" and fact.verdict == "SUPPORTED"
    assert not cited(rules={"quote.second_vote": True}).ruled("quote.second_vote")
    # off, the default since its ablation: one unwitnessed verdict is one signal at most, so
    # the fact is disputed, in the draft's words, and no second verdict is asked for
    off = cited(QuoteAndJudge=contradict_study)
    assert not off.ruled("quote.second_vote")
    (disputed,) = off.ruled("agree.contradiction")
    fact = off.fact(disputed.node)
    assert fact.status == "disputed" and fact.second_verdict is None
