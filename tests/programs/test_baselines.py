"""Each compared method's distinctive behaviour, under a scripted LM."""

import dspy
import pytest
from scripted import CountingRetriever, entity, scripted_lm

from serc_dspy.core.trace import Trace
from serc_dspy.programs import (
    RARR,
    CoVe,
    CoVeRAG,
    InitialAnswer,
    InputError,
    ReEx,
    build_method,
    method_names,
)

QUESTION = "Tell me a bio of Marie Curie."
GOOD = "Marie Curie studied at the Sorbonne in Paris."
BAD = "Marie Curie was born in Kraków in 1867."
DRAFT = f"{BAD} {GOOD}"


def handlers(**overrides):
    base = {
        "AnswerQuestion": lambda i: {"answer": DRAFT},
        "PlanVerifications": lambda i: {"verification_questions": [
            "Where was Marie Curie born?", "Where did Marie Curie study?"]},
        "AnswerFromMemory": lambda i: {"answer": "I believe it was Warsaw."},
        "AnswerFromContext": lambda i: {"answer": "Warsaw, according to the context."},
        "VerifiedAnswer": lambda i: {"answer": "Marie Curie was born in Warsaw in 1867. " + GOOD},
        "ResearchQuestions": lambda i: {"queries": [f"Marie Curie {i['text'][:30]}"]},
        "CheckAgreement": lambda i: {"reasoning": "Compared.", "agreement": "AGREE"},
        "MinimalEdit": lambda i: {"edited_text": i["text"].replace("Kraków", "Warsaw")},
        "SubQuestions": lambda i: {"sub_questions": ["Where was Marie Curie born?"]},
        "ExplainErrors": lambda i: {"explanation": "The birthplace is Warsaw, not Kraków."},
        "ReviseWithExplanation": lambda i: {"answer": i["draft"].replace("Kraków", "Warsaw")},
    }
    base.update(overrides)
    return base


def run(program, draft=DRAFT, **overrides):
    lm, engine = scripted_lm(handlers(**overrides))
    with dspy.context(lm=lm, adapter=dspy.JSONAdapter()):
        return program(question=QUESTION, draft=draft), engine


def test_initial_answer_is_the_draft_or_the_generated_answer():
    prediction, engine = run(InitialAnswer(), draft=None)
    assert prediction.answer == prediction.initial_answer == DRAFT
    assert len(engine.calls) == 1
    prediction, engine = run(InitialAnswer())
    assert prediction.answer == DRAFT and engine.calls == []


def test_cove_never_calls_the_retriever():
    retriever = CountingRetriever()
    prediction, engine = run(CoVe(retriever=retriever))
    assert retriever.queries == []
    assert len(engine.of("AnswerFromMemory")) == 2 and engine.of("AnswerFromContext") == []
    assert "Warsaw" in prediction.answer
    final = engine.of("VerifiedAnswer")[0]["inputs"]["verifications"]
    assert final == ["Q: Where was Marie Curie born? A: I believe it was Warsaw.",
                     "Q: Where did Marie Curie study? A: I believe it was Warsaw."]


def test_cove_rag_retrieves_once_per_verification_question():
    retriever = CountingRetriever()
    prediction, engine = run(CoVeRAG(retriever=retriever))
    assert sorted(retriever.queries) == ["Where did Marie Curie study?",
                                         "Where was Marie Curie born?"]
    assert len(engine.of("AnswerFromContext")) == 2 and engine.of("AnswerFromMemory") == []
    verify_steps = [s for s in prediction.trace.steps if s.name == "verify"]
    assert all(s.passages for s in verify_steps)


def test_cove_rag_with_failing_retrieval_keeps_the_draft_and_fails_loudly():
    prediction, engine = run(CoVeRAG(retriever=CountingRetriever(fail=True)))
    assert prediction.answer == DRAFT
    assert engine.of("VerifiedAnswer") == []
    assert len([e for e in prediction.trace.errors if e.phase == "verify"]) == 2
    assert prediction.trace.status == "failed"  # verified nothing: never a decoding
    assert "no search returned evidence" in prediction.trace.failure


def test_rarr_leaves_the_text_unchanged_when_every_check_agrees():
    prediction, engine = run(RARR(retriever=CountingRetriever()))
    assert prediction.answer == DRAFT
    assert engine.of("MinimalEdit") == []
    assert len(engine.of("CheckAgreement")) == 2


def test_rarr_edits_only_the_disagreeing_sentence():
    def agree(inputs):
        disagree = "Kraków" in inputs["text"]
        return {"reasoning": "Checked.", "agreement": "DISAGREE" if disagree else "AGREE"}

    prediction, engine = run(RARR(retriever=CountingRetriever()), CheckAgreement=agree)
    assert prediction.answer == f"Marie Curie was born in Warsaw in 1867. {GOOD}"
    edits = engine.of("MinimalEdit")
    assert len(edits) == 1 and edits[0]["inputs"]["text"] == BAD


