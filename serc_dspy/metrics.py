"""Metrics with DSPy's signature, for optimising a whole SERC (or scoring it in `dspy.Evaluate`).

Each metric is `metric(example, prediction, trace=None) -> float` in [0, 1], and each has a GEPA
twin `..._feedback(example, prediction, trace=None, pred_name=None, pred_trace=None)` that
returns `dspy.Prediction(score=..., feedback=...)`, the feedback saying in words what went
wrong so that GEPA's reflection has something to read.

- `planted_error_score`: the planted-error benchmark on one example (see
  `evaluation.injection` and `evaluation.noise`): errors corrected count 1, deleted 0.5, left 0;
  true content altered is subtracted. Examples come from `planted_error_examples`.
- `syndrome_agreement`: how many of the example's labelled facts got the same verdict in the
  trace (FActScore-style labels, e.g. S / NS / IR mapped to the three verdicts).
- `FactPrecision(knowledge)`: FActScore-style precision of the answer against a knowledge
  source (an LM judges each atomic fact, as `serc eval --metric factscore` does).

    from serc_dspy import SERC
    from serc_dspy.metrics import planted_error_examples, planted_error_score

    trainset = planted_error_examples("wikipedia_dev.json", bios=8, errors=2)
    compiled = dspy.BootstrapFewShot(metric=planted_error_score).compile(
        SERC(retriever=corpus), trainset=trainset)
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from typing import Any

import dspy

from serc_dspy.compiling.devsets import _get
from serc_dspy.evaluation.injection import NoisyDraft, load_articles, make_drafts
from serc_dspy.evaluation.noise import NoiseScore, score_decoding
from serc_dspy.text import best_match
from serc_dspy.trace import Trace

FACT_MATCH = 0.7
"""Similarity at which a trace fact is taken to be a labelled fact (as in `compiling.devsets`)."""
LABELS = {"S": "SUPPORTED", "NS": "CONTRADICTED", "IR": "NOT_FOUND", "SUPPORTED": "SUPPORTED",
          "CONTRADICTED": "CONTRADICTED", "NOT_FOUND": "NOT_FOUND"}


def _trace(prediction: Any) -> Trace | None:
    trace = _get(prediction, "trace")
    if isinstance(trace, Trace):
        return trace
    return Trace.model_validate(trace) if isinstance(trace, Mapping) else None


# -- planted errors -------------------------------------------------------------------------------
def planted_error_examples(articles: str | os.PathLike[str] | Mapping[str, Any], *, bios: int,
                           errors: int, seed: int = 0, sentences: int = 3
                           ) -> list[dspy.Example]:
    """`dspy.Example(question, draft)` inputs carrying what the metric needs (`noisy`, the
    planted errors, and `article`, the whole article)."""
    texts = load_articles(articles)
    return [dspy.Example(question=d.question, draft=d.draft, noisy=d.model_dump(mode="json"),
                         article=texts[d.title]).with_inputs("question", "draft")
            for d in make_drafts(texts, bios=bios, errors=errors, seed=seed,
                                 sentences=sentences)]


def _planted(example: Any, prediction: Any) -> NoiseScore:
    noisy = _get(example, "noisy")
    draft = noisy if isinstance(noisy, NoisyDraft) else NoisyDraft.model_validate(noisy)
    return score_decoding(draft, str(_get(example, "article", "")), _get(prediction, "answer"),
                          _trace(prediction))


def _planted_value(score: NoiseScore) -> float:
    units = len(score.units) or 1
    altered = sum(u.outcome == "altered" for u in score.units) / units
    if not score.errors:
        return max(0.0, 1.0 - altered)
    fixed = sum({"corrected": 1.0, "deleted": 0.5, "left": 0.0}[e.outcome]
                for e in score.errors) / len(score.errors)
    return max(0.0, min(1.0, fixed - altered))


def planted_error_score(example: Any, prediction: Any, trace: Any = None) -> float:
    return _planted_value(_planted(example, prediction))


def planted_error_feedback(example: Any, prediction: Any, trace: Any = None,
                           pred_name: str | None = None, pred_trace: Any = None
                           ) -> dspy.Prediction:
    score = _planted(example, prediction)
    notes = []
    for e in score.errors:
        if e.outcome == "left":
            notes.append(f"the planted {e.kind} error '{e.injected}' (true: '{e.original}') "
                         f"was {'detected but ' if e.detected else ''}left in the answer")
        elif e.outcome == "deleted":
            notes.append(f"'{e.injected}' was removed but the true '{e.original}' not restored")
    notes += [f"a true fact was changed: '{u.text}'" for u in score.units
              if u.outcome == "altered"]
    notes += [f"'{value}' is in neither the draft nor the article" for value in score.introduced]
    feedback = "; ".join(notes) or "every planted error was corrected and nothing true changed"
    return dspy.Prediction(score=_planted_value(score), feedback=feedback)


# -- syndrome agreement ---------------------------------------------------------------------------
def _agreement(example: Any, prediction: Any) -> tuple[float, list[str]]:
    gold = _get(example, "facts") or []
    trace = _trace(prediction)
    facts = trace.facts if trace is not None else []
    texts = [f.text for f in facts]
    agree, notes = 0, []
    for item in gold:
        text, label = _get(item, "text", ""), LABELS.get(str(_get(item, "label", "")).upper())
        match = best_match(text, texts, FACT_MATCH) if texts else None
        if match is None:
            notes.append(f"no fact of the trace matches '{text}'")
            continue
        verdict = facts[match[0]].verdict
        if verdict == label:
            agree += 1
        else:
            notes.append(f"'{text}' is {label}, judged {verdict}")
    return (agree / len(gold) if gold else 0.0), notes


def syndrome_agreement(example: Any, prediction: Any, trace: Any = None) -> float:
    """Share of the example's labelled `facts` ([{text, label}]) whose verdict matches."""
    return _agreement(example, prediction)[0]


def syndrome_agreement_feedback(example: Any, prediction: Any, trace: Any = None,
                                pred_name: str | None = None, pred_trace: Any = None
                                ) -> dspy.Prediction:
    score, notes = _agreement(example, prediction)
    return dspy.Prediction(score=score, feedback="; ".join(notes) or "every verdict agrees")


# -- FActScore-style precision --------------------------------------------------------------------
class FactPrecision:
    """FActScore-style precision of `prediction.answer` for `example.topic`, judged by the
    context LM against `knowledge` (a `KnowledgeSource`). An unscorable answer scores 0."""

    def __init__(self, knowledge: Any, *, k: int = 5, attempts: int = 2):
        from serc_dspy.evaluation.metrics import FactScorer

        self.scorer = FactScorer(knowledge, k=k, attempts=attempts)

    def _score(self, example: Any, prediction: Any):
        return self.scorer.score(_get(prediction, "answer"), str(_get(example, "topic", "")))

    def __call__(self, example: Any, prediction: Any, trace: Any = None) -> float:
        return self._score(example, prediction).precision or 0.0

    def feedback(self, example: Any, prediction: Any, trace: Any = None,
                 pred_name: str | None = None, pred_trace: Any = None) -> dspy.Prediction:
        score = self._score(example, prediction)
        unsupported = [f.fact for f in score.facts
                       if f.label is not None and f.label != "SUPPORTED"]
        text = ("unsupported facts: " + "; ".join(unsupported)) if unsupported else (
            score.error or "every fact is supported")
        return dspy.Prediction(score=score.precision or 0.0, feedback=text)


__all__: Sequence[str] = [
    "FactPrecision", "planted_error_examples", "planted_error_feedback", "planted_error_score",
    "syndrome_agreement", "syndrome_agreement_feedback",
]
