"""Scoring a results file: FActScore against a knowledge source, or TruthfulQA's LLM judge.

`serc eval` reads `RUN.jsonl` and writes `RUN.factscore.jsonl` / `RUN.truthfulqa.jsonl` (one
line per item, through the same durable, resumable store as the run itself, `results`) and a
`RUN.<metric>.summary.json` next to it. Failed run records are not scored (counted as
`run_errors`); the method's cost is read from the run's traces, the evaluator's own calls are
counted apart. The metrics themselves live in `evaluation/metrics/`; this module only feeds
them results and writes what they say.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import dspy

from serc_dspy.core.errors import UserError
from serc_dspy.core.io import write_json
from serc_dspy.core.trace import Usage
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
from serc_dspy.evaluation.results import (
    JsonlStore,
    lm_name,
    process_items,
    progress_bar,
    read_results,
    sibling,
)
from serc_dspy.retrieval.knowledge import SCORING_TOP_K, KnowledgeSource
from serc_dspy.runtime.adapter import StrictJSONAdapter


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
    bar = progress_bar(len(todo_records), len(todo_records) - len(todo), desc, progress)
    try:
        with dspy.context(**settings):
            process_items(todo, work, store, workers=workers, bar=bar)
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
