"""Run a method over a dataset, resumably and one JSON line per item.

`run_experiment` builds the method through the registry, then decodes every item not already
in the results file, on a bounded pool of workers under one `dspy.context` (the LM and the
strict JSON adapter). A failing item is recorded with its error string (and no answer) and the
run goes on; a configuration error (`UserError`) stops it, since every item would fail alike.

A run also writes `<out>.meta.json` (method, dataset, options, LM name, commit and command;
never API keys). A resume must match what made the file: the same LM, method options, inputs
and decoding options (concurrency may change), or it is refused: one file, one experiment.

The results file itself (durability line by line, compaction on resume, the one-writer lock,
the worker pool) is `results`; scoring a run is `scoring`. Their names are re-exported here,
the import path callers have always used.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import dspy
from pydantic import BaseModel

from serc_dspy.core.errors import UserError, describe
from serc_dspy.core.io import read_json, write_json
from serc_dspy.core.trace import Trace
from serc_dspy.evaluation.datasets import Item
from serc_dspy.evaluation.protocol import provenance
from serc_dspy.evaluation.results import (
    RESULTS_SUFFIX,
    JsonlStore,
    check_results_path,
    jsonable,
    lm_name,
    process_items,
    progress_bar,
    read_results,
    sibling,
    timestamp,
)
from serc_dspy.evaluation.scoring import (
    factscore_summary,
    score_factscore,
    score_truthfulqa,
    truthfulqa_summary,
)
from serc_dspy.programs import build_method
from serc_dspy.programs.registry import get_method
from serc_dspy.runtime.adapter import StrictJSONAdapter

__all__ = [
    "DECODING_OPTIONS", "RESULTS_SUFFIX", "RESULT_INPUTS", "JsonlStore", "RunSummary",
    "check_results_path", "factscore_summary", "lm_name", "read_results", "run_experiment",
    "score_factscore", "score_truthfulqa", "sibling", "truthfulqa_summary",
]


class RunSummary(BaseModel):
    out: str
    total: int
    skipped: int
    completed: int
    failed: int
    seconds: float
    torn: int = 0
    """Torn last lines (a run killed mid-write) dropped from the results file on resume; their
    items were run again."""


_CONCURRENCY_OPTIONS = {"max_workers", "serial_stages", "progress"}
RESULT_INPUTS = ("dataset_path", "dataset_sha256", "drafts", "drafts_sha256", "max_tokens")
"""Entries of a run's `meta` that change its results: a resume must match them."""
DECODING_OPTIONS = ("max_tokens", "max_completion_tokens", "temperature", "top_p", "top_k",
                    "min_p", "seed", "stop", "n", "presence_penalty", "frequency_penalty",
                    "repetition_penalty", "repeat_penalty", "reasoning_effort")
"""The LM's own settings that change what it writes (recorded as `decoding` in the meta)."""


def _decoding(lm: Any) -> dict[str, Any]:
    """The LM's decoding options (`max_tokens`, `temperature`, ...) as the run sees them."""
    if lm is None:
        lm = dspy.settings.lm
    kwargs = getattr(lm, "kwargs", None)
    if not isinstance(kwargs, Mapping):
        return {}
    return jsonable({k: kwargs[k] for k in DECODING_OPTIONS if k in kwargs})


def _refuse(meta_path: Path, key: str, before: Any, now: Any) -> None:
    raise UserError(f"{meta_path.name} says these results were made with {key} {before!r}, "
                    f"not {now!r}; resume with the same {key} or write to another --out file")


