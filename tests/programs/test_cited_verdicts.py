"""Cited per-fact verdicts (verdicts="fact"): the quote cross-check and the swap-back fix."""

import dspy
from scripted import scripted_lm
from test_serc import DRAFT, handlers

from serc_dspy import SERC, LocalCorpus
from serc_dspy.facts import split_clauses, substituted_detail

QUOTE = "Marie Curie was born in Warsaw in 1867."
CORPUS = LocalCorpus.from_texts({"c.txt": QUOTE + " She studied at the Sorbonne in Paris."})


def decode(**overrides):
    def cite(inputs):
        born = "born" in inputs["claim"]
        return {"quote": QUOTE if born else "", "verdict": "SUPPORTED"}

    lm, engine = scripted_lm(handlers(**{"QuoteAndJudge": cite, **overrides}))
    program = SERC(retriever=CORPUS, verdicts="fact", evidence="passages", queries="facts")
    with dspy.context(lm=lm, adapter=dspy.JSONAdapter()):
        return program(question="Tell me a bio of Marie Curie.", draft=DRAFT).trace, engine


def test_a_quote_that_swaps_a_detail_overrules_a_supported_verdict():
    trace, _ = decode()
    born = trace.fact("f0.0")
    assert born.text == "Marie Curie was born in Kraków." and born.quote == QUOTE
    assert born.verdict == "CONTRADICTED" and born.status == "corrected"
    assert trace.fact("f0.1").verdict == "SUPPORTED"  # "born in 1867": the quote agrees
    assert any("warsaw where the claim says kraków" in e.message for e in trace.events)


def test_a_fix_that_copies_the_quote_over_the_fact_is_replaced_by_the_swap():
    def copy_quote(inputs):
        return {"corrections": [{"original": f, "fixed": "Curie was a teacher's daughter."}
                                for f in inputs["erroneous_facts"]]}

    trace, _ = decode(CorrectFacts=copy_quote)
    assert trace.fact("f0.0").correction == "Marie Curie was born in Warsaw."
    assert any("Kraków -> Warsaw" in e.message for e in trace.events)


def test_clauses_joined_by_and_a_pronoun_become_two_facts():
    assert split_clauses("Ada Ruiz moved to Lyon in 1905, and she taught chemistry there.",
                         "Ada Ruiz") == ["Ada Ruiz moved to Lyon in 1905.",
                                         "Ada Ruiz taught chemistry there."]
    assert split_clauses("Ada Ruiz was born in Lyon, and her father was a baker.",
                         "Ada Ruiz")[1] == "Ada Ruiz's father was a baker."
    assert split_clauses("Ada Ruiz sang and danced.", "Ada Ruiz") == [
        "Ada Ruiz sang and danced."]


def test_a_swap_pairs_a_year_with_a_year_not_with_the_day():
    swap = substituted_detail("Ada Ruiz died in 1944 of a fever.",
                              "Ada Ruiz died on 4 July 1934 in Lyon.", "Ada Ruiz",
                              same_event=False)
    assert (swap.old, swap.new) == ("1944", "1934")
    assert swap.apply("Ada Ruiz died in 1944 of a fever.") == "Ada Ruiz died in 1934 of a fever."
    assert substituted_detail("Ada Ruiz moved to Lyon in 1905.",
                              "In 1905 Ada Ruiz moved to Lyon and taught there.",
                              "Ada Ruiz") is None


def test_a_possessive_is_the_name_itself():
    quote = "Her birth name was Maria Salomea Skłodowska, and she was born in Warsaw."
    assert substituted_detail("Marie Curie's birth name was Maria Salomea Skłodowska.", quote,
                              "Marie Curie") is None


def test_a_contradiction_citing_the_claim_itself_is_not_found():
    # The Nobel fact is not in the corpus; the verifier echoes it back as its "quote".
    nobel = "Marie Curie won the Nobel Prize in Chemistry in 1903."

    def echo(inputs):
        if inputs["claim"] == nobel:
            return {"quote": nobel, "verdict": "CONTRADICTED"}
        return {"quote": "", "verdict": "SUPPORTED"}

    trace, engine = decode(QuoteAndJudge=echo)
    fact = next(f for f in trace.facts if f.text == nobel)
    assert fact.verdict == "NOT_FOUND" and fact.status == "pruned"
    assert fact.correction is None
    assert any("citing the claim itself" in e.message for e in trace.events)


def test_a_contradiction_citing_a_real_sentence_stays_contradicted():
    def cite(inputs):  # the quote is really in the corpus, so it is no echo
        if "Sorbonne" in inputs["claim"]:
            return {"quote": "She studied at the Sorbonne in Paris.", "verdict": "CONTRADICTED"}
        return {"quote": "", "verdict": "SUPPORTED"}

    trace, _ = decode(QuoteAndJudge=cite)
    fact = next(f for f in trace.facts if "Sorbonne" in f.text)
    assert fact.verdict == "CONTRADICTED"
    assert not any("citing the claim itself" in e.message for e in trace.events)


def test_a_fix_that_only_rewords_its_fact_is_no_correction():
    def reword(inputs):  # "in" -> "on": the same content words, so the same fact
        return {"corrections": [{"original": f, "fixed": f.replace(" in ", " on ")}
                                for f in inputs["erroneous_facts"]]}

    def contradict_1903(inputs):
        verdict = "CONTRADICTED" if "1903" in inputs["claim"] else "SUPPORTED"
        return {"quote": "", "verdict": verdict}

    trace, engine = decode(QuoteAndJudge=contradict_1903, CorrectFacts=reword)
    fact = next(f for f in trace.facts if "1903" in f.text)
    assert fact.status == "uncorrected" and fact.correction is None
    assert len(engine.of("CorrectFacts")) == 2  # one retry
    assert "Nobel Prize in Chemistry in 1903" in trace.answer
    assert any("restates it" in e.message for e in trace.events)


def test_rewording_and_real_fixes_are_told_apart():
    from serc_dspy.facts import rewords

    assert rewords("Ada Ruiz was born in 1923.", "Ada Ruiz was born on 1923.", "Ada Ruiz")
    assert rewords("He was also the candidate in 1988.", "He was the candidate in 1988.", "")
    assert not rewords("Ada Ruiz won 96 titles.", "Ada Ruiz won 95 titles.", "Ada Ruiz")
    assert not rewords("Ada Ruiz won a Grammy.", "Ada Ruiz didn't win a Grammy.", "Ada Ruiz")
    assert not rewords("Ada Ruiz was a philosopher.", "Ada Ruiz was a musician.", "Ada Ruiz")
