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
