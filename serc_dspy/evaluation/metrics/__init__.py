"""Metrics, in one place: what a result is scored by, for the paper's tables and for DSPy.

Two kinds, one package:
- the paper's table metrics, scoring results files (`serc eval`, `serc report`): FActScore-style
  precision and fact preservation (`factscore`), the TruthfulQA LLM judge (`truthfulqa`), and
  cost read from traces (`cost`); the evaluator's own LM calls are counted apart (`meter`).
  Their names are re-exported here, the import path they have always had;
- metrics with DSPy's signature `metric(example, prediction, trace=None)` (`dspy_metrics`):
  what `serc compile` optimises one stage for and what an optimiser scores a whole SERC by.
  They are not re-exported here (they pull in the planted-error benchmark); the whole-SERC ones
  have the documented short path `serc_dspy.metrics`.

Every LM-judged metric runs under the caller's `dspy` context and counts its calls through
`lm_calls.tracked_call`, the same path SERC's steps take.
"""

from serc_dspy.evaluation.metrics.cost import (
    CostSummary,
    record_usage,
    summarize_cost,
    token_reduction,
)
from serc_dspy.evaluation.metrics.factscore import (
    GAMMA,
    AnswerScore,
    FactLabel,
    FactScorer,
    FactScoreSummary,
    fact_preservation,
    format_passages_for_judge,
    length_penalty_factor,
    summarize_factscore,
)
from serc_dspy.evaluation.metrics.meter import (
    ATTEMPTS,
    RETRY_TEMPERATURE,
    UsageMeter,
)
from serc_dspy.evaluation.metrics.truthfulqa import (
    ACCURACY_THRESHOLD,
    Judgment,
    TruthfulnessJudge,
    TruthfulnessScore,
    TruthfulQASummary,
    apply_critical_rule,
    summarize_truthfulqa,
)

__all__ = [
    "ACCURACY_THRESHOLD",
    "ATTEMPTS",
    "AnswerScore",
    "CostSummary",
    "FactLabel",
    "FactScoreSummary",
    "FactScorer",
    "GAMMA",
    "Judgment",
    "RETRY_TEMPERATURE",
    "TruthfulQASummary",
    "TruthfulnessJudge",
    "TruthfulnessScore",
    "UsageMeter",
    "apply_critical_rule",
    "fact_preservation",
    "format_passages_for_judge",
    "length_penalty_factor",
    "record_usage",
    "summarize_cost",
    "summarize_factscore",
    "summarize_truthfulqa",
    "token_reduction",
]
