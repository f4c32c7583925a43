"""`serc_dspy.metrics`: DSPy-signature metrics, their GEPA twins, and a whole-SERC optimiser."""

from __future__ import annotations

import logging

import dspy
from scripted import entity, scripted_lm
from test_noise import ARTICLES, _noise_handlers

from serc_dspy import SERC, LocalCorpus
from serc_dspy.core.trace import Fact, Trace
from serc_dspy.evaluation.injection import NoisyDraft, load_articles, split_article
from serc_dspy.metrics import (
    planted_error_examples,
    planted_error_feedback,
    planted_error_score,
    syndrome_agreement,
    syndrome_agreement_feedback,
)


def _corpus():
    return LocalCorpus.from_texts({f"{t}.txt": split_article(text)[1]
                                   for t, text in load_articles(ARTICLES).items()})


def test_planted_error_score_rewards_fixes_and_explains_what_was_left():
    example = planted_error_examples(ARTICLES, bios=1, errors=2)[0]
    noisy = example.noisy
    fixed = noisy["clean"]
    assert planted_error_score(example, dspy.Prediction(answer=fixed, trace=Trace())) == 1.0
    left = dspy.Prediction(answer=noisy["draft"], trace=Trace())
    assert planted_error_score(example, left) == 0.0
    feedback = planted_error_feedback(example, left)
    assert feedback.score == 0.0
    assert noisy["errors"][0]["injected"] in feedback.feedback and "left" in feedback.feedback


def test_syndrome_agreement_matches_labelled_facts_to_the_trace():
    example = dspy.Example(facts=[{"text": "Ann was born in 1901.", "label": "S"},
                                  {"text": "Ann was a painter.", "label": "NS"}])
    trace = Trace(facts=[Fact(id="f0", text="Ann was born in 1901.", sentence=0,
                              verdict="SUPPORTED"),
                         Fact(id="f1", text="Ann was a painter.", sentence=0,
                              verdict="SUPPORTED")])
    prediction = dspy.Prediction(answer="", trace=trace)
    assert syndrome_agreement(example, prediction) == 0.5
    assert "is CONTRADICTED, judged SUPPORTED" in syndrome_agreement_feedback(
        example, prediction).feedback


def test_bootstrap_few_shot_optimises_a_whole_serc_without_copy_warnings(caplog):
    trainset = planted_error_examples(ARTICLES, bios=2, errors=1)
    drafts = {e.question: NoisyDraft.model_validate(e.noisy) for e in trainset}
    handlers = _noise_handlers(drafts)
    handlers["QueryEntity"] = lambda i: entity("")
    lm, _ = scripted_lm(handlers)
    optimizer = dspy.BootstrapFewShot(metric=planted_error_score, max_bootstrapped_demos=1,
                                      max_labeled_demos=0, max_rounds=1)
    with caplog.at_level(logging.WARNING), dspy.context(lm=lm, adapter=dspy.JSONAdapter()):
        compiled = optimizer.compile(SERC(retriever=_corpus()), trainset=trainset)
        result = compiled(question=trainset[0].question, draft=trainset[0].draft)
    assert planted_error_score(trainset[0], result) == 1.0
    assert any(p.demos for _, p in compiled.named_predictors())
    assert "deep copy" not in caplog.text.lower()
