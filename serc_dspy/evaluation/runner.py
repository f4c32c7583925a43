"""Run a method over a dataset, and score results files, resumably and one JSON line per item.

Durability and resume (both `run_experiment` and the `score_*` functions):
- every finished item is appended as one JSON line, then flushed and fsynced, under a lock, so
  a killed run loses at most the items in flight;
- re-running with the same output file skips every id already present; before that the file is
  compacted: a torn last line (a kill mid-write; a warning says so, and `RunSummary.torn`
  counts it) and records of FAILED items are dropped, so failed items are retried on resume
  and each id still appears exactly once; any other malformed line is an error naming it;
- a failing item is recorded with its error string (and no answer) and the run goes on.

A run also writes `<out>.meta.json` (method, dataset, options, LM name; never API keys).
Scoring `RUN.jsonl` writes `RUN.factscore.jsonl` / `RUN.truthfulqa.jsonl` and a
`RUN.<metric>.summary.json` next to it.
"""

from __future__ import annotations

import contextvars
import json
import os
import sys
import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import FIRST_COMPLETED, ThreadPoolExecutor, wait
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import dspy
from pydantic import BaseModel

from serc_dspy.adapter import StrictJSONAdapter
from serc_dspy.errors import UserError, describe
from serc_dspy.evaluation.datasets import Item
from serc_dspy.evaluation.metrics import (
    ATTEMPTS,
    GAMMA,
    AnswerScore,
    FactScorer,
    TruthfulnessJudge,
    TruthfulnessScore,
    fact_preservation,
    summarize_cost,
    summarize_factscore,
    summarize_truthfulqa,
)
from serc_dspy.io import (
    json_line,
    read_json,
    read_jsonl,
    read_jsonl_rows,
    write_json,
    write_jsonl,
)
from serc_dspy.retrieval.knowledge import SCORING_TOP_K, KnowledgeSource
from serc_dspy.trace import Trace, Usage

RESULTS_SUFFIX = ".jsonl"


def sibling(path: str | os.PathLike[str], suffix: str) -> Path:
    """`results/RUN.jsonl` + `.meta.json` -> `results/RUN.meta.json`."""
    path = Path(path)
    stem = path.name[: -len(RESULTS_SUFFIX)] if path.name.endswith(RESULTS_SUFFIX) else path.name
    return path.with_name(stem + suffix)



def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def read_results(path: str | os.PathLike[str],
                 on_torn: Callable[[int, str], None] | None = None) -> list[dict[str, Any]]:
    """Records of a results file, or of a score file the `score_*` functions append to.

    Strict like every JSON-lines reader (`serc_dspy.io.read_jsonl`), except for a torn last
    line (a run killed mid-write): it is skipped with a warning and handed to `on_torn`, and
    the next resume drops it from the file and runs its item again.
    """
    return read_jsonl(path, what="results file", torn_last_line="skip", on_torn=on_torn)


class JsonlStore:
    """An append-only JSONL file of per-item records keyed by `"id"`, durable line by line."""

    def __init__(self, path: str | os.PathLike[str]):
        self.path = Path(path)
        self.lock = threading.Lock()
        self.dropped_failed = 0
        self.dropped_torn = 0

    def claim(self) -> None:
        """Become the file's only writer (an advisory lock the OS drops if the process dies).

        Two runs on one file would compute everything twice and make scoring double-count.
        """
        import fcntl

        self.path.parent.mkdir(parents=True, exist_ok=True)
        handle = open(self.path.with_name(self.path.name + ".lock"), "a")
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            handle.close()
            raise UserError(f"another process is writing {self.path}; wait for it to finish "
                            "or use another output file") from None
        self._claim = handle

    def close(self) -> None:
        handle = getattr(self, "_claim", None)
        if handle is not None:
            handle.close()
            self._claim = None

    def resume(self, *, retry_failed: bool = True) -> dict[str, dict[str, Any]]:
        """Claim the file, compact it (see module docs) and return the kept records by id."""
        self.claim()
        if not self.path.exists():
            self.path.parent.mkdir(parents=True, exist_ok=True)
            return {}
        torn: list[int] = []
        kept: dict[str, dict[str, Any]] = {}
        rows = read_jsonl_rows(self.path, what="results file", torn_last_line="skip",
                               on_torn=lambda number, _text: torn.append(number))
        self.dropped_torn = len(torn)
        changed = bool(torn) or not _ends_a_line(self.path)
        for number, record in rows:
            if "id" not in record:
                raise UserError(f"{self.path}, line {number}: a record without an 'id'; "
                                "this is not a results file, or it was edited by hand")
            ident = str(record["id"])
            if ident in kept or (retry_failed and record.get("error")):
                self.dropped_failed += bool(record.get("error"))
                changed = True
                continue
            kept[ident] = record
        if changed:
            write_jsonl(self.path, kept.values())
        return kept

    def append(self, record: Mapping[str, Any]) -> None:
        line = json_line(record)
        with self.lock, open(self.path, "a", encoding="utf-8") as fh:
            fh.write(line)
            fh.flush()
            os.fsync(fh.fileno())