def test_rarr_keeps_a_sentence_whose_research_questions_fail_and_revises_the_rest():
    def questions(inputs):
        if "Sorbonne" in inputs["text"]:
            raise RuntimeError("stopped at max_tokens")
        return {"queries": ["Marie Curie birthplace"]}

    def agree(inputs):
        return {"reasoning": "Checked.", "agreement": "DISAGREE"}

    prediction, engine = run(RARR(retriever=CountingRetriever()), ResearchQuestions=questions,
                             CheckAgreement=agree)
    assert prediction.answer == f"Marie Curie was born in Warsaw in 1867. {GOOD}"
    assert any("research questions failed" in e.message for e in prediction.trace.errors)


def test_reex_returns_the_draft_when_the_explanation_is_none():
    retriever = CountingRetriever()
    prediction, engine = run(ReEx(retriever=retriever),
                             ExplainErrors=lambda i: {"explanation": "None"})
    assert prediction.answer == DRAFT
    assert engine.of("ReviseWithExplanation") == []
    assert retriever.queries == ["Where was Marie Curie born?"]


def test_reex_revises_with_the_explanation():
    prediction, engine = run(ReEx(retriever=CountingRetriever()))
    assert "Warsaw" in prediction.answer and "Kraków" not in prediction.answer
    revise = engine.of("ReviseWithExplanation")[0]["inputs"]
    assert revise["explanation"] == "The birthplace is Warsaw, not Kraków."


def _serc_handlers():
    facts = {BAD: ["Marie Curie was born in Kraków.", "Marie Curie was born in 1867."],
             GOOD: [GOOD]}
    return dict(
        QueryEntity=lambda i: entity("Marie Curie"),
        AnswerEntity=lambda i: entity("Marie Curie", "physicist"),
        EvidenceEntity=lambda i: entity("Maria Skłodowska-Curie", "physicist"),
        SameEntity=lambda i: {"analysis": "Same.", "same": "YES"},
        AtomicFacts=lambda i: {"facts": facts.get(i["sentence"], [])},
        VerificationQuery=lambda i: {"query": "Marie Curie " + i["facts"][0]},
        EvidenceSummary=lambda i: {"evidence": "She was born in Warsaw."},
        ParametricEvidence=lambda i: {"evidence": "Born in Warsaw."},
        JudgeFacts=lambda i: {"verdicts": ["SUPPORTED"] * len(i["claims"])},
        JudgeFact=lambda i: {"verdict": "SUPPORTED"},
        CorrectFacts=lambda i: {"corrections": []},
        RewriteSentence=lambda i: {"sentence": " ".join(i["facts"])},
        PolishAnswer=lambda i: {"answer": i["draft"]},
    )


@pytest.mark.parametrize("name, checks, firewall, retrieval", [
    ("serc", 2, True, True),
    ("serc_dense", 3, True, True),
    ("serc_no_rag", 2, True, False),
    ("serc_no_firewall", 2, False, True),
])
def test_serc_presets_have_their_documented_graph_shapes(name, checks, firewall, retrieval):
    retriever = CountingRetriever()
    prediction, engine = run(build_method(name, retriever=retriever), **_serc_handlers())
    trace = prediction.trace
    assert trace.method == name
    assert len(trace.facts) == 3 and len(trace.checks) == checks
    if name == "serc_dense":
        assert all(len(c.facts) == 1 for c in trace.checks)
    assert trace.firewall.enabled is firewall
    assert bool(engine.of("SameEntity")) is (firewall and retrieval)
    assert bool(retriever.queries) is retrieval


@pytest.mark.parametrize("name", method_names())
def test_every_method_returns_the_common_fields(name):
    handlers_ = {**handlers(), **_serc_handlers()}
    program = build_method(name, retriever=CountingRetriever())
    prediction, _ = run(program, **handlers_)
    assert isinstance(prediction.answer, str) and prediction.answer
    assert prediction.initial_answer == DRAFT
    assert isinstance(prediction.trace, Trace) and prediction.trace.method == name
    assert prediction.usage is prediction.trace.usage
    assert Trace.from_json(prediction.trace.to_json()) == prediction.trace


def test_unknown_method_lists_the_valid_ones():
    with pytest.raises(InputError, match="valid methods: initial, serc"):
        build_method("self_refine")


def test_retrieval_methods_without_retriever_say_so():
    for name in ("cove_rag", "rarr", "reex"):
        with pytest.raises(InputError, match="needs a retriever"):
            build_method(name)(question=QUESTION)
