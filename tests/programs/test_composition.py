"""SERC inside a user's own dspy.Module, as docs/python-api.md shows it: compose, compile the
outer module, save it, load it back; and a `serc compile` state loaded on the sub-module."""

from __future__ import annotations

from pathlib import Path

import dspy
from scripted import CountingRetriever, scripted_lm
from test_serc import DRAFT, handlers

from serc_dspy import SERC, StrictJSONAdapter
from serc_dspy.signatures import AnswerQuestion

PACKAGED = Path(__file__).parents[2] / "serc_dspy" / "compiled" / "verify_smollm2.json"


class CheckedQA(dspy.Module):
    def __init__(self, retriever):
        super().__init__()
        self.answer = dspy.Predict(AnswerQuestion)  # a user's own signature would do
        self.serc = SERC(retriever=retriever, compiled=None)

    def forward(self, question):
        draft = self.answer(question=question).answer
        return self.serc(question=question, draft=draft)


def test_serc_composes_compiles_saves_and_loads_inside_a_users_module(tmp_path):
    lm, engine = scripted_lm(handlers())
    trainset = [dspy.Example(question="Tell me a bio of Marie Curie.", answer=DRAFT,
                             draft=DRAFT).with_inputs("question")]
    with dspy.context(lm=lm, adapter=StrictJSONAdapter()):
        compiled = dspy.LabeledFewShot(k=1).compile(CheckedQA(CountingRetriever()),
                                                    trainset=trainset)
        result = compiled(question="Tell me a bio of Marie Curie.")
    assert "Warsaw" in result.answer and result.trace.draft_given
    demos = {name: len(p.demos) for name, p in compiled.named_predictors()}
    assert demos["answer"] == 1 and demos["serc.correction.corrector"] == 1

    path = tmp_path / "checked_qa.json"
    compiled.save(str(path))
    again = CheckedQA(CountingRetriever())
    again.load(str(path))
    assert {name: len(p.demos) for name, p in again.named_predictors()} == demos

    # a `serc compile` state loads on the SERC sub-module
    again.serc.load(str(PACKAGED))
    assert again.serc.single_verifier.demos or again.serc.verifier.demos
    # ...and not on the outer module, whose DSPy `.load` reads only its own saves (documented)
    import pytest

    with pytest.raises(KeyError, match="metadata"):
        CheckedQA(CountingRetriever()).load(str(PACKAGED))