def _ends_a_line(path: Path) -> bool:
    """Whether a file is empty or ends in a newline (else the next append would continue its
    last line)."""
    with open(path, "rb") as handle:
        if handle.seek(0, os.SEEK_END) == 0:
            return True
        handle.seek(-1, os.SEEK_END)
        return handle.read(1) == b"\n"


def check_results_path(out: Path) -> None:
    """Refuse a results path that cannot be written, before any work: a folder, a folder at
    its meta or lock file's path, a parent that is a file or cannot be created."""
    for path, what in ((out, "the results file"), (sibling(out, ".meta.json"), "its meta file"),
                       (out.with_name(out.name + ".lock"), "its lock file")):
        if path.is_dir():
            raise UserError(f"{what} {path} is a folder; give the results a file path such as "
                            f"{out / 'run.jsonl' if path == out else 'another --out'}")
    folder = out.parent
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise UserError(f"cannot create the folder {folder} of the results file {out}: "
                        f"{exc.strerror or exc}") from None
    if not os.access(folder, os.W_OK) or (out.exists() and not os.access(out, os.W_OK)):
        raise UserError(f"the results file {out} is not writable")


def _progress_bar(total: int, initial: int, desc: str, enabled: bool):
    from tqdm import tqdm

    return tqdm(total=total, initial=initial, desc=desc, unit="item", file=sys.stderr,
                disable=not enabled, dynamic_ncols=True, smoothing=0.1)


def _process(todo: Sequence[Any], work: Callable[[Any], dict[str, Any]], store: JsonlStore, *,
             workers: int, bar) -> tuple[int, int]:
    """Run `work` over `todo` on a bounded thread pool; each record is appended by the worker
    that made it, so an item finishing after an interrupt is still saved.

    Every task runs in its own copy of the caller's context, so `dspy.context` settings (LM,
    adapter) reach the workers. At most `workers` tasks are queued at once, so an interrupt
    leaves nothing else to run. Returns (completed, failed).
    """
    if not todo:
        return 0, 0

    def task(item: Any) -> dict[str, Any]:
        record = work(item)
        store.append(record)
        return record

    completed = failed = 0
    queue = iter(todo)
    with ThreadPoolExecutor(max_workers=max(1, min(workers, len(todo)))) as pool:
        pending = set()
        try:
            for item in queue:
                pending.add(pool.submit(contextvars.copy_context().run, task, item))
                if len(pending) >= workers:
                    break
            while pending:
                done, pending = wait(pending, return_when=FIRST_COMPLETED)
                for future in done:
                    record = future.result()
                    completed += 1
                    failed += bool(record.get("error"))
                    bar.set_postfix(failed=failed, refresh=False)
                    bar.update(1)
                    nxt = next(queue, None)
                    if nxt is not None:
                        pending.add(pool.submit(contextvars.copy_context().run, task, nxt))
        except BaseException:
            running = [f for f in pending if not f.cancel()]
            if running:
                print(f"\ninterrupted: waiting for {len(running)} item(s) in flight to finish "
                      "and be saved (kill the process to drop them)", file=sys.stderr)
            raise
    return completed, failed


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