def _check_same_settings(meta_path: Path, lm_name: str | None, options: Mapping[str, Any],
                         inputs: Mapping[str, Any] | None = None,
                         decoding: Mapping[str, Any] | None = None,
                         takes: Callable[[str], bool] = lambda option: True) -> None:
    """Refuse to resume a results file with another LM, other method options, other inputs
    (dataset, its path and content, retriever) or other decoding options: one file must hold
    one experiment. Concurrency options may change between resumes, and so may the options
    the method does not take (`takes`), since a baseline drops SERC's own: `initial`'s results
    resume beside a `serc --fact-evidence` run."""
    try:
        previous = read_json(meta_path, what="meta file") if meta_path.is_file() else {}
    except UserError as exc:
        raise UserError(f"{exc}; move it away to start a new experiment, or write to another "
                        "--out file") from None
    if not isinstance(previous, dict) or not previous.get("lm"):
        # records without the meta that says which LM and options made them: a resume could
        # mix two experiments in one file and then name only the second
        raise UserError(f"{meta_path.name} is missing or holds no run settings, so the results "
                        "beside it cannot be resumed: move them away to start a new "
                        "experiment, or write to another --out file")
    before = {k: v for k, v in (previous.get("options") or {}).items()
              if k not in _CONCURRENCY_OPTIONS and takes(k)}
    now = {k: v for k, v in jsonable(options).items()
           if k not in _CONCURRENCY_OPTIONS and takes(k)}
    for key, value in (inputs or {}).items():
        if key in previous and previous[key] != value:
            _refuse(meta_path, key, previous[key], value)
    recorded = previous.get("decoding")
    if isinstance(recorded, dict) and decoding is not None:
        for key in dict.fromkeys([*recorded, *decoding]):
            if recorded.get(key) != decoding.get(key):
                _refuse(meta_path, key, recorded.get(key), decoding.get(key))
    if previous.get("seeded_from"):  # an ablation's carried records: its options differ
        before = now
    if previous.get("lm") != lm_name or before != now:
        raise UserError(
            f"{meta_path.name} says these results were made with lm {previous.get('lm')!r} "
            f"and options {before}, not lm {lm_name!r} and options {now}; resume with the "
            "same settings or write to another --out file")


def _provenance(meta_path: Path) -> dict[str, Any]:
    """This run's commit and command, and every commit and command that wrote records into
    the same file before (a resumed run mixes them, and says so)."""

    now = provenance()
    try:
        before = read_json(meta_path, what="meta file") if meta_path.is_file() else {}
    except UserError:
        before = {}
    before = before if isinstance(before, dict) else {}
    return {**now,
            "commits": list(dict.fromkeys([*before.get("commits", []), now["commit"]])),
            "commands": list(dict.fromkeys([*before.get("commands", []), now["command"]]))}


def run_experiment(
    method: str,
    items: Sequence[Item],
    out_path: str | os.PathLike[str],
    *,
    retriever: Any = None,
    lm: Any = None,
    workers: int = 1,
    limit: int | None = None,
    progress: bool = True,
    dataset: str | None = None,
    adapter: Any = None,
    retry_failed: bool = True,
    meta: Mapping[str, Any] | None = None,
    retriever_for: Callable[[Item], Any] | None = None,
    **method_options: Any,
) -> RunSummary:
    """Run a registered method over `items`, appending one JSON line per finished item.

    `lm` (default: the context's LM) runs under `adapter` (default `StrictJSONAdapter()`, which
    the embedded model needs). Items whose id is already in `out_path` are skipped; failed ones
    are retried unless `retry_failed=False`. An item with an empty draft (a model that
    abstained) is recorded as an empty answer without calling the method.

    `retriever_for(item)`, when given, builds each item's own retriever (a benchmark whose
    evidence is the item's own article or knowledge); `retriever` then only names it.
    """

    if workers < 1:
        raise UserError(f"workers must be at least 1, got {workers}")
    if limit is not None and limit < 0:
        raise UserError(f"limit must not be negative, got {limit}")
    items = list(items)[:limit] if limit is not None else list(items)
    program = build_method(method, retriever=retriever, **method_options)
    out = Path(out_path)
    check_results_path(out)
    store = JsonlStore(out)
    try:
        done = store.resume(retry_failed=retry_failed)
    except OSError as exc:
        store.close()
        raise UserError(f"cannot write the results file {out}: "
                        f"{exc.strerror or exc}") from None
    try:
        return _run_claimed(method, items, out, store, done, retriever=retriever, lm=lm,
                            adapter=adapter, workers=workers, limit=limit, dataset=dataset,
                            progress=progress, meta=meta, program=program,
                            method_options=method_options, retriever_for=retriever_for)
    finally:
        store.close()


