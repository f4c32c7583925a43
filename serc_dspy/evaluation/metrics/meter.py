"""What every LM-judged metric shares: the evaluator's calls counted, and retried warmer.

The evaluator is whatever LM is active in the `dspy` context when scoring, which may differ
from the LM that produced the answers. Every LM call made while scoring is counted in a
`Usage`, kept apart from the method's own cost (which is read from each result's trace).
`UsageMeter` does that counting (through `lm_calls.tracked_call`, the same path SERC's own
calls take), and `retry_config` is the one retry policy of the FActScore and TruthfulQA judges.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import Any

import dspy

from serc_dspy.core.trace import StepUsage, Usage
from serc_dspy.runtime.lm_calls import tracked_call

ATTEMPTS = 2
RETRY_TEMPERATURE = 0.7
"""Retries run warmer so a deterministic (temperature 0) judge can give a different answer."""


def mean(values: Sequence[float]) -> float | None:
    return sum(values) / len(values) if values else None


class UsageMeter:
    """Counts LM calls and tokens of scoring steps into a `Usage`, safely across threads.

    `call(step, predictor, lm=None, **inputs)` runs the predictor with usage tracking (and the
    given LM, else the context's) and records one call per model it used.
    """

    def __init__(self, usage: Usage | None = None):
        self.usage = usage if usage is not None else Usage()
        self.lock = threading.Lock()

    def call(self, step: str, predictor: dspy.Predict, lm: Any = None, **inputs):
        def record(model: str, usage: StepUsage) -> None:
            with self.lock:
                self.usage.record(step, model, usage)

        return tracked_call(predictor, record, lm=lm, **inputs)


def retry_config(attempt: int) -> dict[str, Any]:
    return {} if attempt == 0 else {"config": {"temperature": RETRY_TEMPERATURE}}