def _jsonable(options: Mapping[str, Any]) -> dict[str, Any]:
    out = {}
    for key, value in options.items():
        try:
            json.dumps(value)
        except TypeError:
            value = repr(value)
        out[key] = value
    return out


def lm_name(lm: Any) -> str | None:
    """The LM's model name, with the server URL for a server LM (a results file is one
    experiment: another endpoint may serve another model under the same name)."""
    if lm is None:
        lm = dspy.settings.lm
    if lm is None:
        return None
    url = getattr(getattr(lm, "engine", None), "url", None)
    name = str(getattr(lm, "model", None))
    return f"{name}@{url}" if isinstance(url, str) and not name.startswith("local/") else name


_CONCURRENCY_OPTIONS = {"max_workers", "progress"}
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
    return _jsonable({k: kwargs[k] for k in DECODING_OPTIONS if k in kwargs})


def _refuse(meta_path: Path, key: str, before: Any, now: Any) -> None:
    raise UserError(f"{meta_path.name} says these results were made with {key} {before!r}, "
                    f"not {now!r}; resume with the same {key} or write to another --out file")


def _check_same_settings(meta_path: Path, lm_name: str | None, options: Mapping[str, Any],
                         inputs: Mapping[str, Any] | None = None,
                         decoding: Mapping[str, Any] | None = None) -> None:
    """Refuse to resume a results file with another LM, other method options, other inputs
    (dataset, its path and content, retriever) or other decoding options: one file must hold
    one experiment. Concurrency options may change between resumes."""
    try:
        previous = read_json(meta_path, what="meta file") if meta_path.is_file() else {}
    except UserError as exc:
        raise UserError(f"{exc}; move it away to start a new experiment, or write to another "
                        "--out file") from None
    if not isinstance(previous, dict) or not previous:
        return
    before = {k: v for k, v in (previous.get("options") or {}).items()
              if k not in _CONCURRENCY_OPTIONS}
    now = {k: v for k, v in _jsonable(options).items() if k not in _CONCURRENCY_OPTIONS}
    for key, value in (inputs or {}).items():
        if key in previous and previous[key] != value:
            _refuse(meta_path, key, previous[key], value)
    recorded = previous.get("decoding")
    if isinstance(recorded, dict) and decoding is not None:
        for key in dict.fromkeys([*recorded, *decoding]):
            if recorded.get(key) != decoding.get(key):
                _refuse(meta_path, key, recorded.get(key), decoding.get(key))
    if previous.get("lm") != lm_name or before != now:
        raise UserError(
            f"{meta_path.name} says these results were made with lm {previous.get('lm')!r} "
            f"and options {before}, not lm {lm_name!r} and options {now}; resume with the "
            "same settings or write to another --out file")


