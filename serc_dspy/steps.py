"""The traced-step primitive: one LM call through a predictor, with its usage counted.

Every program (`programs.base.TracedProgram.call`) and every metric (`evaluation.metrics.
UsageMeter`) calls predictors through `tracked_call`, so usage is counted one way everywhere:

- a usage tracker of our own is nested in any outer one (`dspy.configure(track_usage=True)`,
  `with dspy.track_usage()`, a tracked parent program): DSPy rolls ours up into the outer one
  on exit, so an outer tracker neither hides these calls nor loses them;
- a call DSPy served from its cache spends no tokens but is still a call (`cached=1`);
- a call that raised is a call (`failed=1`), recorded before the error propagates.

This module sits below `programs/` and `evaluation/` and imports only the trace vocabulary.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import dspy
from dspy.utils.usage_tracker import track_usage

from serc_dspy.trace import StepUsage

Record = Callable[[str, StepUsage], None]
"""`record(model, usage)`: where a call's usage goes (a trace's `Usage.record` per step)."""


def model_name(lm: Any) -> str:
    return str(getattr(lm, "model", None) or "unknown")


def tracked_call(predictor: dspy.Predict, record: Record, *, lm: Any = None,
                 adapter: Any = None, **inputs: Any) -> Any:
    """Run `predictor(**inputs)` (on `lm` / `adapter` when given, else the context's) and
    report its usage to `record` once per model it used (see the module docs)."""
    settings: dict[str, Any] = {}
    if lm is not None:
        settings["lm"] = lm
    if adapter is not None:
        settings["adapter"] = adapter
    model = model_name(settings.get("lm") or dspy.settings.lm)
    with dspy.context(**settings), track_usage() as tracker:
        try:
            prediction = predictor(**inputs)
        except Exception:
            record(model, StepUsage(calls=1, failed=1))
            raise
    entries = [(name, entry) for name, items in tracker.usage_data.items() for entry in items]
    if not entries:  # served from DSPy's cache: a call, but no tokens spent
        record(model, StepUsage(calls=1, cached=1))
    for name, entry in entries:
        record(name, StepUsage(calls=1, prompt_tokens=int(entry.get("prompt_tokens") or 0),
                               completion_tokens=int(entry.get("completion_tokens") or 0)))
    return prediction
