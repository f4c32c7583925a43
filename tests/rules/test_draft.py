"""`rules.draft`: a caller's short draft is checked as one claim."""

from rules_helpers import CountingRetriever, run

from serc_dspy import SERC

FIRES = {"draft.short_claim", "draft.cold_start", "draft.no_info"}
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