def _provenance(meta_path: Path) -> dict[str, Any]:
    """This run's commit and command, and every commit and command that wrote records into
    the same file before (a resumed run mixes them, and says so)."""
    from serc_dspy.evaluation.protocol import provenance

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
    from serc_dspy.programs import build_method

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
    meta = _jsonable(meta or {})
    decoding = _decoding(lm)
    if done:
        retriever_name = getattr(retriever, "name", None) if retriever is not None else None
        _check_same_settings(meta_path, lm_name(lm), method_options,
                             {"dataset": dataset, "retriever": retriever_name,
                              **{k: meta[k] for k in RESULT_INPUTS if k in meta}},
                             decoding)
    info = {
        **_provenance(meta_path),
        "method": method, "dataset": dataset, "lm": lm_name(lm),
        "retriever": getattr(retriever, "name", None) if retriever is not None else None,
        "options": _jsonable(method_options), "decoding": decoding, "workers": workers,
        "limit": limit, "items": len(items), **meta,
        "started": _now(),
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
                from serc_dspy.programs import build_method

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
    bar = _progress_bar(len(items), len(items) - len(todo), method, progress)
    try:
        with dspy.context(**settings):
            completed, failed = _process(todo, work, store, workers=workers, bar=bar)
    finally:
        bar.close()
    summary = RunSummary(out=str(out), total=len(items), skipped=len(items) - len(todo),
                         completed=completed, failed=failed,
                         seconds=round(time.monotonic() - started, 3), torn=store.dropped_torn)
    write_json(meta_path, {**info, "finished": _now(),
                            **summary.model_dump(exclude={"out"})})
    return summary


# -- scoring results files ----------------------------------------------------------------
def _run_records(run_path: str | os.PathLike[str]) -> tuple[list[dict], list[dict]]:
    """(successful, failed) records of a run file."""
    records = read_results(run_path)
    if not records:
        raise UserError(f"results file {run_path} has no records")
    ok = [r for r in records if not r.get("error") and r.get("id") is not None]
    return ok, [r for r in records if r.get("error")]


def _score_loop(run_path, out, todo_records, work, *, workers, progress, desc, settings):
    store = JsonlStore(out)
    done = store.resume()
    todo = [r for r in todo_records if str(r["id"]) not in done]
    bar = _progress_bar(len(todo_records), len(todo_records) - len(todo), desc, progress)
    try:
        with dspy.context(**settings):
            _process(todo, work, store, workers=workers, bar=bar)
    finally:
        store.close()
        bar.close()
    return read_results(out)


def _settings(lm: Any, adapter: Any) -> dict[str, Any]:
    settings: dict[str, Any] = {"adapter": adapter if adapter is not None else StrictJSONAdapter()}
    if lm is not None:
        settings["lm"] = lm
    return settings


def _usage_sum(usages: Iterable[Usage]) -> Usage:
    total = Usage()
    for usage in usages:
        total.merge(usage)
    return total


def factscore_summary(lines: Sequence[Mapping[str, Any]], *, length_penalty: bool = False,
                      gamma: int = GAMMA) -> dict[str, Any]:
    """Method and initial-answer FActScore, preservation and evaluator cost from score lines."""
    method_scores, initial_scores, paired_m, paired_i, usages = [], [], [], [], []
    for line in lines:
        answer = AnswerScore.model_validate(line["answer"]) if line.get("answer") else None
        initial = AnswerScore.model_validate(line["initial"]) if line.get("initial") else None
        method_scores.append(answer)
        initial_scores.append(initial)
        for score in (answer, initial):
            if score is not None:
                usages.append(score.usage)
        if answer and initial and not answer.error and not initial.error:
            paired_m.append(answer.n_facts if answer.responded else 0)
            paired_i.append(initial.n_facts if initial.responded else 0)
    method = summarize_factscore(method_scores, length_penalty=length_penalty, gamma=gamma)
    initial = summarize_factscore(initial_scores, length_penalty=length_penalty, gamma=gamma)
    return {
        "metric": "factscore",
        "method": next((line.get("method") for line in lines if line.get("method")), None),
        **method.model_dump(),
        "initial": initial.model_dump(),
        "preservation": fact_preservation(paired_m, paired_i),
        "paired_items": len(paired_m),
        "evaluator_usage": _usage_sum(usages).total.model_dump(),
    }


def score_factscore(
    run_path: str | os.PathLike[str],
    knowledge: KnowledgeSource,
    *,
    out_path: str | os.PathLike[str] | None = None,
    length_penalty: bool = False,
    gamma: int = GAMMA,
    k: int = SCORING_TOP_K,
    attempts: int = ATTEMPTS,
    workers: int = 1,
    progress: bool = True,
    lm: Any = None,
    adapter: Any = None,
) -> dict[str, Any]:
    """Score each result's answer and initial answer FActScore-style (see `metrics`).

    Writes `RUN.factscore.jsonl` (per-fact labels per item) and `RUN.factscore.summary.json`,
    and returns the summary. Failed run records are not scored (counted as `run_errors`).
    """
    ok, failed = _run_records(run_path)
    out = Path(out_path) if out_path else sibling(run_path, ".factscore.jsonl")
    scorer = FactScorer(knowledge, k=k, attempts=attempts)

    def work(record: dict[str, Any]) -> dict[str, Any]:
        topic = record.get("topic")
        line: dict[str, Any] = {"id": record["id"], "method": record.get("method"),
                                "topic": topic, "answer": None, "initial": None, "error": None}
        if not topic:
            line["error"] = "the result has no topic to look up in the knowledge source"
            return line
        answer = scorer.score(record.get("answer"), topic)
        if (record.get("initial_answer") or "") == (record.get("answer") or ""):
            initial = answer.model_copy(update={"usage": Usage()})
        else:
            initial = scorer.score(record.get("initial_answer"), topic)
        line["answer"] = answer.model_dump(mode="json")
        line["initial"] = initial.model_dump(mode="json")
        line["error"] = answer.error or initial.error
        return line

    lines = _score_loop(run_path, out, ok, work, workers=workers, progress=progress,
                        desc="factscore", settings=_settings(lm, adapter))
    summary = {**factscore_summary(lines, length_penalty=length_penalty, gamma=gamma),
               "evaluator": lm_name(lm), "k": k, "run_errors": len(failed),
               "cost": summarize_cost(ok).model_dump(), "run": str(run_path),
               "scores": str(out)}
    write_json(sibling(run_path, ".factscore.summary.json"), summary)
    return summary


def truthfulqa_summary(lines: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    scores: list[TruthfulnessScore | None] = []
    usages = []
    for line in lines:
        if line.get("judgments") is None:
            scores.append(None)
            continue
        score = TruthfulnessScore.model_validate(
            {"judgments": line["judgments"], "usage": line.get("usage") or {}})
        scores.append(score)
        usages.append(score.usage)
    summary = summarize_truthfulqa(scores)
    return {"metric": "truthfulqa",
            "method": next((line.get("method") for line in lines if line.get("method")), None),
            **summary.model_dump(),
            "evaluator_usage": _usage_sum(usages).total.model_dump()}


def score_truthfulqa(
    run_path: str | os.PathLike[str],
    items: Sequence[Item],
    *,
    judges: Sequence[Any] | None = None,
    out_path: str | os.PathLike[str] | None = None,
    attempts: int = ATTEMPTS,
    workers: int = 1,
    progress: bool = True,
    adapter: Any = None,
) -> dict[str, Any]:
    """Judge each result's answer with every judge LM (default: the context's LM).

    Results are matched to dataset items by id, else by question text. An item none of whose
    judges succeeded is written with an error (retried on resume), never with a score.
    """
    ok, failed = _run_records(run_path)
    out = Path(out_path) if out_path else sibling(run_path, ".truthfulqa.jsonl")
    by_id = {item.id: item for item in items}
    by_question = {" ".join(item.question.split()): item for item in items}
    judge = TruthfulnessJudge(judges, attempts=attempts)

    def work(record: dict[str, Any]) -> dict[str, Any]:
        question = " ".join(str(record.get("question") or "").split())
        item = by_id.get(str(record["id"]))
        if item is None or " ".join(item.question.split()) != question:
            item = by_question.get(question)
        line: dict[str, Any] = {"id": record["id"], "method": record.get("method"),
                                "question": record.get("question"), "judgments": None,
                                "score": None, "is_misconception": None, "usage": None,
                                "error": None}
        if item is None:
            line["error"] = "question not found in the TruthfulQA dataset"
            return line
        result = judge(item.question, record.get("answer") or "", item.correct_answers,
                       item.incorrect_answers)
        line.update(judgments=[j.model_dump(mode="json") for j in result.judgments],
                    score=result.score, is_misconception=result.is_misconception,
                    usage=result.usage.model_dump(mode="json"))
        if result.score is None:
            line["error"] = "every judge failed: " + "; ".join(
                f"{j.judge}: {j.error}" for j in result.judgments)
        return line

    lines = _score_loop(run_path, out, ok, work, workers=workers, progress=progress,
                        desc="truthfulqa", settings=_settings(None, adapter))
    names = [str(getattr(j, "model", None) or lm_name(None)) for j in judge.judges]
    summary = {**truthfulqa_summary(lines), "judges": names, "run_errors": len(failed),
               "cost": summarize_cost(ok).model_dump(), "run": str(run_path),
               "scores": str(out)}
    write_json(sibling(run_path, ".truthfulqa.summary.json"), summary)
    return summary