def _run_claimed(method, items, out, store, done, *, retriever, lm, adapter, workers, limit,
                 dataset, progress, meta, program, method_options,
                 retriever_for=None) -> RunSummary:
    other = {r.get("method") for r in done.values()} - {method}
    if other:
        raise UserError(f"{out} holds results of method {sorted(map(str, other))[0]!r}, not "
                        f"{method!r}; use another --out file")
    todo = [item for item in items if item.id not in done]
    meta_path = sibling(out, ".meta.json")
    meta = jsonable(meta or {})
    decoding = _decoding(lm)
    if done:
        retriever_name = getattr(retriever, "name", None) if retriever is not None else None
        _check_same_settings(meta_path, lm_name(lm), method_options,
                             {"dataset": dataset, "retriever": retriever_name,
                              "retriever_sha256": getattr(retriever, "content_sha256", None),
                              **{k: meta[k] for k in RESULT_INPUTS if k in meta}},
                             decoding, takes=get_method(method).accepts)
    info = {
        **_provenance(meta_path),
        "method": method, "dataset": dataset, "lm": lm_name(lm),
        "retriever": getattr(retriever, "name", None) if retriever is not None else None,
        "retriever_sha256": getattr(retriever, "content_sha256", None),
        "options": jsonable(method_options), "decoding": decoding, "workers": workers,
        "limit": limit, "items": len(items), **meta,
        "started": timestamp(),
    }
    write_json(meta_path, info)

    def work(item: Item) -> dict[str, Any]:
        record: dict[str, Any] = {"id": item.id, "method": method, "dataset": dataset,
                                  "question": item.question, "topic": item.topic,
                                  "answer": None, "initial_answer": None, "trace": None,
                                  "error": None, "seconds": 0.0}
        started = time.monotonic()
        try:
            if item.draft is not None and not item.draft.strip():
                trace = Trace(method=method, question=item.question, draft_given=True)
                trace.log("runner", "empty draft: recorded as an abstention", "info")
                answer = initial = ""
            else:
                decoder = program if retriever_for is None else build_method(
                    method, retriever=retriever_for(item), **method_options)
                prediction = decoder(question=item.question, draft=item.draft)
                trace, answer, initial = (prediction.trace, prediction.answer,
                                          prediction.initial_answer)
            record.update(answer=answer, initial_answer=initial,
                          trace=trace.model_dump(mode="json"))
            if trace.status == "failed":  # nothing verified: an error, retried on resume
                record["error"] = f"decoding failed: {trace.failure}"
        except UserError:
            raise  # configuration (no LM, a rejected key...): every item would fail the same way
        except Exception as exc:  # recorded and the run goes on; retried on resume
            record["error"] = describe(exc)
        record["seconds"] = round(time.monotonic() - started, 3)
        return record

    started = time.monotonic()
    settings: dict[str, Any] = {"adapter": adapter if adapter is not None else StrictJSONAdapter()}
    if lm is not None:
        settings["lm"] = lm
    off = [rule for rule, on in (method_options.get("rules") or {}).items() if not on]
    label = f"{method} ({', '.join(off)} off)" if off else method  # an ablated run
    bar = progress_bar(len(items), len(items) - len(todo), label, progress)
    try:
        with dspy.context(**settings):
            completed, failed = process_items(todo, work, store, workers=workers, bar=bar)
    finally:
        bar.close()
    summary = RunSummary(out=str(out), total=len(items), skipped=len(items) - len(todo),
                         completed=completed, failed=failed,
                         seconds=round(time.monotonic() - started, 3), torn=store.dropped_torn)
    write_json(meta_path, {**info, "finished": timestamp(),
                            **summary.model_dump(exclude={"out"})})
    return summary
