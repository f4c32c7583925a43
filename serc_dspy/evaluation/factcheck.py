"""Factcheck-Bench: correcting real ChatGPT errors, scored against the annotators' labels.

Each item is a ChatGPT answer (the draft) to a prompt (the question), decomposed by people into
claims, each labelled true or false, with a revised claim for each false one and the web
passages they verified it against. A method decodes the draft against that item's passages
only; the answer is then scored claim by claim:

- a **false** claim is `fixed` when the answer states what its revision states and no longer
  states the false detail, `removed` when it states neither, `left` otherwise;
- a **true** claim is `kept` when the answer still states it, `altered` when it now states
  something else, `removed` when it is gone;
- `introduced`: years, numbers and names of the answer found in neither the draft nor the
  item's passages.

"The answer states X" is decided claim by claim in `factcheck_claims` (word paths first, an LM
judge where words cannot decide); the data is read in `factcheck_items`. This module scores an
answer from those decisions and summarises the scores; it re-exports the other two's names, the
import path callers have always used.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field, NonNegativeInt

from serc_dspy.core.errors import describe
from serc_dspy.core.text import degenerate_sentences, split_sentences
from serc_dspy.evaluation.factcheck_claims import (
    ANCHOR,
    KEPT_ALL,
    MAX_SWAPPED,
    NEGATION,
    REMOVED_BELOW,
    ClaimJudge,
    Decision,
    JudgeVerdict,
    Path_,
    claim_words,
    decide_by_judge,
    decide_by_words,
    judge_agreement,
    revisable,
)
from serc_dspy.evaluation.factcheck_items import (
    BenchClaim,
    Evidence,
    FactcheckItem,
    Label,
    LabelledClaim,
    Outcome,
    load_factcheck,
    load_labels,
    packaged_labels,
    trained_items,
)
from serc_dspy.evaluation.intervals import Pair, with_intervals
from serc_dspy.evaluation.noise import introduced, verbatim_sentences
from serc_dspy.evaluation.results import read_score_rows

__all__ = [
    "ANCHOR", "FACTCHECK_FIGURES", "KEPT_ALL", "MAX_SWAPPED", "NEGATION", "REMOVED_BELOW",
    "BenchClaim", "ClaimJudge", "ClaimScore", "Decision", "Evidence", "FactcheckItem",
    "FactcheckScore", "JudgeVerdict", "Label", "LabelledClaim", "Outcome", "Path_",
    "answer_hash", "claim_words", "decide_by_judge", "decide_by_words", "judge_agreement",
    "load_factcheck", "load_labels", "packaged_labels", "read_scores", "revisable",
    "score_answer", "summarize_factcheck", "trained_items",
]


class ClaimScore(BaseModel):
    index: int
    label: Label
    claim: str
    outcome: Outcome | None = None
    path: Path_ | None = None
    error: str | None = None


class FactcheckScore(BaseModel):
    """One decoded answer."""

    id: str
    method: str
    answer_hash: str = ""
    claims: list[ClaimScore] = Field(default_factory=list)
    introduced: list[str] = Field(default_factory=list)
    degenerate: dict[int, str] = Field(default_factory=dict)
    draft_sentences: NonNegativeInt = 0
    answer_sentences: NonNegativeInt = 0
    verbatim_sentences: NonNegativeInt = 0
    calls: NonNegativeInt = 0
    tokens: NonNegativeInt = 0


def answer_hash(answer: str) -> str:
    import hashlib

    return hashlib.sha256((answer or "").encode("utf-8")).hexdigest()[:16]


def score_answer(item: FactcheckItem, answer: str | None, *, method: str = "?",
                 judge: Callable[[str, str], str] | None = None, usage: Any = None
                 ) -> FactcheckScore:
    """Score one answer claim by claim (module docs). Without a judge, claims the words cannot
    decide stay unscored (`outcome` None)."""
    answer = answer or ""
    claims = []
    for claim in item.claims:
        if claim.label == "unknown":
            continue
        score = ClaimScore(index=claim.index, label=claim.label, claim=claim.text)
        decision = decide_by_words(claim, item.draft, answer)
        if decision.outcome is not None:
            score.outcome, score.path = decision.outcome, decision.path
        elif judge is not None:
            score.path = "judge"
            try:
                score.outcome = decide_by_judge(claim, answer, judge)
            except Exception as exc:  # recorded; the claim stays unscored and is retried
                score.error = describe(exc)
        claims.append(score)
    known = item.draft + "\n" + "\n".join(text for _, text in item.passages)
    draft_sentences = split_sentences(item.draft)
    return FactcheckScore(
        id=item.id, method=method, answer_hash=answer_hash(answer), claims=claims,
        introduced=introduced(answer, known), degenerate=degenerate_sentences(answer),
        draft_sentences=len(draft_sentences), answer_sentences=len(split_sentences(answer)),
        verbatim_sentences=verbatim_sentences(draft_sentences, answer),
        calls=getattr(usage, "calls", 0) or 0, tokens=getattr(usage, "total_tokens", 0) or 0)


def _count(score: FactcheckScore, label: str, outcome: str) -> Pair:
    scored = [c for c in score.claims if c.label == label and c.outcome is not None]
    return (float(sum(c.outcome == outcome for c in scored)), float(len(scored)))


def _perfect(score: FactcheckScore) -> Pair:
    scored = [c for c in score.claims if c.outcome is not None]
    if len(scored) < len(score.claims):
        return (0.0, 0.0)  # an unscored claim: the answer cannot be called perfect or not
    return (float(all(c.outcome in ("fixed", "kept") for c in scored)), 1.0)


FACTCHECK_FIGURES: dict[str, Callable[[FactcheckScore], Pair]] = {
    "fixed_rate": lambda s: _count(s, "false", "fixed"),
    "removed_rate": lambda s: _count(s, "false", "removed"),
    "residual_rate": lambda s: _count(s, "false", "left"),
    "fixed_or_removed_rate": lambda s: (_count(s, "false", "fixed")[0]
                                        + _count(s, "false", "removed")[0],
                                        _count(s, "false", "fixed")[1]),
    "kept_rate": lambda s: _count(s, "true", "kept"),
    "false_alarm_rate": lambda s: _count(s, "true", "altered"),
    "true_removed_rate": lambda s: _count(s, "true", "removed"),
    "perfect_answer_rate": _perfect,
    "introduced_per_answer": lambda s: (float(len(s.introduced)), 1.0),
    "degenerate_per_answer": lambda s: (float(len(s.degenerate)), 1.0),
    "verbatim_share": lambda s: ((s.verbatim_sentences / s.draft_sentences, 1.0)
                                 if s.draft_sentences else (0.0, 0.0)),
    "length_ratio": lambda s: ((s.answer_sentences / s.draft_sentences, 1.0)
                               if s.draft_sentences else (0.0, 0.0)),
    "calls_per_answer": lambda s: (float(s.calls), 1.0),
    "tokens_per_answer": lambda s: (float(s.tokens), 1.0),
}
"""Every figure as one `(part, whole)` pair per answer (see `intervals`)."""


def summarize_factcheck(scores: Iterable[FactcheckScore | None]) -> dict[str, Any]:
    """Rates with 95% intervals over answers, counts, and the share of claims each path
    scored."""
    scores = list(scores)
    ok = [s for s in scores if s is not None]
    failed = len(scores) - len(ok)
    claims = [c for s in ok for c in s.claims]
    summary: dict[str, Any] = with_intervals(
        {name: [pair_of(s) for s in ok] for name, pair_of in FACTCHECK_FIGURES.items()})
    summary.update({
        "items": len(ok), "failed": failed,
        "false_claims": sum(c.label == "false" for c in claims),
        "true_claims": sum(c.label == "true" for c in claims),
        "unscored_claims": sum(c.outcome is None for c in claims),
        "paths": {p: (sum(c.path == p and c.outcome is not None for c in claims) / len(claims)
                      if claims else None) for p in ("verbatim", "details", "judge")},
    })
    return summary


def read_scores(path: str | Path) -> dict[str, FactcheckScore | None]:
    """`RUN.factcheck.jsonl`: score rows by id (None for a failed answer)."""
    return read_score_rows(path, FactcheckScore, "Factcheck-Bench scores")
