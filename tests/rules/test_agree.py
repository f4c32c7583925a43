"""`rules.agree`: a true fact changes only when two signals say so."""

from rules_helpers import CountingRetriever, cited, run

from serc_dspy import SERC
from serc_dspy.rules.agree import key_details, mentioned

FIRES = {"agree.contradiction", "agree.not_found", "agree.found_swap", "evidence.empty_search"}
QUIET = set(FIRES)


def test_one_contradicting_signal_leaves_the_fact_disputed_and_two_change_it():
    # the group verdict says CONTRADICTED; the second verdict does not agree
    alone = run(JudgeFact=lambda i: {"verdict": "SUPPORTED"})
    fact = alone.fact("f0.0")
    assert fact.status == "disputed" and fact.votes == {"check": "CONTRADICTED",
                                                        "second": "SUPPORTED"}
    assert alone.ruled("agree.contradiction", "f0.0") and "Kraków" in alone.answer
    both = run()  # the scripted second verdict agrees: corrected
    assert both.fact("f0.0").status == "corrected" and not both.ruled("agree.contradiction")
    off = run(JudgeFact=lambda i: {"verdict": "SUPPORTED"},
              program=SERC(retriever=CountingRetriever(),
                           rules={"agree.contradiction": False}))
    assert off.fact("f0.0").status == "corrected" and not off.fact("f0.0").votes


def test_a_claim_verifier_is_one_of_the_signals():
    class Verifier:
        def __init__(self, verdict):
            self.verdict, self.calls = verdict, 0

        async def averify(self, claims, evidence):
            from serc_dspy.verifiers import VerifierVerdict

            self.calls += 1
            return [VerifierVerdict(claim=c, verdict=self.verdict, support=0.0,
                                    contradiction=1.0, chunk="") for c in claims]

    agrees = Verifier("CONTRADICTED")
    trace = run(JudgeFact=lambda i: {"verdict": "SUPPORTED"},
                program=SERC(retriever=CountingRetriever(), verifier=agrees))
    assert trace.fact("f0.0").votes["verifier"] == "CONTRADICTED" and agrees.calls
    assert trace.fact("f0.0").status == "corrected"  # the group verdict and the verifier


def test_a_not_found_fact_its_passages_mention_stays_unverified():
    assert key_details("Marie Curie was born in Warsaw in 1867.", "Marie Curie") == {
        "warsaw", "1867"}
    assert mentioned("Marie Curie studied at the Sorbonne.", "Marie Curie",
                     ["She studied at the Sorbonne in Paris."])
    trace = run(JudgeFacts=lambda i: {"verdicts": ["NOT_FOUND"] * len(i["claims"])},
                JudgeFact=lambda i: {"verdict": "NOT_FOUND"})
    sorbonne = next(f for f in trace.facts if "Sorbonne" in f.text)
    assert sorbonne.status == "unverified" and trace.ruled("agree.not_found", sorbonne.id)
    painting = next(f for f in trace.facts if "painting" in f.text)
    assert painting.status == "pruned" and not trace.ruled("agree.not_found", painting.id)
    assert not cited().ruled("agree.not_found")


def test_a_witnessed_swap_is_a_signal_of_its_own():
    # the main job's "Chemistry in 1903": the LM judged SUPPORTED and its second verdict
    # agreed, but the quote it cited gives the detail another value
    trace = cited(JudgeFact=lambda i: {"verdict": "SUPPORTED"})
    born = next(f for f in trace.facts if "born" in f.text)
    assert born.witness is not None and born.witness.new == "Warsaw"
    assert born.votes["swap"] == "CONTRADICTED" and born.status == "corrected"
    assert born.second_verdict is None  # two signals agreed: no second verdict was asked
    assert not trace.ruled("agree.contradiction", born.id)
    assert "Warsaw" in trace.answer


def test_a_not_found_fact_a_passage_swaps_is_judged_on_that_sentence_and_swapped_back():
    # the verdict missed it: "born in Kraków" judged NOT_FOUND beside "born in Warsaw"
    asked = []

    def judge(inputs):
        asked.append(inputs["evidence"])
        return {"verdict": "CONTRADICTED" if "Warsaw" in inputs["evidence"] else "SUPPORTED"}

    def missed(inputs):
        return {"quote": "", "verdict": "NOT_FOUND" if "Kraków" in inputs["claim"]
                else "SUPPORTED"}

    trace = cited(QuoteAndJudge=missed, JudgeFact=judge,
                  CorrectFacts=lambda i: {"corrections": []})
    born = next(f for f in trace.facts if "Kraków" in f.text)
    assert asked == ["Marie Curie was born in Warsaw in 1867."]  # that sentence alone
    assert born.lm_verdict == "NOT_FOUND" and born.verdict == "CONTRADICTED"
    assert born.votes == {"second": "CONTRADICTED", "swap": "CONTRADICTED"}
    assert born.status == "corrected" and born.correction == "Marie Curie was born in Warsaw."
    assert trace.ruled("agree.found_swap", born.id) and "Warsaw" in trace.answer

    # the sentence's own verdict does not agree: the fact is left to its NOT_FOUND
    doubted = cited(QuoteAndJudge=missed, JudgeFact=lambda i: {"verdict": "NOT_FOUND"})
    born = next(f for f in doubted.facts if "Kraków" in f.text)
    assert born.verdict == "NOT_FOUND" and born.status in ("pruned", "unverified")
    assert doubted.ruled("agree.found_swap", born.id)  # asked, so it left a ruling
    off = cited(rules={"agree.found_swap": False}, QuoteAndJudge=missed, JudgeFact=judge)
    assert not off.ruled("agree.found_swap") and \
        next(f for f in off.facts if "Kraków" in f.text).verdict == "NOT_FOUND"


def test_a_swap_is_not_sought_where_a_passage_states_the_facts_own_value():
    from serc_dspy.rules.agree import found_swap

    passages = ["Itote died on 30 April 1993 in Nairobi."]
    witness, sentence = found_swap("Itote died on 30 April 1997.", "Waruhiu Itote", passages)
    assert (witness.old, witness.new) == ("1997", "1993") and sentence == passages[0]
    assert found_swap("Itote died on 30 April 1997.", "Waruhiu Itote",
                      passages + ["Itote (1922-1997) was a Kenyan leader."]) is None
    assert found_swap("Itote was a Kenyan leader.", "Waruhiu Itote", passages) is None


def test_an_empty_search_makes_its_facts_not_found_unless_the_rule_is_off():
    class EmptyForCurie(CountingRetriever):
        def __call__(self, query, k):  # nothing for the Nobel check, passages for the rest
            return [] if "Nobel" in query else super().__call__(query, k)

    trace = run(program=SERC(retriever=EmptyForCurie()))
    empty = [c for c in trace.checks if c.evidence_source == "none"]
    assert empty and trace.ruled("evidence.empty_search")
    facts = [trace.fact(f) for c in empty for f in c.facts]
    assert all(f.verdict == "NOT_FOUND" for f in facts)
    assert not run().ruled("evidence.empty_search")
    off = run(program=SERC(retriever=EmptyForCurie(), rules={"evidence.empty_search": False}))
    assert not off.ruled("evidence.empty_search")
    kept = [off.fact(f) for c in off.checks if c.evidence_source == "none" for f in c.facts]
    assert kept and all(f.status == "unverified" for f in kept)
