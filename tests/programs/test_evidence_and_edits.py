"""Per-fact evidence inside a check node, and minimal-edit reconstruction."""

import dspy
from scripted import scripted_lm
from test_serc import handlers

from serc_dspy import SERC, LocalCorpus, StrictJSONAdapter
from serc_dspy.rules.guards import minimal_edit

ROLE = "Marie Curie was a Polish physicist."
DRAFT = ("Marie Curie was born in Warsaw in 1867, studied at the Sorbonne in Paris, and was a "
         "Polish physicist.")
FACTS = ["Marie Curie was born in Warsaw in 1867.",
         "Marie Curie studied at the Sorbonne in Paris.", ROLE]
CORPUS = LocalCorpus.from_texts({
    "a.txt": "Marie Curie was born in Warsaw in 1867. She studied at the Sorbonne in Paris.",
    "b.txt": "A Polish physicist, she won two Nobel Prizes.",
})


def _decode(**options):
    lm, engine = scripted_lm(handlers(
        AtomicFacts=lambda i: {"facts": FACTS},
        QuoteAndJudge=lambda i: {"quote": "", "verdict": "SUPPORTED"}))
    program = SERC(retriever=CORPUS, top_k=1, verdicts="fact", evidence="passages",
                   queries="facts", **options)
    with dspy.context(lm=lm, adapter=StrictJSONAdapter()):
        program(question="Tell me a bio of Marie Curie.", draft=DRAFT)
    return engine


def test_a_role_facts_own_passage_reaches_its_verdict_first():
    # the group's one query is all three facts at once: BM25 returns the birth passage
    without = _decode()
    role = next(c for c in without.of("QuoteAndJudge") if c["inputs"]["claim"] == ROLE)
    assert "Polish physicist" not in role["inputs"]["evidence"]
    engine = _decode(fact_evidence=True)
    role = next(c for c in engine.of("QuoteAndJudge") if c["inputs"]["claim"] == ROLE)
    assert "Polish physicist" in role["inputs"]["evidence"].split("</passage 1>")[0]
    born = next(c for c in engine.of("QuoteAndJudge") if "born" in c["inputs"]["claim"])
    assert "born in Warsaw" in born["inputs"]["evidence"].split("</passage 1>")[0]


def test_a_swapped_year_is_replaced_in_place_and_a_pruned_clause_removed():
    sentence = "Marie Curie was born in 1868 in Warsaw, and she enjoyed painting landscapes."
    edited = minimal_edit(sentence, [("Marie Curie was born in 1868.",
                                      "Marie Curie was born in 1867."),
                                     ("Marie Curie enjoyed painting landscapes.", None)],
                          "Marie Curie")
    assert edited == "Marie Curie was born in 1867 in Warsaw."
    # an edit that cannot be placed (its words are not in the sentence) places nothing
    assert minimal_edit(sentence, [("Marie Curie lived in Lyon.", "Marie Curie lived in Nice.")],
                        "Marie Curie") is None


def test_minimal_reconstruction_keeps_the_draft_sentence_and_calls_no_rewriter():
    lm, engine = scripted_lm(handlers())
    with dspy.context(lm=lm, adapter=StrictJSONAdapter()):
        trace = SERC(retriever=CORPUS, reconstruct="minimal")(
            question="Tell me a bio of Marie Curie.",
            draft="Marie Curie was born in Kraków in 1867. She studied at the Sorbonne in "
                  "Paris.").trace
    assert trace.sentences[0].rewritten == "Marie Curie was born in Warsaw in 1867."
    assert engine.of("RewriteSentence") == [] and trace.ruled("rewrite.in_place", "s0")


def test_an_answer_edited_only_in_place_is_not_polished_unless_the_rule_is_off():
    draft = "Marie Curie was born in Kraków in 1867. She studied at the Sorbonne in Paris."

    def decode(**options):
        lm, engine = scripted_lm(handlers(PolishAnswer=lambda i: {"answer": i["draft"]}))
        with dspy.context(lm=lm, adapter=StrictJSONAdapter()):
            prediction = SERC(retriever=CORPUS, reconstruct="minimal", **options)(
                question="Tell me a bio of Marie Curie.", draft=draft)
        return prediction, engine

    prediction, engine = decode()
    assert prediction.answer == draft.replace("Kraków", "Warsaw")
    assert engine.of("PolishAnswer") == []
    assert prediction.trace.ruled("polish.in_place", "answer")
    prediction, engine = decode(rules={"polish.in_place": False})
    assert len(engine.of("PolishAnswer")) == 1 and not prediction.trace.ruled("polish.in_place")


def test_an_evidence_window_cuts_a_check_nodes_passages_to_the_sentences_about_its_facts():
    long_corpus = LocalCorpus.from_texts({"a.txt": (
        "Marie Curie was born in Warsaw in 1867. Her father taught mathematics. "
        "Her mother ran a boarding school. She moved to France in 1891. "
        "She studied at the Sorbonne in Paris.")})
    lm, engine = scripted_lm(handlers(
        AtomicFacts=lambda i: {"facts": FACTS[:2]},
        QuoteAndJudge=lambda i: {"quote": "", "verdict": "SUPPORTED"}))
    program = SERC(retriever=long_corpus, top_k=1, verdicts="fact", evidence="passages",
                   queries="facts", evidence_window=2)
    with dspy.context(lm=lm, adapter=StrictJSONAdapter()):
        trace = program(question="Tell me a bio of Marie Curie.", draft=DRAFT).trace
    seen = {c["inputs"]["claim"]: c["inputs"]["evidence"] for c in engine.of("QuoteAndJudge")}
    born, studied = seen[FACTS[0]], seen[FACTS[1]]
    # one cut for the whole check node: both verdicts read the same bytes, so the engine
    # serves the second from its cache; it holds each fact's sentence and not the rest
    assert born == studied
    assert "born in Warsaw" in born and "Sorbonne" in born and "boarding" not in born
    assert "a.txt" in born  # the source stays with the cut passage
    assert trace.checks[0].evidence == born  # what the trace shows, and a correction reads


def test_an_evidence_window_below_one_sentence_is_refused():
    import pytest

    from serc_dspy.core.errors import UserError

    with pytest.raises(UserError, match="evidence_window"):
        SERC(retriever=CORPUS, evidence_window=0)


def test_a_failed_per_fact_search_leaves_its_check_judged_on_the_passages_it_has():
    """N8: the check's own query found passages; a per-fact search that fails is an error
    event, never the whole check's failure."""
    def flaky(query, k):
        if query == ROLE:  # the role fact's own search
            raise ConnectionError("search backend is down")
        return CORPUS(query, k)

    lm, engine = scripted_lm(handlers(
        AtomicFacts=lambda i: {"facts": FACTS},
        QuoteAndJudge=lambda i: {"quote": "", "verdict": "SUPPORTED"}))
    program = SERC(retriever=flaky, top_k=1, verdicts="fact", evidence="passages",
                   queries="facts", fact_evidence=True)
    with dspy.context(lm=lm, adapter=StrictJSONAdapter()):
        trace = program(question="Tell me a bio of Marie Curie.", draft=DRAFT).trace
    assert all(c.error is None for c in trace.checks)
    assert {f.verdict for f in trace.facts} == {"SUPPORTED"}
    assert len(engine.of("QuoteAndJudge")) == len(FACTS)
    assert any("own evidence failed" in e.message and "search backend is down" in e.message
               for e in trace.errors)
