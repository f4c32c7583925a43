"""Experiments: datasets, metrics (FActScore-style, preservation, TruthfulQA judge, cost),
a resumable runner and reports. Reads programs through the registry and results through trace."""

from serc_dspy.evaluation.datasets import (
    DATASETS,
    DatasetError,
    Item,
    attach_drafts,
    load_bio,
    load_dataset,
    load_factscore,
    load_truthfulqa,
)
from serc_dspy.evaluation.metrics import (
    AnswerScore,
    FactScorer,
    TruthfulnessJudge,
    fact_preservation,
    length_penalty_factor,
    summarize_cost,
    summarize_factscore,
    summarize_truthfulqa,
)
from serc_dspy.evaluation.runner import run_experiment
from serc_dspy.evaluation.scoring import score_factscore, score_truthfulqa

__all__ = [
    "DATASETS",
    "AnswerScore",
    "DatasetError",
    "FactScorer",
    "Item",
    "TruthfulnessJudge",
    "attach_drafts",
    "fact_preservation",
    "length_penalty_factor",
    "load_bio",
    "load_dataset",
    "load_factscore",
    "load_truthfulqa",
    "run_experiment",
    "score_factscore",
    "score_truthfulqa",
    "summarize_cost",
    "summarize_factscore",
    "summarize_truthfulqa",
]
