"""Metrics with DSPy's signature, `metric(example, prediction, trace=None)`: what `serc compile`
optimises one stage for, and what an optimiser or `dspy.Evaluate` scores a whole SERC by.

Per stage (examples from `compiling.devsets`):
- `verdict_metric`: the exact verdict (`single_verifier`, `fact_checker`); `macro_f1` over
  `VERDICT_LABELS` is reported next to it.
- `facts_metric` / `fact_f1`: fact-level F1 under a greedy one-to-one matching
  (`match_facts`): every (predicted, gold) pair is scored with `serc_dspy.core.text.similarity`,
  taken best-first, and a pair matches when both facts are still unmatched and the score is
  at least `FACT_MATCH_THRESHOLD`. Two empty lists score 1, one empty list 0.
- `correction_metric` / `correction_score`: the returned fix whose `original` quotes the claim
  (similarity >= `QUOTE_THRESHOLD`) is scored by the share of the gap between the claim and
  the gold revision it closes, clipped to [0, 1].

For a whole SERC, each in [0, 1] and each with a GEPA twin `..._feedback(example, prediction,
trace=None, pred_name=None, pred_trace=None)` returning `dspy.Prediction(score=...,
feedback=...)`, the feedback saying in words what went wrong so that GEPA's reflection has
something to read:
- `planted_error_score`: the planted-error benchmark on one example (see
  `evaluation.injection` and `evaluation.noise`): errors corrected count 1, deleted 0.5, left 0;
  true content altered is subtracted. Examples come from `planted_error_examples`.
- `syndrome_agreement`: how many of the example's labelled facts got the same verdict in the
  trace (FActScore-style labels, e.g. S / NS / IR mapped to the three verdicts).
- `FactPrecision(knowledge)`: FActScore-style precision of the answer against a knowledge
  source (an LM judges each atomic fact, as `serc eval --metric factscore` does).

    from serc_dspy.metrics import planted_error_examples, planted_error_score

    trainset = planted_error_examples("wikipedia_dev.json", bios=8, errors=2)
    compiled = dspy.BootstrapFewShot(metric=planted_error_score).compile(
        SERC(retriever=corpus), trainset=trainset)

(`serc_dspy.metrics` re-exports the whole-SERC metrics: the documented import path.)
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from typing import Any, get_args

import dspy

from serc_dspy.core.text import best_match, similarity
from serc_dspy.core.trace import Trace, Verdict
from serc_dspy.evaluation.injection import NoisyDraft, load_articles, make_drafts
from serc_dspy.evaluation.metrics.factscore import FactScorer
from serc_dspy.evaluation.noise import NoiseScore, score_decoding

VERDICT_LABELS: tuple[str, ...] = get_args(Verdict)
"""SUPPORTED, CONTRADICTED, NOT_FOUND: the labels `macro_f1` averages over."""
FACT_MATCH_THRESHOLD = 0.7
"""Similarity at which two facts are one (a predicted and a gold fact, or a trace fact and a
labelled one). On FActScore's labelled bios, FActScore's own model facts score 0.82 F1
against the human facts at 0.7, while the whole sentence taken as one fact scores 0.19."""
QUOTE_THRESHOLD = 0.9
"""Similarity at which a fix's `original` quotes the erroneous claim."""
LABELS = {"S": "SUPPORTED", "NS": "CONTRADICTED", "IR": "NOT_FOUND", "SUPPORTED": "SUPPORTED",
          "CONTRADICTED": "CONTRADICTED", "NOT_FOUND": "NOT_FOUND"}
"""A labelled fact's label (FActScore's S / NS / IR, or a verdict) as a verdict."""


def get_field(obj: Any, name: str, default: Any = None) -> Any:
    """`name` of an example, a prediction or a plain dict (a metric is handed any of them);
    `default` when it has none."""
    if isinstance(obj, dict):
        return obj.get(name, default)
    try:
        return getattr(obj, name)
    except (AttributeError, KeyError):
        return default


# -- per stage -----------------------------------------------------------------------------------
def verdict_metric(example: dspy.Example, prediction: Any, trace: Any = None) -> bool:
    """Exact verdict match."""
    return get_field(prediction, "verdict") == example.verdict


def choice_metric(example: dspy.Example, prediction: Any, trace: Any = None) -> bool:
    """Exact option letter: the value the evidence states, wherever it was listed."""
    return str(get_field(prediction, "choice")) == example.choice


