"""One predictor call on an LM, its usage counted one way everywhere.

`tracked_call` / `tracked_acall` are the only places a predictor meets an LM: the step layer's
`Run.call` (`steps`) and the evaluator's `UsageMeter` (`evaluation.metrics`) both go through
them, so a call's cost is read the same way whether SERC made it or a judge did:

- a usage tracker of our own is nested in any outer one (`dspy.configure(track_usage=True)`,
  `with dspy.track_usage()`, a tracked parent program): DSPy rolls ours up into the outer one
  on exit, so an outer tracker neither hides these calls nor loses them;
- a call DSPy served from its cache spends no tokens but is still a call (`cached=1`);
- a call that raised is a call (`failed=1`), recorded before the error propagates;
- a provider's rejected key is a configuration error (`KeyRejected`), whatever the backend.

Kept apart from `steps` because it needs no run: a metric scores with it outside any program.
Imports only the trace and error vocabulary (and `concurrency` for sync-only LMs).
"""

from __future__ import annotations

import asyncio
import weakref
from collections.abc import Callable
from typing import Any

import dspy
from dspy.utils.usage_tracker import track_usage

from serc_dspy.core.errors import KeyRejected, MalformedOutput, UserError, caused_by, one_line
from serc_dspy.core.trace import StepUsage
from serc_dspy.runtime.concurrency import in_thread

Record = Callable[[str, StepUsage], None]
"""`record(model, usage)`: where a call's usage goes (a trace's `Usage.record` per step)."""


def is_malformed(exc: BaseException) -> bool:
    """A reply that could not be read as its signature's output (cut-off or broken JSON)."""
    from dspy.utils.exceptions import AdapterParseError

    return caused_by(exc, MalformedOutput) or caused_by(exc, AdapterParseError)


def model_name(lm: Any) -> str:
    return str(getattr(lm, "model", None) or "unknown")


def _settings(lm: Any, adapter: Any) -> dict[str, Any]:
    settings: dict[str, Any] = {}
    if lm is not None:
        settings["lm"] = lm
    if adapter is not None:
        settings["adapter"] = adapter
    return settings


def _report_usage(tracker: Any, record: Record, model: str) -> None:
    entries = [(name, entry) for name, items in tracker.usage_data.items() for entry in items]
    if not entries:  # served from DSPy's cache: a call, but no tokens spent
        record(model, StepUsage(calls=1, cached=1))
    for name, entry in entries:
        details = entry.get("prompt_tokens_details") or {}
        cached = details.get("cached_tokens") if isinstance(details, dict) else None
        record(name, StepUsage(calls=1, prompt_tokens=int(entry.get("prompt_tokens") or 0),
                               cached_prompt_tokens=int(cached or 0),
                               completion_tokens=int(entry.get("completion_tokens") or 0)))


def tracked_call(predictor: dspy.Predict, record: Record, *, lm: Any = None,
                 adapter: Any = None, **inputs: Any) -> Any:
    """Run `predictor(**inputs)` (on `lm` / `adapter` when given, else the context's) and
    report its usage to `record` once per model it used (see the module docs)."""
    settings = _settings(lm, adapter)
    model = model_name(settings.get("lm") or dspy.settings.lm)
    with dspy.context(**settings), track_usage() as tracker:
        try:
            prediction = predictor(**inputs)
        except Exception as exc:
            record(model, StepUsage(calls=1, failed=1))
            _raise_rejected_key(exc)
            raise
    _report_usage(tracker, record, model)
    return prediction


def _raise_rejected_key(exc: Exception) -> None:
    """A provider's rejected key (DSPy's `LMAuthError`, HTTP 401/403, from any backend) is a
    configuration error: raised as `KeyRejected` (redacted), which aborts the run."""
    if isinstance(exc, dspy.LMAuthError) and not isinstance(exc, UserError):
        status = getattr(exc, "status", None)
        raise KeyRejected(f"the LM rejected its API key{f' (HTTP {status})' if status else ''}: "
                          f"{one_line(exc)}") from exc


_SYNC_ONLY: weakref.WeakSet = weakref.WeakSet()
"""LMs seen without an async half (a custom engine without `async_engine=`, a BaseLM subclass
with only `forward`): they are called in a worker thread instead."""
_NO_ASYNC = (NotImplementedError, dspy.LMUnsupportedFeatureError)


async def tracked_acall(predictor: dspy.Predict, record: Record, *, lm: Any = None,
                        adapter: Any = None, **inputs: Any) -> Any:
    """The async twin of `tracked_call`: `await predictor.acall(**inputs)`, usage counted the
    same way. An LM without an async half runs the sync call in a worker thread."""
    settings = _settings(lm, adapter)
    target = settings.get("lm") or dspy.settings.lm
    model = model_name(target)
    with dspy.context(**settings), track_usage() as tracker:
        call = asyncio.ensure_future(_acall(predictor, target, inputs))
        try:
            prediction = await asyncio.shield(call)
        except asyncio.CancelledError:
            # Cancelled (a sibling failed) while the engine serves the call: the engine
            # finishes it anyway, so wait for it, count it with its tokens, then stop.
            await _settle(call)
            _report_cancelled(call, tracker, record, model)
            raise
        except Exception as exc:
            record(model, StepUsage(calls=1, failed=1))
            _raise_rejected_key(exc)
            raise
    _report_usage(tracker, record, model)
    return prediction


async def _settle(call: asyncio.Future) -> None:
    try:
        await call
    except BaseException:  # its outcome is counted, not raised: the caller is cancelled
        pass


def _report_cancelled(call: asyncio.Future, tracker: Any, record: Record, model: str) -> None:
    if call.cancelled() or call.exception() is not None:
        record(model, StepUsage(calls=1, failed=1))
        return
    _report_usage(tracker, record, model)
    record(model, StepUsage(cancelled=1))


async def _acall(predictor: dspy.Predict, lm: Any, inputs: dict[str, Any]) -> Any:
    if lm is not None and lm in _SYNC_ONLY:
        return await in_thread(predictor, **inputs)
    try:
        return await predictor.acall(**inputs)
    except _NO_ASYNC:
        if lm is None:
            raise
        _SYNC_ONLY.add(lm)
        return await in_thread(predictor, **inputs)
