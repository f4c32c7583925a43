"""`rules.agree`: a true fact changes only when two signals say so."""

from rules_helpers import CountingRetriever, cited, run

from serc_dspy import SERC
from serc_dspy.rules.agree import key_details, mentioned

FIRES = {"agree.contradiction", "agree.not_found"}
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