def macro_f1(gold: Sequence[str], predicted: Sequence[str | None],
             labels: Sequence[str] = VERDICT_LABELS) -> tuple[float, dict[str, dict]]:
    """Macro-averaged F1 over `labels`; a failed prediction (None) counts as wrong.

    Per label: precision = tp / predicted, recall = tp / gold, 0 when a denominator is 0.
    Returns (macro F1, {label: {precision, recall, f1, support}}).
    """
    per_label: dict[str, dict] = {}
    for label in labels:
        tp = sum(1 for g, p in zip(gold, predicted, strict=True) if g == label and p == label)
        n_pred = sum(1 for p in predicted if p == label)
        n_gold = sum(1 for g in gold if g == label)
        precision = tp / n_pred if n_pred else 0.0
        recall = tp / n_gold if n_gold else 0.0
        f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
        per_label[label] = {"precision": round(precision, 4), "recall": round(recall, 4),
                            "f1": round(f1, 4), "support": n_gold}
    score = sum(v["f1"] for v in per_label.values()) / len(labels) if labels else 0.0
    return round(score, 4), per_label


def match_facts(predicted: Sequence[str], gold: Sequence[str],
                threshold: float = FACT_MATCH_THRESHOLD) -> list[tuple[int, int, float]]:
    """Greedy one-to-one matching, best similarity first: [(pred index, gold index, score)]."""
    pairs = sorted(((similarity(p, g), i, j) for i, p in enumerate(predicted)
                    for j, g in enumerate(gold)), key=lambda t: (-t[0], t[1], t[2]))
    used_pred: set[int] = set()
    used_gold: set[int] = set()
    matches = []
    for score, i, j in pairs:
        if score < threshold:
            break
        if i in used_pred or j in used_gold:
            continue
        used_pred.add(i)
        used_gold.add(j)
        matches.append((i, j, score))
    return matches


def fact_f1(predicted: Sequence[str], gold: Sequence[str],
            threshold: float = FACT_MATCH_THRESHOLD) -> float:
    """Fact-level F1 of predicted vs gold facts under `match_facts`."""
    predicted = [p for p in (str(x).strip() for x in predicted or []) if p]
    gold = [g for g in (str(x).strip() for x in gold or []) if g]
    if not predicted and not gold:
        return 1.0
    if not predicted or not gold:
        return 0.0
    matched = len(match_facts(predicted, gold, threshold))
    if not matched:
        return 0.0
    precision, recall = matched / len(predicted), matched / len(gold)
    return 2 * precision * recall / (precision + recall)


def facts_metric(example: dspy.Example, prediction: Any, trace: Any = None) -> float:
    return fact_f1(get_field(prediction, "facts") or [], example.facts)


def correction_score(claim: str, revised: str, corrections: Sequence[Any]) -> float:
    """Share of the claim -> gold-revision gap closed by the fix that quotes the claim."""
    quoted = [(similarity(get_field(c, "original") or "", claim), c) for c in corrections or []]
    quoted = [(score, c) for score, c in quoted if score >= QUOTE_THRESHOLD]
    if not quoted:
        return 0.0
    fixed = str(get_field(max(quoted, key=lambda t: t[0])[1], "fixed") or "").strip()
    if not fixed:
        return 0.0
    base = similarity(claim, revised)
    got = similarity(fixed, revised)
    if base >= 1.0:
        return got
    return max(0.0, min(1.0, (got - base) / (1.0 - base)))


def correction_metric(example: dspy.Example, prediction: Any, trace: Any = None) -> float:
    gold = example.corrections[0]
    return correction_score(example.erroneous_facts[0], get_field(gold, "fixed"),
                            get_field(prediction, "corrections") or [])


# -- a whole SERC --------------------------------------------------------------------------------
def _trace(prediction: Any) -> Trace | None:
    trace = get_field(prediction, "trace")
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
    noisy = get_field(example, "noisy")
    draft = noisy if isinstance(noisy, NoisyDraft) else NoisyDraft.model_validate(noisy)
    return score_decoding(draft, str(get_field(example, "article", "")),
                          get_field(prediction, "answer"), _trace(prediction))


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
    gold = get_field(example, "facts") or []
    trace = _trace(prediction)
    facts = trace.facts if trace is not None else []
    texts = [f.text for f in facts]
    agree, notes = 0, []
    for item in gold:
        text = get_field(item, "text", "")
        label = LABELS.get(str(get_field(item, "label", "")).upper())
        match = best_match(text, texts, FACT_MATCH_THRESHOLD) if texts else None
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
        self.scorer = FactScorer(knowledge, k=k, attempts=attempts)

    def _score(self, example: Any, prediction: Any):
        return self.scorer.score(get_field(prediction, "answer"),
                                 str(get_field(example, "topic", "")))

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
