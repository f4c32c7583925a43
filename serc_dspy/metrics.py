"""The documented import path of the whole-SERC metrics with DSPy's signature, which live in
`serc_dspy.evaluation.metrics.dspy_metrics` (with the per-stage ones `serc compile` uses):

    from serc_dspy.metrics import planted_error_examples, planted_error_score
"""

from serc_dspy.evaluation.metrics.dspy_metrics import (
    FactPrecision,
    planted_error_examples,
    planted_error_feedback,
    planted_error_score,
    syndrome_agreement,
    syndrome_agreement_feedback,
)

__all__ = [
    "FactPrecision", "planted_error_examples", "planted_error_feedback", "planted_error_score",
    "syndrome_agreement", "syndrome_agreement_feedback",
]
