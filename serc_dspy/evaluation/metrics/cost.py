"""A method's cost per question, read from the traces of its results (never recomputed).

The trace is the single record of what a run spent: `Usage` counts every LM call SERC made. A
results record's trace is read back here, so a report's cost column and `serc correct`'s token
line cannot disagree.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from pydantic import BaseModel

from serc_dspy.core.trace import Usage
from serc_dspy.evaluation.metrics.meter import mean


class CostSummary(BaseModel):
    questions: int = 0
    calls_per_question: float | None = None
    prompt_tokens_per_question: float | None = None
    completion_tokens_per_question: float | None = None
    tokens_per_question: float | None = None
    seconds_per_question: float | None = None


def record_usage(record: Mapping[str, Any]) -> Usage | None:
    """The method's LM usage of one result record, read from its trace (None if it failed)."""
    trace = record.get("trace")
    if record.get("error") or not isinstance(trace, Mapping):
        return None
    return Usage.model_validate(trace.get("usage") or {})


def summarize_cost(records: Iterable[Mapping[str, Any]]) -> CostSummary:
    """Per-question means of LM calls and tokens over successfully finished records."""
    usages, seconds = [], []
    for record in records:
        usage = record_usage(record)
        if usage is None:
            continue
        usages.append(usage.total)
        if isinstance(record.get("seconds"), int | float):
            seconds.append(float(record["seconds"]))
    if not usages:
        return CostSummary()
    return CostSummary(
        questions=len(usages),
        calls_per_question=mean([u.calls for u in usages]),
        prompt_tokens_per_question=mean([u.prompt_tokens for u in usages]),
        completion_tokens_per_question=mean([u.completion_tokens for u in usages]),
        tokens_per_question=mean([u.total_tokens for u in usages]),
        seconds_per_question=mean(seconds),
    )


def token_reduction(tokens: float | None, reference: float | None) -> float | None:
    """How much cheaper `tokens` is than `reference`, as a fraction (0.456 = 45.6% fewer)."""
    if tokens is None or not reference:
        return None
    return 1 - tokens / reference
