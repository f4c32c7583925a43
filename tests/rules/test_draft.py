"""`rules.draft`: a caller's short draft is checked as one claim."""

from rules_helpers import CountingRetriever, run

from serc_dspy import SERC

FIRES = {"draft.short_claim"}
QUIET = {"draft.short_claim"}


def test_a_short_caller_draft_is_one_claim_and_a_long_one_is_not():
    trace = run(draft="Warsaw", question="Where was Marie Curie born?")
    ruling = trace.ruled("draft.short_claim", "answer")[0]
    assert ruling.before == "Warsaw" and "Where was Marie Curie born?" in ruling.after
    assert trace.short_draft and not trace.cold_start
    assert not run().ruled("draft.short_claim")
    off = run(draft="Warsaw", question="Where was Marie Curie born?",
              program=SERC(retriever=CountingRetriever(), rules={"draft.short_claim": False}))
    assert not off.ruled("draft.short_claim") and off.cold_start  # the paper's cold start
