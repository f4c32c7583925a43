"""`rules.draft`: a caller's short draft is checked as one claim."""

from rules_helpers import CountingRetriever, run

from serc_dspy import SERC

FIRES = {"draft.short_claim", "draft.answer_sentence", "draft.cold_start", "draft.no_info"}
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


def test_a_one_sentence_draft_stating_the_asked_value_is_checked_as_the_answer():
    question = "In what year was Marie Curie born?"
    sentence = "Marie Curie, the physicist and chemist, was born in the city of Warsaw in 1868."

    def on(draft, asked=question):  # off by default
        return run(draft=draft, question=asked, program=SERC(
            retriever=CountingRetriever(), rules={"draft.answer_sentence": True}))
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
    off = run(draft=sentence, question=question)  # the default
    assert not off.ruled("draft.answer_sentence") and not off.short_draft
