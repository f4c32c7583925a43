"""Shared scenarios for the rule tests: a scripted SERC run, and the set of rule ids each test
module shows firing and staying quiet (the rulebook test checks every rule is covered)."""

from __future__ import annotations

import sys
from pathlib import Path

import dspy

sys.path[:0] = [str(Path(__file__).parents[1]), str(Path(__file__).parents[1] / "programs")]

from scripted import CountingRetriever, scripted_lm  # noqa: E402
from test_serc import DRAFT, handlers  # noqa: E402

from serc_dspy import SERC, LocalCorpus, StrictJSONAdapter  # noqa: E402
from serc_dspy.rules import RuleSet  # noqa: E402

QUESTION = "Tell me a bio of Marie Curie."
QUOTE = "Marie Curie was born in Warsaw in 1867."
CITED_CORPUS = LocalCorpus.from_texts({"c.txt": QUOTE + " She studied at the Sorbonne in Paris."})


def run(draft=DRAFT, program=None, question=QUESTION, **overrides):
    """A scripted SERC run (`verdicts="check"` unless a program is given); the trace."""
    lm, engine = scripted_lm(handlers(**overrides))
    program = program or SERC(retriever=CountingRetriever())
    with dspy.context(lm=lm, adapter=StrictJSONAdapter()):
        return program(question=question, draft=draft).trace


def cited(rules=None, **overrides):
    """A scripted run with cited verdicts: the birth fact cites the Warsaw quote."""
    def cite(inputs):
        born = "born" in inputs["claim"]
        return {"quote": QUOTE if born else "", "verdict": "SUPPORTED"}

    program = SERC(retriever=CITED_CORPUS, verdicts="fact", evidence="passages",
                   queries="facts", rules=rules)
    return run(program=program, **{"QuoteAndJudge": cite, **overrides})


def every_rule_on() -> RuleSet:
    return RuleSet()
